"""What is traced, and that debugging does not change the program.

- dynamo's compiler never runs under a trace function, plain frames called
  from generated code are not traced, nothing is traced between compiled calls;
- stepping and evaluating expressions at stops leave dynamo's own counters
  (frames converted, graphs) and the program's output as in a plain run;
- the fallback path (no C callback) stops at the same places.
"""
from __future__ import annotations

import re
from pathlib import Path

from harness import MONITORING, ROOT, SAMPLES, GraphBreakCode, run_dyndbg, run_plain

PROGRAM = ROOT / "tests" / "programs" / "trace_scope.py"
STEPS = ["s", "s", "stack", "p x.sin()", "n", "n", "n", "display [v for v in __stack__]",
         "locals"] + ["s"] * 400


def test_stepping_changes_nothing(tmp_path: Path) -> None:
    plain = run_plain(PROGRAM)
    assert "traced during compile: False" in plain.stdout
    run = run_dyndbg(PROGRAM, STEPS, tmp_path)
    assert run.returncode == 0
    assert run.stdout == plain.stdout          # includes dynamo's frame and graph counters
    assert "helper frame traced: False" in run.stdout
    assert "trace between calls: False" in run.stdout
    assert run.transcript.count("\n> ") > 100  # really stepped, in several generated frames
    assert "inner [2/0]" in run.transcript and "torch_dynamo_resume_in_inner" in run.transcript


def _stop_lines(transcript: str) -> list[str]:
    # Graph names carry a random uuid: compare without it.
    return [re.sub(r"__compiled_fn_\w+", "__compiled_fn", line)
            for line in transcript.splitlines() if line.startswith("> ")]


def test_fallback_path_stops_at_the_same_places(tmp_path: Path, monkeypatch,
                                                graph_break_code: GraphBreakCode) -> None:
    # From graph 2's first input, through the graph call (and torch 2.15's profiler
    # template around it), into the resume function and the second call.
    first_input = graph_break_code.f.first("LOAD_FAST", "x")
    commands = [f"b {first_input.index}", "c", "stack"] + ["si"] * 150 + ["c"]   # si: a graph call is one instruction
    with_callback = run_dyndbg(SAMPLES / "graph_break.py", commands, tmp_path)
    monkeypatch.setenv("DYNDBG_NO_CALLBACK", "1")
    fallback = run_dyndbg(SAMPLES / "graph_break.py", commands, tmp_path)
    assert with_callback.stdout == fallback.stdout == run_plain(SAMPLES / "graph_break.py").stdout
    # settrace needs a global trace function without the callback; sys.monitoring does not.
    assert ("tracing globally" in fallback.transcript) == (not MONITORING)
    assert "tracing globally" not in with_callback.transcript
    stops = _stop_lines(with_callback.transcript)
    assert len(stops) > 150
    assert stops[1].startswith(f"> f [0/0]  instr {first_input.index}/"), stops[:2]
    assert any(stop.startswith("> torch_dynamo_resume_in_f_at_10 [1/0]  ") for stop in stops)
    # `s` stopped at each instruction f ran on its way to the resume function (past
    # graph 2's call and, on torch 2.15, the profiler template's jumps around it).
    in_f = []
    for stop in stops[1:]:
        match = re.match(r"^> f \[0/0\]  instr (\d+)/", stop)
        if match is None:
            break
        in_f.append(int(match.group(1)))
    f = graph_break_code.f
    assert in_f[-1] == f.find("CALL_FUNCTION_EX").index, in_f
    assert f.path_problem(in_f) is None, f.path_problem(in_f)
    assert stops == _stop_lines(fallback.transcript)


def test_breakpoints_after_continue_change_nothing(tmp_path: Path) -> None:
    # The line-event tracer and its conditions run inside generated frames:
    # dynamo must not compile them (that would shift the program's counters).
    line = next(i for i, text in enumerate(PROGRAM.read_text().splitlines(), 1)
                if "torch._dynamo.graph_break()" in text)
    commands = [f"b trace_scope.py:{line}, x.sum() < -1", "b helper", "b graph 2, False",
                "c", "c", "c"]
    run = run_dyndbg(PROGRAM, commands, tmp_path)
    assert run.stdout == run_plain(PROGRAM).stdout   # includes dynamo's frame counters
    assert "Warning" not in run.stderr and "Dynamo does not know" not in run.stderr
