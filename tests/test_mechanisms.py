"""The two tracing mechanisms of Python 3.12+ (sys.monitoring, the default, and
sys.settrace, forced with DYNDBG_TRACER=settrace) stop at the same places and
show the same things; when another tool holds sys.monitoring's debugger slot,
dyndbg says so in one line and traces with settrace."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from harness import ROOT, SAMPLES, run_dyndbg, run_plain
from transcript import no_traceback, stops_in

pytestmark = pytest.mark.skipif(not hasattr(sys, "monitoring"),
                                reason="sys.monitoring exists from Python 3.12 (3.11: settrace)")

# Instruction steps (si) over graph calls; `s` into a graph is compared below.
SESSIONS = {
    "nested_break": ["b resume", "c", "n", "n", "where", "up", "stack", "down", "r", "si",
                     "stack", "until", "si", "si", "locals", "c", "c"] + ["si"] * 40 + ["c"],
    "exception": ["catch exception", "c", "stack", "c", "b graph *", "c", "stack", "n", "c"],
    "graph_break": ["b graph_break.py:10", "tbreak __compiled_fn_*", "c", "c", "guards", "cache",
                    "si", "si", "n", "n", "stack", "c", "c"],
}


def _comparable(transcript: str) -> list[str]:
    """The transcript without what differs between runs (addresses, uuids),
    and without the "cache entry … runs" explanations: they need the frame's
    arguments from its start, which sys.monitoring (events per code object)
    records for more frames than settrace (which decides frame by frame)."""
    text = re.sub(r"0x[0-9a-f]+", "0x…", transcript)
    text = re.sub(r"(__compiled_fn_\d+)_\w+", r"\1", text)
    text = re.sub(r"___check_obj_id\([^)]*\)", "___check_obj_id(…)", text)
    return [line for line in text.splitlines() if not line.startswith("  cache entry [")]


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_settrace_and_monitoring_agree(name: str, tmp_path: Path) -> None:
    script = SAMPLES / f"{name}.py"
    monitoring = run_dyndbg(script, SESSIONS[name], tmp_path, env={"DYNDBG_TRACER": None})
    settrace = run_dyndbg(script, SESSIONS[name], tmp_path, env={"DYNDBG_TRACER": "settrace"})
    plain = run_plain(script)
    for run in (monitoring, settrace):
        no_traceback(run)
        assert (run.stdout, run.returncode) == (plain.stdout, plain.returncode)
    assert monitoring.transcript.count("\n> ") >= 2, monitoring.transcript
    assert _comparable(monitoring.transcript) == _comparable(settrace.transcript)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_settrace_and_monitoring_step_into_a_graph_alike(backend: str, tmp_path: Path) -> None:
    """`s` at a graph's call enters it on both mechanisms (issue 50): the
    same node stops, values and return to the generated code. aot_eager's
    GraphModule is lazy: its code is found as it starts."""
    script = ROOT / "tests" / "programs" / "into_graph.py"
    commands = ["b __compiled_fn_*", "c", "s", "s", "s", "locals", "where", "s", "r", "c"]
    runs = {tracer: run_dyndbg([script, backend], commands, tmp_path,
                               env={"DYNDBG_TRACER": value})
            for tracer, value in (("monitoring", None), ("settrace", "settrace"))}
    plain = run_plain(script, backend)
    for run in runs.values():
        no_traceback(run)
        assert (run.stdout, run.returncode) == (plain.stdout, plain.returncode)
    transcript = runs["monitoring"].transcript
    assert transcript.count(f"\n[graph 1 {backend} forward] node ") == 4, transcript[-3000:]
    assert _comparable(transcript) == _comparable(runs["settrace"].transcript)


HOLDER = r'''
import sys, torch, dyndbg
sys.monitoring.use_tool_id(sys.monitoring.DEBUGGER_ID, "another debugger")

@torch.compile(backend="eager")
def f(x):
    return x * 2 + 1

with dyndbg.debug(commands=["stack", "s", "s", "c"]):
    print("result", f(torch.ones(2)).tolist())
'''


def test_debugger_slot_taken_falls_back_to_settrace(tmp_path: Path) -> None:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    run = run_plain(script, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert "result [3.0, 3.0]" in run.stdout
    lines = run.stdout.splitlines()
    said = [l for l in lines if "debugger slot" in l]
    assert said == ["dyndbg: sys.monitoring's debugger slot is held by 'another debugger'; "
                    "tracing with sys.settrace instead (slower)"], run.stdout
    assert run.stdout.count("\n> f [0/0]  instr ") == 3, run.stdout   # stepping works


def test_next_from_a_breakpoint_on_a_return_stops_in_the_caller(tmp_path: Path) -> None:
    # A new frame reaching a breakpoint on its return instruction after
    # `continue` must be seen returning (with sys.monitoring: PY_RETURN on
    # before the return runs): `n` there stops in the caller, inner [1/0].
    script = SAMPLES / "nested_break.py"
    first = run_dyndbg(script, ["b resume", "c", "q"], tmp_path)
    resume = stops_in(first.transcript.splitlines())[-1]        # resume_in_inner, call 0
    last = int(re.search(r"instr \d+/(\d+) ", resume["line"]).group(1)) - 1
    commands = ["b resume", "c", "clear", f"b {last}", "c", "c", "n", "n", "c"]
    runs = {tracer: run_dyndbg(script, commands, tmp_path, env={"DYNDBG_TRACER": value})
            for tracer, value in (("monitoring", None), ("settrace", "settrace"))}
    for run in runs.values():
        no_traceback(run)
    assert _comparable(runs["monitoring"].transcript) == _comparable(runs["settrace"].transcript)
    stops = stops_in(runs["monitoring"].transcript.splitlines())
    assert [s["label"].split(" [")[0] for s in stops][-4:] == [
        "torch_dynamo_resume_in_inner_at_10", "torch_dynamo_resume_in_inner_at_10",
        "inner", "outer"], stops
    assert "RETURN" in stops[-3]["line"], stops[-3]    # call 1's frame, at its return


def test_a_breakpoint_stops_in_a_resume_function_dynamo_did_not_compile(tmp_path: Path) -> None:
    # Dynamo leaves g's resume function as it is (a graph break in a loop); it
    # runs without torch's callback, and on 3.12 g calls it with
    # CALL_FUNCTION_EX, which gives sys.monitoring no CALL event: the call
    # must be seen at that instruction, even after `continue`, at each call.
    loop = (ROOT / "tests" / "programs" / "line_step_loop.py").read_text()
    call = "print(g(torch.zeros(2)).tolist())\n"
    assert loop.endswith(call)
    script = tmp_path / "twice.py"
    script.write_text(loop + call)
    commands = ["b torch_dynamo_resume_in_*", "c", "stack", "c", "c"]
    runs = {tracer: run_dyndbg(script, commands, tmp_path, env={"DYNDBG_TRACER": value})
            for tracer, value in (("monitoring", None), ("settrace", "settrace"))}
    plain = run_plain(script)
    for run in runs.values():
        no_traceback(run)
        assert (run.stdout, run.returncode) == (plain.stdout, plain.returncode)
    stops = stops_in(runs["monitoring"].transcript.splitlines())
    resume = "torch_dynamo_resume_in_g_at_13 [not compiled]"
    assert [s["label"] for s in stops] == ["g [0/0]", resume, resume]
    assert "Breakpoint 1 at torch_dynamo_resume_in_*, hit 2" in runs["monitoring"].transcript
    assert _comparable(runs["monitoring"].transcript) == _comparable(runs["settrace"].transcript)
