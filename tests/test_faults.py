"""Faults: an internal error detaches dyndbg and the program goes on; Ctrl-C
while running, at the prompt; exits from inside compiled code; a closed
stdout; and no frame or memory kept after 10,000 calls."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

import warm_start
from harness import (MONITORING, OWN_CODE, ROOT, SAMPLES, default_sigint, empty_home, plain,
                      run_dyndbg, run_plain)

PROGRAMS = ROOT / "tests" / "programs"


@pytest.mark.parametrize("place", ["opcode", "render", "callback", "hook"])
def test_internal_error_detaches_and_the_program_continues(place, tmp_path,
                                                           monkeypatch) -> None:
    monkeypatch.setenv("DYNDBG_FAULT", place)
    if place == "callback" and MONITORING:
        # torch's C callback is the settrace path's; sys.monitoring does not hook it.
        monkeypatch.setenv("DYNDBG_TRACER", "settrace")
    run = run_dyndbg(SAMPLES / "graph_break.py", ["s", "s", "c"], tmp_path)
    reference = plain("graph_break.py")
    assert run.stdout == reference.stdout and run.returncode == 0
    assert run.transcript.count("*** dyndbg internal error") == 1
    assert f"injected fault at {place}" in run.transcript
    assert "Traceback" not in run.stderr + run.transcript



@pytest.fixture
def start() -> Iterator[Callable[[list[str], Path], subprocess.Popen]]:
    """Starts `python -m dyndbg --out TRANSCRIPT ARGV...`; kills what a failed
    test left running (some programs loop until told to stop)."""
    started: list[subprocess.Popen] = []

    def _start(argv: list[str], transcript: Path) -> subprocess.Popen:
        proc = warm_start.Popen([sys.executable, "-m", "dyndbg", "--out", str(transcript), *argv],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                env=dict(os.environ, HOME=empty_home()),
                                preexec_fn=default_sigint)
        started.append(proc)
        return proc

    yield _start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _wait_for(path: Path, pattern: str, timeout: float = 120) -> str:
    """The transcript once it matches the regular expression `pattern`."""
    deadline = time.time() + timeout
    while True:
        content = path.read_text() if path.exists() else ""
        if re.search(pattern, content):
            return content
        assert time.time() < deadline, f"never saw {pattern!r}:\n{content}"
        time.sleep(0.1)


AGAIN = "dyndbg: interrupted; stopping at the next generated instruction " \
    "(Ctrl-C again to interrupt the program)"


def test_ctrl_c_in_generated_code_stops_there(tmp_path: Path, start) -> None:
    transcript = tmp_path / "t.txt"
    proc = start([str(PROGRAMS / "interrupt_loop.py"), "3", "0"], transcript)
    proc.stdin.write("c\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "compiled loop\n"
    time.sleep(1.0)          # into the loop (a Ctrl-C outside it would stop too)
    proc.send_signal(signal.SIGINT)
    _wait_for(transcript, re.escape(AGAIN))
    out, err = proc.communicate("stack\nc\n", timeout=120)
    text = transcript.read_text()
    assert proc.returncode == 0, err
    assert AGAIN in text
    after = text.split("interrupted", 1)[1]
    assert after.lstrip("; a-z\n").startswith("> ") or "\n> " in after  # a stop follows
    assert "value stack" in after
    assert out.startswith("plain part") and "done" in out and "Traceback" not in err


def test_ctrl_c_outside_generated_code_stops_at_the_next_generated_instruction(
        tmp_path: Path, start) -> None:
    # As in pdb: a Ctrl-C in the plain code between compiled calls stops the
    # program at the next instruction of generated code that runs.
    transcript = tmp_path / "t.txt"
    proc = start([str(PROGRAMS / "interrupt_between.py")], transcript)
    proc.stdin.write("c\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "looping\n"
    proc.send_signal(signal.SIGINT)
    # The landing place is named, then the stop. It is wherever the signal
    # arrived: mostly the loop, but an audit hook in Python (filelock's, seen
    # on 3.14, runs at every time.sleep) is plain code too.
    _wait_for(transcript, re.escape(AGAIN) + r"\nStopped at the first generated code "
              r"since Ctrl-C at \S+\.py:\d+\n> f \[0/0\]  instr 1/")
    out, err = proc.communicate("globals()['running'] = False\nc\n", timeout=120)
    assert (proc.returncode, out) == (0, "done\n"), err
    assert "Traceback" not in err + transcript.read_text()


def test_ctrl_c_twice_outside_generated_code_is_a_keyboard_interrupt(tmp_path: Path,
                                                                     start) -> None:
    # The second Ctrl-C before the stop comes (the program runs no generated
    # code any more) is the program's KeyboardInterrupt, as python's first.
    argv = [str(PROGRAMS / "interrupt_loop.py"), "0.5", "60"]
    plain = warm_start.Popen([sys.executable, *argv], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             preexec_fn=default_sigint)
    transcript = tmp_path / "t.txt"
    debugged = start(argv, transcript)
    debugged.stdin.write("c\n")
    debugged.stdin.flush()
    for proc in (plain, debugged):
        while proc.stdout.readline() != "plain part\n":
            pass
    plain.send_signal(signal.SIGINT)
    debugged.send_signal(signal.SIGINT)
    _wait_for(transcript, re.escape(AGAIN))
    assert debugged.poll() is None       # the first one only asked for a stop
    debugged.send_signal(signal.SIGINT)
    results = []
    for proc in (plain, debugged):
        out, err = proc.communicate(timeout=60)
        results.append((proc.returncode, err.strip().splitlines()[-1]))
    assert results[0] == results[1] == (-signal.SIGINT, "KeyboardInterrupt")


def test_ctrl_c_at_the_prompt_keeps_the_session(tmp_path: Path, start) -> None:
    transcript = tmp_path / "t.txt"
    proc = start([str(SAMPLES / "graph_break.py")], transcript)
    _wait_for(transcript, "\n> ")      # the first stop
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    out, err = proc.communicate("p 6*7\nc\n", timeout=120)
    assert proc.returncode == 0, err
    assert "42" in transcript.read_text()
    assert out == run_plain(SAMPLES / "graph_break.py").stdout


def test_ctrl_c_in_a_command_ends_the_command_alone(tmp_path: Path, start) -> None:
    # As pdb's --KeyboardInterrupt--: a Ctrl-C while a command runs (or while a
    # stop is printed) ends that, and the prompt comes back; it never reaches
    # the program (CI saw one land while the stop printed and kill the program).
    transcript = tmp_path / "t.txt"
    proc = start([str(SAMPLES / "graph_break.py")], transcript)
    _wait_for(transcript, "\n> ")
    proc.stdin.write("p [print('spinning', flush=True), __import__('time').sleep(60)]\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "spinning\n"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate("p 6*7\nc\n", timeout=120)
    assert proc.returncode == 0, err
    text = transcript.read_text()
    assert "--KeyboardInterrupt--" in text and "42" in text.split("--KeyboardInterrupt--")[1]
    assert "Traceback" not in err + text
    assert out == run_plain(SAMPLES / "graph_break.py").stdout


@pytest.mark.parametrize("how", ["sys.exit", "os._exit", "close-stdout"])
def test_exits_from_inside_compiled_code(how: str, tmp_path: Path) -> None:
    argv = [PROGRAMS / "exits.py", how]
    reference = run_plain(*argv)
    run = run_dyndbg(argv, ["s", "s", "s", "c", "c"], tmp_path)
    assert (run.returncode, run.stdout) == (reference.returncode, reference.stdout)
    assert run.stderr == reference.stderr
    assert reference.returncode == {"sys.exit": 4, "os._exit": 5, "close-stdout": 0}[how]


def test_closed_output_pipe_does_not_hang_or_trace_back(tmp_path: Path) -> None:
    # dyndbg's own output goes to stdout, whose reader goes away after one line.
    proc = warm_start.Popen([sys.executable, "-m", "dyndbg", str(SAMPLES / "graph_break.py")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT,
                            env=dict(os.environ, HOME=empty_home()))
    proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(b"s\n" * 30 + b"c\n", timeout=120)
    text = err.decode()
    assert OWN_CODE not in text and "internal error" not in text
    assert proc.returncode in (0, 1, 120)   # the program's own print may hit the pipe


LEAK_DRIVER = r'''
import gc, json, sys, tracemalloc, types
sys.argv = ["leak"]
from dyndbg.attach import attach
import io, torch
engine = attach(io.StringIO(), ["b traced, x is None", "continue"])

@torch.compile(backend="eager")
def traced(x):
    y = x + 1
    torch._dynamo.graph_break()
    return y * 0.5

@torch.compile(backend="eager")
def untraced(x):
    y = x - 1
    torch._dynamo.graph_break()
    return y * 0.5

x = torch.ones(4)
def run(n):
    global x
    for _ in range(n):
        x = untraced(traced(x))
run(1000)
gc.collect()
tracemalloc.start()
before = tracemalloc.take_snapshot()
run(9000)
gc.collect()
after = tracemalloc.take_snapshot()
growth = sum(s.size_diff for s in after.compare_to(before, "filename")
             if "dyndbg" in s.traceback[0].filename)
sys.settrace(None)
held = [o for o in gc.get_referents(*vars(engine).values()) if isinstance(o, types.FrameType)]
held += [o for o in gc.get_referents(*vars(engine.tracer).values())
         if isinstance(o, types.FrameType)]
events = engine.tracer.events
print("LEAK " + json.dumps({"dyndbg_growth_bytes": growth,
      "active": len(getattr(engine.tracer, "active", ())),
      "snapshots": len(engine.snapshots), "entry_locals": len(engine.frames.entry_locals),
      "frames_held": len(held), "checks": events["line"] + events["instruction"]}))
'''


def test_no_frames_or_memory_kept_after_10000_calls(tmp_path: Path) -> None:
    driver = tmp_path / "leak.py"
    driver.write_text(LEAK_DRIVER)
    proc = warm_start.run([sys.executable, str(driver)], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                         "HOME": empty_home()},
                          stdin=subprocess.DEVNULL, timeout=300)
    line = next(l for l in proc.stdout.splitlines() if l.startswith("LEAK "))
    result = json.loads(line[5:])
    assert result["checks"] >= 10000           # the traced function really was traced
    assert result["active"] == result["snapshots"] == result["entry_locals"] == 0
    assert result["frames_held"] == 0
    assert result["dyndbg_growth_bytes"] < 64 * 1024, result
