"""Stops that change how the stopped frame is traced: a breakpoint added at a
stop reached after `continue`, `next` after a breakpoint reached by a line
event, and the stack of a caller suspended in the call of a resume function.
"""
from __future__ import annotations

import re

from harness import CALLABLE_SLOT, SAMPLES, run_dyndbg
from transcript import no_traceback

SAMPLE = SAMPLES / "walkthrough.py"


def _stops(transcript: str) -> list[str]:
    return [line for line in transcript.splitlines() if re.match(r"> \S", line)]


def test_breakpoint_added_in_the_stopped_frame_after_continue_stops(tmp_path) -> None:
    run = run_dyndbg(SAMPLE, ["b resume", "c", "b graph 5", "c", "c"], tmp_path)
    no_traceback(run)
    assert "Breakpoint 2 at graph 5, hit 1" in run.transcript, run.transcript
    stops = _stops(run.transcript)
    assert len(stops) == 3, stops
    assert stops[2].startswith("> torch_dynamo_resume_in_step_at_29 [1/0]") and "CALL" in stops[2]


def test_next_after_a_breakpoint_reached_by_a_line_event_advances(tmp_path) -> None:
    run = run_dyndbg(SAMPLE, ["b resume", "c", "n", "n", "c"], tmp_path)
    no_traceback(run)
    indexes = [int(re.search(r"instr (\d+)/", s).group(1)) for s in _stops(run.transcript)[1:]]
    assert indexes == [1, 2, 3], run.transcript
    assert "hit 2" not in run.transcript


def test_caller_suspended_in_the_resume_call_shows_its_stack(tmp_path) -> None:
    run = run_dyndbg(SAMPLE, ["b resume", "c", "u", "stack", "c"], tmp_path)
    no_traceback(run)
    text = run.transcript
    assert "value stack, depth 2, bottom to top (what the frame holds while suspended" in text
    assert re.search(rf"{CALLABLE_SLOT}  function +<function torch_dynamo_resume_in_step_at_29",
                     text), text
