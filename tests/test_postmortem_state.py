"""`guards` in the torch state of the call that ran, not the process's now.

Post mortem, the `with torch.no_grad()` (inference_mode, autocast) the failing
call ran in has exited; under `up`, newer code may have changed grad mode. The
entry that ran passed its guards, so none of them may say FAIL; a guard that
failed at that call (another entry's) still does; and looking leaves the
program's state as it was."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import warm_start
from harness import ROOT, TIMEOUT, child_env, run_dyndbg, run_plain
from transcript import segments

# Compiled once outside the block ([0/0]) and once inside it ([0/1]), whose
# second call raises in graph code, still inside the block.
RAISES_INSIDE = """\
    import sys

    import torch

    import dyndbg


    @torch.compile(backend="eager")
    def f(x, i):
        y = x.sin() + 1
        return y[i]


    x = torch.arange(4.0)
    f(x, torch.tensor([1]))
    block = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode,
             "autocast": lambda: torch.autocast("cpu")}[sys.argv[1]]
    try:
        with block():
            f(x, torch.tensor([1]))
            f(x, torch.tensor([7]))          # IndexError
    except IndexError as error:
        if sys.argv[2:] == ["post_mortem"]:  # a plain run: nothing was recorded
            dyndbg.post_mortem(error)
        else:
            raise
    print("after the block")
"""

# What each block changes, as the state now prints it ("True" outside).
PROBES = {"no_grad": "torch.is_grad_enabled()",
          "inference_mode": "torch.is_inference_mode_enabled()",
          "autocast": "torch.is_autocast_enabled('cpu')"}
OUTSIDE = {"no_grad": "True", "inference_mode": "False", "autocast": "False"}
# torch's name for what the block changed in the global state ([0/0] fails on it).
CHANGED = {"no_grad": "grad_mode", "inference_mode": "grad_mode",
           "autocast": "autocast(cpu)_enabled"}

FAIL = re.compile(r"^  FAIL ")


def _write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def _python(script: Path, args: list[str], commands: list[str]) -> subprocess.CompletedProcess:
    """`python script args...` (no dyndbg) with commands on stdin."""
    return warm_start.run([sys.executable, str(script), *args],
                          input="".join(c + "\n" for c in commands), capture_output=True,
                          text=True, cwd=ROOT, env=child_env(), timeout=TIMEOUT)


def _entries(lines: list[str]) -> dict[str, list[str]]:
    """`guards all`'s output by entry: compile id -> its lines."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in lines:
        header = re.match(r"^guards of \[(?P<id>[^\]]+)\]", line)
        if header:
            current = found.setdefault(header["id"], [])
        else:
            current.append(line)
    return found


def _check_guards(said: dict[str, list[str]], block: str, transcript: str) -> None:
    running = said["guards"]
    assert running and running[0].startswith("guards of [0/1] (running)"), transcript[-3000:]
    assert not [line for line in running if FAIL.match(line)], "\n".join(running)
    # The tree was evaluated (not a note that it could not be).
    assert any(line.startswith("  ok ") and "TENSOR_MATCH" in line for line in running), running
    by_entry = _entries(said["guards all"])
    assert set(by_entry) == {"0/1", "0/0"}, said["guards all"]
    assert not [line for line in by_entry["0/1"] if FAIL.match(line)], by_entry["0/1"]
    # [0/0] was compiled outside the block: at this call its global state guard failed.
    other = by_entry["0/0"]
    state = [line for line in other if "GLOBAL_STATE:" in line]
    assert len(state) == 1 and FAIL.match(state[0]), other
    reason = other[other.index(state[0]) + 1]
    assert reason.strip() == f"^ GLOBAL_STATE changed: {CHANGED[block]}", other
    if block != "no_grad":
        # Inference mode and autocast change a tensor's dispatch keys too.
        assert any(FAIL.match(line) and "TENSOR_MATCH" in line for line in other), other
    # Looking changed nothing: the state is the process's again.
    assert said[f"p {PROBES[block]}"] == [OUTSIDE[block]], said


@pytest.mark.parametrize("block", ["no_grad", "inference_mode", "autocast"])
def test_post_mortem_guards_are_those_of_the_call(tmp_path: Path, block: str) -> None:
    script = _write(tmp_path, "raises_inside.py", RAISES_INSIDE)
    commands = ["c", "guards", "guards all", f"p {PROBES[block]}", "q"]
    run = run_dyndbg([script, block], commands, tmp_path, options=["--post-mortem"])
    plain = run_plain(script, block)
    assert run.returncode == plain.returncode == 1, run.stderr[-3000:]
    assert "IndexError" in run.stderr.splitlines()[-1], run.stderr[-3000:]
    assert "!! raised at" in run.transcript and "in f [0/1]" in run.transcript, run.transcript
    said = {s.command: s.output for s in segments(run.transcript)}
    _check_guards(said, block, run.transcript)


def test_post_mortem_from_an_except_block_needs_no_recording(tmp_path: Path) -> None:
    # dyndbg.post_mortem() in a plain run: the call's state is read from its entry.
    script = _write(tmp_path, "raises_inside.py", RAISES_INSIDE)
    commands = ["guards", "guards all", f"p {PROBES['no_grad']}", "c"]
    run = _python(script, ["no_grad", "post_mortem"], commands)
    assert run.returncode == 0, run.stderr[-3000:]
    said = {s.command: s.output for s in segments(run.stdout)}
    _check_guards(said, "no_grad", run.stdout)
    assert run.stdout.rstrip().endswith("after the block"), run.stdout[-2000:]


# g's own code turns grad mode off before its graph break: the resume function
# runs with it off, while g [0/0] was entered (and guarded) with it on.
GRAD_OFF_ACROSS_BREAK = """\
    import torch


    @torch.compile(backend="eager")
    def g(x):
        y = x.sin()
        torch.set_grad_enabled(False)
        print("graph break")
        z = y + 1
        torch.set_grad_enabled(True)
        return z


    print(g(torch.arange(3.0)).sum().item())
"""


def test_guards_of_an_older_frame_under_up(tmp_path: Path) -> None:
    script = _write(tmp_path, "grad_off.py", GRAD_OFF_ACROSS_BREAK)
    commands = ["b torch_dynamo_resume_in_g*", "c", "p torch.is_grad_enabled()", "up", "guards",
                "p torch.is_grad_enabled()", "c"]
    run = run_dyndbg(script, commands, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == run_plain(script).stdout
    said = [(s.command, s.output) for s in segments(run.transcript)]
    probes = [output for command, output in said if command == "p torch.is_grad_enabled()"]
    assert probes == [["False"], ["False"]], said     # off in the resume function, and kept so
    up = next(output for command, output in said if command == "up")
    assert up and up[0].startswith("g [0/0]"), said
    guards = next(output for command, output in said if command == "guards")
    assert guards[0].startswith("guards of [0/0] (running)"), guards
    state = [line for line in guards if "GLOBAL_STATE:" in line]
    assert len(state) == 1 and state[0].startswith("  ok "), guards
    assert not [line for line in guards if FAIL.match(line)], "\n".join(guards)
