"""`record on` and `trace on` change what dyndbg keeps and shows, never
where the program stops (issue 23, items 1 and 6): the same exception stops
with each of them as without, and none is added. --post-mortem keeps its
own promise: after `continue` the uncaught exception opens post mortem at
the program's end, without a live stop on its way out."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import ROOT, run_dyndbg, run_plain
from transcript import no_traceback

PROGRAMS = ROOT / "tests" / "programs"
RAISES = PROGRAMS / "raise_in_frame.py"
# The exception stop in the frame that stopped first: the validator's call.
EXCEPTION_STOP = re.compile(r"^!! raised at instr \d+ @\d+ CALL in f \[0/0\]; "
                            r"'c' lets it propagate$", re.M)


@pytest.mark.parametrize("options", [[], ["--record"], ["--trace"], ["--record", "--trace"]],
                         ids=lambda o: " ".join(o) or "none")
def test_an_exception_in_a_stopped_frame_stops_whatever_is_kept(
        tmp_path: Path, options: list[str]) -> None:
    # From the first stop, `c` stops where the frame's own call raises.
    run = run_dyndbg(RAISES, ["c", "stack", "c"], tmp_path, options=options)
    no_traceback(run)
    assert len(EXCEPTION_STOP.findall(run.transcript)) == 1, run.transcript
    assert (run.stdout, run.returncode) == (run_plain(RAISES).stdout, 0), run.stderr
    stack = run.transcript.split("(dyndbg) stack\n", 1)[1]
    if options:
        # Recorded, or traced: the failing call's operands are known.
        assert re.match(r"value stack, depth \d+, bottom to top \(.*before the failing "
                        r"instruction\):\n(.*\n)*? +\d+  function +<function validate ", stack), stack
    else:
        assert "not recorded before the failing instruction" in stack.splitlines()[0], stack


def test_back_at_the_exception_stop_shows_the_failing_call(tmp_path: Path) -> None:
    run = run_dyndbg(RAISES, ["c", "back", "c"], tmp_path, options=["--record"])
    no_traceback(run)
    after = EXCEPTION_STOP.split(run.transcript, 1)[1]
    assert re.search(r"^\[recorded, 1 instruction before now\]\n> f \[0/0\]  instr \d+/\d+ "
                     r"@\d+  CALL ", after, re.M), after


@pytest.mark.parametrize("options", [["--trace"], ["--record"], ["--post-mortem"]])
def test_no_stop_is_added_after_continue(tmp_path: Path, options: list[str]) -> None:
    # exception_user.py raises (and catches) in frames that never stopped:
    # with `-c c` dyndbg stops nowhere, so the next command line is not eaten.
    program = ROOT / "tests" / "corpus" / "exception_user.py"
    run = run_dyndbg(program, ["p 'still the first stop'"], tmp_path,
                     options=[*options, "-c", "c"])
    no_traceback(run)
    assert "!!" not in run.transcript, run.transcript
    assert (run.stdout, run.returncode) == (run_plain(program).stdout, 0), run.stderr


def test_post_mortem_waits_for_the_exception_to_end_the_program(tmp_path: Path) -> None:
    # Caught by the program, the exception ends nothing: no stop at all.
    run = run_dyndbg(RAISES, ["c"], tmp_path, options=["--post-mortem", "--record"])
    no_traceback(run)
    assert "!!" not in run.transcript, run.transcript
    assert (run.stdout, run.returncode) == (run_plain(RAISES).stdout, 0), run.stderr
