"""`pytest --dyndbg` (issue 39): real pytest runs in subprocesses, on a test
file whose failure is raised inside a resume function, commands on a pipe."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import ROOT, TIMEOUT, child_env

SAMPLE = ROOT / "samples" / "pytest" / "test_pick.py"   # fails in a resume function
SUMMARY = re.compile(r"^(=+ )?\d+ failed, \d+ passed.*$", re.M)


def _pytest(tmp_path: Path, *options: str, stdin: str = "") -> subprocess.CompletedProcess:
    (tmp_path / "test_model.py").write_text(SAMPLE.read_text())
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *options, "test_model.py"], input=stdin, capture_output=True,
                          text=True, cwd=tmp_path, env=child_env(), timeout=TIMEOUT)


def _summary(run: subprocess.CompletedProcess) -> str:
    found = SUMMARY.findall(run.stdout)
    lines = [m.group(0) for m in SUMMARY.finditer(run.stdout)]
    assert found and lines, run.stdout[-3000:] + run.stderr[-3000:]
    return re.sub(r" in [\d.]+s", "", lines[-1])


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess:
    """The run without --dyndbg (the plugin registered, inert)."""
    return _pytest(tmp_path_factory.mktemp("plain"))


def test_a_failure_in_generated_code_stops_post_mortem(tmp_path: Path, plain) -> None:
    run = _pytest(tmp_path, "--dyndbg", stdin="stack\nc\n")
    assert run.returncode == plain.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert _summary(run) == _summary(plain) and "1 failed, 1 passed" in _summary(run)
    out = run.stdout
    assert "!! IndexError: index 7 is out of bounds" in out, out[-3000:]
    assert re.search(r"^> torch_dynamo_resume_in_pick_at_\d+ \[\d+/0\] .* CALL ", out, re.M), out
    # the failing call's operands, as before the failing instruction
    stack = out.split("(dyndbg) stack\n")[1].split("(dyndbg) ")[0]
    assert stack.startswith("value stack, depth 4, bottom to top (as before the failing "
                            "instruction):"), stack
    assert re.search(r"2 +Tensor f32\[3\] cpu \[2, 2, 2\]\n +3 +Tensor i64\[1\] cpu \[7\]", stack)
    assert "(dyndbg) c" in out
    # pytest's own report of the failure is what it is without --dyndbg
    assert "E       IndexError: index 7 is out of bounds for dimension 0 with size 3" in out


def test_commands_set_a_breakpoint_that_stops_in_the_test(tmp_path: Path) -> None:
    run = _pytest(tmp_path, "--dyndbg", "--dyndbg-commands", "b __compiled_fn_*", "-k",
                  "test_ok", stdin="stack\nc\nc\n")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert "(dyndbg) b __compiled_fn_*\nBreakpoint 1 at __compiled_fn_*" in out, out
    assert out.count("Breakpoint 1 at __compiled_fn_*, hit ") == 2, out
    assert re.search(r"^graph \d+ \(__compiled_fn_\d+_\w+\) called from pick \[0/0\] with 1 "
                     r"input:", out, re.M), out
    assert "value stack, depth 3, bottom to top:" in out
    assert re.search(r"^1 passed, 1 deselected", out, re.M), out


def test_s_at_a_graph_call_stops_in_the_graph_with_the_capture_off(tmp_path: Path) -> None:
    """`s` at the graph's call enters it (issue 50): its stops are shown and read
    their commands with pytest's capture suspended, as the stops in generated code."""
    run = _pytest(tmp_path, "--dyndbg", "--dyndbg-commands", "b __compiled_fn_*", "-k",
                  "test_ok", stdin="s\ns\nlocals\nc\nc\n")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert re.search(r"^\[graph \d+ eager forward\] node 2/3 y: call_function operator\.mul\n"
                     r"  at test_model\.py:8: y = x \* 2$", out, re.M), out
    assert "(dyndbg graph) s\n" in out and "(dyndbg graph) locals\ny = Tensor f32[3] cpu [2, 2, 2]\n" \
        "(dyndbg graph) c\n" in out, out
    assert out.count("Breakpoint 1 at __compiled_fn_*, hit ") == 2, out
    assert re.search(r"^1 passed, 1 deselected", out, re.M), out


def test_without_the_option_nothing_changes_and_xdist_says_it_cannot_stop(
        tmp_path: Path, plain) -> None:
    unregistered = _pytest(tmp_path, "-p", "no:dyndbg")
    assert unregistered.returncode == plain.returncode == 1
    assert _summary(unregistered) == _summary(plain)
    assert "(dyndbg)" not in plain.stdout and "dyndbg:" not in plain.stdout + plain.stderr
    workers = _pytest(tmp_path, "--dyndbg", "-n", "1")
    assert workers.returncode == 1 and "1 failed, 1 passed" in _summary(workers)
    assert workers.stdout.count("dyndbg: cannot stop under xdist (-n): its workers have no "
                                "stdin; run without -n to debug") == 1, workers.stdout
    assert "(dyndbg)" not in workers.stdout
