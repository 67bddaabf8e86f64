"""User values and expressions that fight the debugger: a repr that raises,
is huge or hangs; conditions that raise or return non-bools; displays that
raise. One message each, nothing crashes, the program's output is unchanged."""
from __future__ import annotations

from harness import ROOT, SAMPLES, plain, run_dyndbg, run_plain

HOSTILE = ROOT / "tests" / "programs" / "hostile_values.py"


def test_reprs_that_raise_are_huge_or_hang(tmp_path) -> None:
    run = run_dyndbg(HOSTILE, ["locals", "display raises", "display huge", "n", "stack", "c"],
                     tmp_path)
    assert run.stdout == run_plain(HOSTILE).stdout and run.returncode == 0
    text = run.transcript
    assert "<repr failed: RuntimeError: no repr for you>" in text
    assert "… (1000000 chars)" in text
    assert "<repr of Hangs took over 2 s>" in text
    assert max(len(line) for line in text.splitlines()) < 400   # nothing printed whole
    assert "Traceback" not in text + run.stderr


def test_conditions_that_raise_or_are_not_bools_count_as_hit(tmp_path) -> None:
    commands = ["b f, 1/0", "b f, torch.ones(3) > 0", "b f, 'a string'", "b f, None",
                "display 1/0", "c", "c", "c"]
    run = run_dyndbg(SAMPLES / "graph_break.py", commands, tmp_path)
    assert run.stdout == plain("graph_break.py").stdout and run.returncode == 0
    text = run.transcript
    # At f's second call: the raising condition and the ambiguous tensor stop
    # with one message each; the string is true; None is false.
    assert "*** Error in condition of breakpoint 1 (ZeroDivisionError: division by zero); " \
        "stopping" in text
    assert "*** Error in condition of breakpoint 2 (RuntimeError: Boolean value of Tensor" in text
    hits = [line for line in text.splitlines() if line.startswith("Breakpoint ")
            and ", hit " in line]
    assert hits == ["Breakpoint 1 at f, hit 1", "Breakpoint 2 at f, hit 1",
                    "Breakpoint 3 at f, hit 1"]
    assert "1: 1/0 = <ZeroDivisionError: division by zero>" in text
    assert "Traceback" not in text + run.stderr
