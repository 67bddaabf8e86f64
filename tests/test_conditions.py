"""Breakpoint conditions as the compiled core evaluates them (a false one
only counts the hit, without the engine's Python code) and as the Python
core does: the same hits, each condition evaluated once a hit, a true one
stops, one that raises stops with its message, one changed at a stop is
the one evaluated next."""
from __future__ import annotations

import re
from pathlib import Path

from harness import ROOT, run_dyndbg

PROGRAM = ROOT / "tests" / "programs" / "condition_count.py"
LINE = next(i for i, text in enumerate(PROGRAM.read_text().splitlines(), 1)
            if "the breakpoint's line" in text)


def test_each_hit_evaluates_the_condition_once(tmp_path: Path) -> None:
    """The line resolves in f and in its resume function: false at both in
    calls 0-2, true at f in call 3. One stop, seven hits, seven evaluations
    (the program's own count: none is done twice, by the compiled core and
    again by the engine); disabled there, no more."""
    run = run_dyndbg(PROGRAM, [f"b {PROGRAM.name}:{LINE}, seen() or k == 3", "c",
                               "p k, len(evaluations)", "b", "disable 1", "c"], tmp_path)
    assert "(3, 7)" in run.transcript, run.transcript[-3000:]
    assert len(re.findall(r"(?m)^Breakpoint 1 at .*, hit \d+$", run.transcript)) == 1, \
        run.transcript[-3000:]
    listing = run.transcript.split("(dyndbg) b\n", 1)[1].split("(dyndbg)", 1)[0]
    assert "hit 7 times" in listing and re.search(r"f \[0/0\]  hit 4 times", listing) and \
        re.search(r"resume_in_f_at_\d+ \[1/0\]  hit 3 times", listing), listing
    assert "evaluations 7" in run.stdout, run.stdout


def test_a_condition_that_raises_stops_once_with_its_message(tmp_path: Path) -> None:
    run = run_dyndbg(PROGRAM, [f"b {PROGRAM.name}:{LINE}, 1 / 0", "c", "p k", "c", "c",
                               "p k", "clear 1", "c"], tmp_path)
    errors = re.findall(r"\*\*\* Error in condition of breakpoint 1 \(ZeroDivisionError: "
                        r"division by zero\); stopping", run.transcript)
    assert len(errors) == 3, run.transcript[-3000:]
    printed = re.findall(r"\(dyndbg\) p k\n(\d+)\n", run.transcript)
    assert printed == ["0", "1"], run.transcript[-3000:]
    assert "Traceback" not in run.transcript + run.stderr


def test_a_condition_changed_at_a_stop_is_the_one_evaluated(tmp_path: Path) -> None:
    """Stopped by the first condition at the second call, the condition is
    changed there: the next stop is where the new one is true."""
    run = run_dyndbg(PROGRAM, [f"b {PROGRAM.name}:{LINE}, k == 1", "c", "p k",
                               "condition 1 k == 4", "c", "p k", "clear 1", "c"], tmp_path)
    printed = re.findall(r"\(dyndbg\) p k\n(\d+)\n", run.transcript)
    assert printed == ["1", "4"], run.transcript[-3000:]
    assert "evaluations 0" in run.stdout
