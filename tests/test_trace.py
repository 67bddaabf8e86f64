"""`trace on` / --trace: every generated instruction that runs, printed before
it runs, checked against the listings of the code that ran; frame starts and
returns; the last line before a hard crash names the culprit."""
from __future__ import annotations

import re
import signal
from pathlib import Path

from conftest import ROOT, SAMPLES, run_dyndbg, run_plain
from transcript import no_traceback

PROGRAMS = ROOT / "tests" / "programs"
TRACE_INSTR = re.compile(r"^trace (\S+ \[\d+/\d+\])  instr (\d+)/(\d+) @(\d+)  (.*)$")
# `->` marks the current instruction, `B1` a breakpoint's, `>>` a jump target.
LISTING = re.compile(r"^(?:->)?\s+(\d+) @(\d+)\s+(?:B\d+\s+)?(?:>>)?\s*(.*?)\s*$")


def _listing(transcript: str) -> dict[int, tuple[int, str]]:
    """`ll`'s lines: index -> (offset, 'OPNAME argument' with single spaces)."""
    lines = {}
    for line in transcript.splitlines():
        m = LISTING.match(line)
        if m and not line.startswith("trace "):
            lines[int(m.group(1))] = (int(m.group(2)), " ".join(m.group(3).split()))
    return lines


def test_trace_prints_every_instruction_that_runs_as_the_listing_shows_it(tmp_path: Path) -> None:
    script = SAMPLES / "graph_break.py"
    traced = run_dyndbg(script, [], tmp_path, options=["--trace", "-c", "c"])
    no_traceback(traced)
    assert traced.stdout == run_plain(script).stdout
    # The listings of both code objects, from a session that stops in each.
    listed = run_dyndbg(script, ["ll", "b torch_dynamo_resume_in_*", "c", "ll", "c", "c"],
                        tmp_path)
    parts = listed.transcript.split("Breakpoint 1 at torch_dynamo_resume_in_*, hit 1")
    listings = {"f [0/0]": _listing(parts[0]),
                "torch_dynamo_resume_in_f_at_10 [1/0]": _listing(parts[1])}
    lines = traced.transcript.splitlines()
    seen: dict[str, list[int]] = {}
    for line in lines:
        m = TRACE_INSTR.match(line)
        if m is None:
            continue
        label, index, total, offset, text = m.groups()
        assert int(total) == len(listings[label]), line
        assert (int(offset), " ".join(text.split())) == listings[label][int(index)], line
        seen.setdefault(label, []).append(int(index))
    # Straight-line code, run twice: f up to its call of the resume function,
    # all of the resume function, then f's return, in order.
    f, resume = listings["f [0/0]"], listings["torch_dynamo_resume_in_f_at_10 [1/0]"]
    call_index = max(i for i, (_, text) in f.items() if text.startswith("CALL_FUNCTION_EX"))
    assert seen["f [0/0]"] == (list(range(1, call_index + 1)) + [call_index + 1]) * 2
    assert seen["torch_dynamo_resume_in_f_at_10 [1/0]"] == list(range(1, len(resume))) * 2   # 0: RESUME
    # Starts and returns, each frame's return value summarised, in call order.
    frames = [line for line in lines if line.startswith("trace ") and "  instr " not in line]
    assert frames == [
        "trace f [0/0]  starts",
        "trace torch_dynamo_resume_in_f_at_10 [1/0]  starts",
        "trace torch_dynamo_resume_in_f_at_10 [1/0]  returns Tensor f32[] cpu [11.92]",
        "trace f [0/0]  returns Tensor f32[] cpu [11.92]"] * 2


def test_the_last_trace_line_before_a_hard_crash_names_the_culprit(tmp_path: Path) -> None:
    run = run_dyndbg(PROGRAMS / "aborts.py", [], tmp_path, options=["--trace", "-c", "c"])
    assert run.returncode == -signal.SIGABRT, run.stderr
    assert run.stdout == "calling\n"
    last = [line for line in run.transcript.splitlines() if line.startswith("trace ")][-1]
    assert re.fullmatch(r"trace f \[0/0\]  instr \d+/\d+ @\d+  CALL\S*\s+\d+", last), last
