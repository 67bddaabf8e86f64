"""Where dyndbg traces (functional, not timing): after `continue` nothing runs
traced unless a stop is possible there, and breakpoints still stop after any
number of untraced calls, on the C-callback path and on the fallback path.
Event counts are by kind (instruction, line, start, return, exception, call),
whichever mechanism delivered them (sys.settrace, or sys.monitoring on 3.12+)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import warm_start
from harness import MONITORING, ROOT, empty_home, run_dyndbg, run_plain

MANY = ROOT / "tests" / "programs" / "many_calls.py"

DRIVER = r'''
import io, json, os, runpy, sys
sys.argv = [sys.argv[1]]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as `python SCRIPT` sets it
from dyndbg.attach import attach
out = io.StringIO()
engine = attach(out, COMMANDS)
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    sys.settrace(None)
    print("EVENTS " + json.dumps(dict(engine.tracer.events)))
    print("MODULES " + json.dumps({m: m in sys.modules for m in ("prompt_toolkit", "pygments")}))
    print("TRANSCRIPT " + json.dumps(out.getvalue()))
'''


def drive(script: Path, commands: list[str], tmp_path: Path, fallback: bool = False) -> dict:
    """Run `script` in-process under attach() and report the engine's event counts."""
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.replace("COMMANDS", repr(commands)))
    env = {"PYTHONPATH": str(ROOT), "NO_COLOR": "1", "PATH": "/usr/bin:/bin", "HOME": empty_home()}
    if fallback:
        env["DYNDBG_NO_CALLBACK"] = "1"
    proc = warm_start.run([sys.executable, str(driver), str(script)], capture_output=True,
                          text=True, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, timeout=240)
    result = {"stdout": proc.stdout, "returncode": proc.returncode}
    for line in proc.stdout.splitlines():
        for key in ("EVENTS", "MODULES", "TRANSCRIPT"):
            if line.startswith(key + " "):
                result[key.lower()] = json.loads(line[len(key) + 1:])
    assert "events" in result, proc.stdout + proc.stderr
    return result


def test_continue_without_breakpoints_sends_no_opcode_event(tmp_path: Path) -> None:
    result = drive(MANY, ["continue"], tmp_path)
    # One instruction event: the first stop itself, before `continue`.
    assert result["events"].get("instruction", 0) == 1, result["events"]
    assert result["events"].get("line", 0) == 0, result["events"]
    assert "calls with a trace function installed: 0" in result["stdout"]
    # Scripted use never loads the terminal front end.
    assert result["modules"] == {"prompt_toolkit": False, "pygments": False}


def test_breakpoint_on_other_code_leaves_the_loop_untraced(tmp_path: Path) -> None:
    result = drive(MANY, ["b late", "continue"], tmp_path)
    assert "calls with a trace function installed: 0" in result["stdout"]
    assert "Breakpoint 1 at late, hit 1" in result["transcript"]
    assert result["events"].get("instruction", 0) <= 3, result["events"]


@pytest.mark.parametrize("fallback", [False, True], ids=["callback", "fallback"])
def test_breakpoints_stop_after_hundreds_of_untraced_calls(tmp_path: Path, fallback: bool,
                                                            monkeypatch) -> None:
    if fallback:
        monkeypatch.setenv("DYNDBG_NO_CALLBACK", "1")
    # `late` is compiled after 300 untraced calls of f; at its stop, a new
    # breakpoint on f must arm f's code, which has run untraced all along.
    run = run_dyndbg(MANY, ["b late", "c", "b f", "c", "c", "c", "c"], tmp_path)
    # Without the callback, settrace needs a global trace function all along;
    # sys.monitoring's events are per code object and need none.
    global_trace = fallback and not MONITORING
    assert run.stdout == run_plain(MANY).stdout.replace(
        "installed: 0", "installed: 300" if global_trace else "installed: 0")
    stops = [line for line in run.transcript.splitlines()
             if line.startswith("Breakpoint") and ", hit " in line]
    assert stops[0] == "Breakpoint 1 at late, hit 1"
    assert stops[1:] == [f"Breakpoint 2 at f, hit {n}" for n in (1, 2, 3)]


def test_conditional_breakpoint_in_the_loop_is_checked_every_call(tmp_path: Path) -> None:
    line = next(i for i, text in enumerate(MANY.read_text().splitlines(), 1)
                if "graph_break()" in text)
    result = drive(MANY, [f"b many_calls.py:{line}, x.sum() < 0", "continue"], tmp_path)
    events = result["events"]
    if MONITORING:
        # INSTRUCTION events: every instruction of the armed code once (each
        # answers DISABLE; a compile re-instruments the code and turns them on
        # once more), then only the armed one, on every call. Without DISABLE:
        # over 40,000 (about 150 instructions a call).
        assert 300 <= events.get("instruction", 0) <= 2000, events
        assert events.get("line", 0) == 0, events
    else:
        # A line breakpoint reached by a line event: no opcode events needed.
        assert events.get("line", 0) >= 300          # checked on every call
        assert events.get("instruction", 0) <= 5, events  # not instruction by instruction
    assert "Breakpoint 1" not in result["transcript"].split("(dyndbg) continue", 1)[1]
    assert "done:" in result["stdout"]


def test_line_breakpoint_stops_once_per_execution_of_the_line(tmp_path: Path) -> None:
    # Line 12 (`torch._dynamo.graph_break()`) runs once per call of f: in f's
    # code up to the break, then in its resume function, which starts there.
    # torch 2.15 wraps the resume function's graph call in an `if`-template on
    # that line: its jump joins must not be stops of their own.
    run = run_dyndbg(MANY, ["b many_calls.py:12"] + ["c"] * 4 + ["q"], tmp_path)
    lines = run.transcript.splitlines()
    hits = [line.split(", hit ")[1] for line in lines
            if line.startswith("Breakpoint 1 at") and ", hit " in line]
    assert hits == ["1", "2", "3", "4"], run.transcript
    where = [line.split("  ")[:3] for line in lines if line.startswith("> ")][1:]
    assert where[0][0] == "> f [0/0]" and where[1][0].startswith("> torch_dynamo_resume_in_f")
    assert where[1][1].startswith("instr 1/"), where     # the resume function's entry
    assert where[2:] == where[:2], where                 # the next call: the same two places
