"""`trace on` / --trace: every generated instruction that runs, printed before
it runs, checked against the listings of the code that ran; frame starts and
returns; the last line before a hard crash names the culprit."""
from __future__ import annotations

import re
import signal
from pathlib import Path

from harness import ROOT, SAMPLES, GraphBreakCode, run_dyndbg, run_plain
from transcript import no_traceback

PROGRAMS = ROOT / "tests" / "programs"
TRACE_INSTR = re.compile(r"^trace (\S+ \[\d+/\d+\])  instr (\d+)/(\d+) @(\d+)  (.*)$")
TRACE_FRAME = re.compile(r"^trace (\S+ \[\d+/\d+\])  (starts|returns .*|left by an exception)$")
RESUME = "torch_dynamo_resume_in_f_at_10 [1/0]"


def _runs(lines: list[str]) -> list[tuple[str, list[int], list[tuple[int, str]]]]:
    """Each frame's run, in the order they ended: (label, the indexes traced in it,
    (index traced last before it, label) for each frame it started)."""
    active: list[tuple[str, list[int], list[tuple[int, str]]]] = []
    ended = []
    for line in lines:
        frame = TRACE_FRAME.match(line)
        if frame and frame.group(2) == "starts":
            if active:
                caller = active[-1]
                caller[2].append((caller[1][-1] if caller[1] else -1, frame.group(1)))
            active.append((frame.group(1), [], []))
        elif frame:
            assert active and active[-1][0] == frame.group(1), (line, active)
            ended.append(active.pop())
        elif (m := TRACE_INSTR.match(line)):
            assert active and active[-1][0] == m.group(1), (line, [a[0] for a in active])
            active[-1][1].append(int(m.group(2)))
    assert not active, active
    return ended


def test_trace_prints_every_instruction_that_runs_as_the_listing_shows_it(
        tmp_path: Path, graph_break_code: GraphBreakCode) -> None:
    script = SAMPLES / "graph_break.py"
    traced = run_dyndbg(script, [], tmp_path, options=["--trace", "-c", "c"])
    no_traceback(traced)
    assert traced.stdout == run_plain(script).stdout
    listings = {"f [0/0]": graph_break_code.f, RESUME: graph_break_code.resume}
    lines = traced.transcript.splitlines()
    for line in lines:
        m = TRACE_INSTR.match(line)
        if m is None:
            continue
        label, index, total, offset, text = m.groups()
        listed = listings[label].at(int(index))
        assert int(total) == len(listings[label]), line
        assert (int(offset), " ".join(text.split())) == \
            (listed.offset, " ".join(f"{listed.opname} {listed.arg}".split())), (line, listed)
    # Each call of f (two) runs f from its first instruction (0 is RESUME) to its
    # return, with nothing left out: each instruction traced follows the one before
    # in the code's control flow (torch 2.15 branches around the graph calls: the
    # profiler is off, so its `if`s are skipped, and the trace must show the jumps).
    # The resume function starts right after f's CALL_FUNCTION_EX and runs whole.
    f, resume = listings["f [0/0]"], listings[RESUME]
    call = f.find("CALL_FUNCTION_EX")
    runs = _runs(lines)
    assert [label for label, _, _ in runs] == [RESUME, "f [0/0]"] * 2, runs
    for label, indexes, started in runs:
        code = listings[label]
        assert code.at(0).opname == "RESUME" and indexes[0] == 1, (label, indexes[:3])
        assert code.at(indexes[-1]).opname == "RETURN_VALUE", (label, indexes[-3:])
        assert code.path_problem(indexes) is None, (label, code.path_problem(indexes), indexes)
        assert started == ([(call.index, RESUME)] if label == "f [0/0]" else []), (label, started)
    assert runs[0][1] == runs[2][1] and runs[1][1] == runs[3][1], "the two calls ran differently"
    # Starts and returns, each frame's return value summarised, in call order.
    frames = [line for line in lines if line.startswith("trace ") and "  instr " not in line]
    assert frames == [
        "trace f [0/0]  starts",
        f"trace {RESUME}  starts",
        f"trace {RESUME}  returns Tensor f32[] cpu [11.92]",
        "trace f [0/0]  returns Tensor f32[] cpu [11.92]"] * 2


def test_the_last_trace_line_before_a_hard_crash_names_the_culprit(tmp_path: Path) -> None:
    run = run_dyndbg(PROGRAMS / "aborts.py", [], tmp_path, options=["--trace", "-c", "c"])
    assert run.returncode == -signal.SIGABRT, run.stderr
    assert run.stdout == "calling\n"
    last = [line for line in run.transcript.splitlines() if line.startswith("trace ")][-1]
    assert re.fullmatch(r"trace f \[0/0\]  instr \d+/\d+ @\d+  CALL\S*\s+\d+", last), last
