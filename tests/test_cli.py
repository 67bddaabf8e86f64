"""The command line: options, errors, how the target runs, exit status, -c, EOF."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import OWN_CODE, ROOT, SAMPLES, TIMEOUT, Run, plain, run_dyndbg, run_plain

PROMPT = "(dyndbg) "

SHOW = """\
import sys
print("name", __name__)
print("argv", sys.argv)
print("path0", sys.path[0])
print("file", __file__)
spec = globals().get("__spec__")
print("spec", getattr(spec, "name", spec))
"""


@pytest.fixture
def importable(monkeypatch) -> None:
    """dyndbg importable with `python -m dyndbg` from any cwd, installed or not."""
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + old if old else ""))


def _python(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1", NO_COLOR="1")
    env.pop("PYTHONBREAKPOINT", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=TIMEOUT, stdin=subprocess.DEVNULL)


# -- --version, --help -------------------------------------------------------------------

def test_version() -> None:
    proc = _python("-m", "dyndbg", "--version")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = proc.stdout + proc.stderr
    assert re.search(r"\d+\.\d+", out), out


def test_help() -> None:
    proc = _python("-m", "dyndbg", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "usage:" in proc.stdout.lower(), proc.stdout
    assert "-m MODULE" in proc.stdout and "SCRIPT" in proc.stdout
    assert "--no-rc" in proc.stdout and "--rank R" in proc.stdout, proc.stdout


@pytest.mark.parametrize("option", ["--version", "--help"])
def test_version_and_help_do_not_import_torch(option: str) -> None:
    code = ("import sys\n"
            "from dyndbg.cli import main\n"
            f"try:\n    main([{option!r}])\n"
            "except SystemExit as e:\n    print('exit', e.code)\n"
            "print('torch' in sys.modules)\n")
    proc = _python("-c", code)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-2:] == ["exit 0", "False"], proc.stdout[-500:]


# -- scripts that cannot run -------------------------------------------------------------

def _one_clear_error(run: Run, name: str) -> None:
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert "Traceback" not in run.stderr + run.stdout
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one message, got:\n{run.stderr}"
    assert name in lines[0], lines[0]


def test_missing_script(tmp_path) -> None:
    _one_clear_error(run_dyndbg(tmp_path / "no_such_script.py"), "no_such_script.py")


def test_directory_as_script(tmp_path) -> None:
    folder = tmp_path / "a_folder"
    folder.mkdir()
    _one_clear_error(run_dyndbg(folder), "a_folder")


def test_syntax_error(tmp_path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("print('hi')\nx = (\n")
    run = run_dyndbg(script)
    assert run.returncode == 1, (run.returncode, run.stderr)
    assert "SyntaxError" in run.stderr
    assert "broken.py" in run.stderr
    assert OWN_CODE not in run.stderr, run.stderr
    assert run.stdout == ""  # nothing ran


# -- the target runs as python runs it ---------------------------------------------------

def test_script_runs_as_main(tmp_path, importable) -> None:
    (tmp_path / "show.py").write_text(SHOW)
    args = ["show.py", "a b", "-c", "--out", "x", "-m"]
    expected = run_plain(*args, cwd=tmp_path)
    got = run_dyndbg(args, cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    assert got.returncode == 0, got.stderr
    assert got.stdout == expected.stdout


def test_module_runs_as_main(tmp_path, importable) -> None:
    (tmp_path / "showmod.py").write_text(SHOW)
    expected = _python("-m", "showmod", "one", "-c", "two", cwd=tmp_path)
    got = run_dyndbg(["-m", "showmod", "one", "-c", "two"], cwd=tmp_path)
    assert expected.returncode == 0, expected.stderr
    assert got.returncode == 0, got.stderr
    assert got.stdout == expected.stdout


# -- exit status and uncaught exceptions ---------------------------------------------------

@pytest.fixture(scope="module")
def exit_code_eof(tmp_path_factory) -> Run:
    """exit_code.py under dyndbg with an empty stdin (immediate end of input)."""
    return run_dyndbg(SAMPLES / "exit_code.py", "", tmp_path=tmp_path_factory.mktemp("eof"))


def _exits_like_plain(run: Run, expected: Run) -> None:
    assert expected.returncode == 3
    assert run.returncode == 3, run.stderr
    assert run.stdout == expected.stdout
    assert "Traceback" not in run.stderr + run.transcript
    assert "> f [0/0]" in run.transcript, run.transcript  # it did stop in generated code


def test_exit_status_with_empty_stdin(exit_code_eof: Run) -> None:
    _exits_like_plain(exit_code_eof, plain("exit_code.py"))


def test_exit_status_after_continue(tmp_path) -> None:
    run = run_dyndbg(SAMPLES / "exit_code.py", "c\n", tmp_path=tmp_path)
    _exits_like_plain(run, plain("exit_code.py"))
    assert (PROMPT + "c") in run.transcript.splitlines()


def _traceback(stderr: str) -> list[str]:
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
    assert starts, f"no traceback in:\n{stderr}"
    return lines[starts[0]:]


def test_uncaught_exception_like_plain_run(tmp_path) -> None:
    expected = plain("uncaught.py")
    run = run_dyndbg(SAMPLES / "uncaught.py", "", tmp_path=tmp_path)
    assert expected.returncode == 1
    assert run.returncode == 1, run.stderr
    assert _traceback(run.stderr) == _traceback(expected.stderr)
    assert run.stdout == expected.stdout


# -- -c commands and end of input --------------------------------------------------------

def test_c_option_runs_commands_at_first_stop(tmp_path) -> None:
    run = run_dyndbg(SAMPLES / "exit_code.py", "", tmp_path=tmp_path,
                     options=["-c", "stack", "-c", "c"])
    lines = run.transcript.splitlines()
    prompts = [line for line in lines if line.startswith(PROMPT)]
    # Both commands ran, in order; `c` ran the program to completion, so no
    # prompt came to read the (empty) stdin.
    assert prompts == [PROMPT + "stack", PROMPT + "c"], f"prompts: {prompts}\n{run.transcript}"
    after_stack = lines[lines.index(PROMPT + "stack") + 1]
    assert after_stack.startswith("value stack"), run.transcript
    # Before the commands: the first stop, in f's generated code.
    head = run.transcript.split(PROMPT, 1)[0]
    assert "> f [0/0]" in head, head
    expected = plain("exit_code.py")
    assert run.returncode == expected.returncode == 3, run.stderr
    assert run.stdout == expected.stdout


def test_empty_stdin_detaches(exit_code_eof: Run) -> None:
    run, expected = exit_code_eof, plain("exit_code.py")
    lines = run.transcript.splitlines()
    assert any(line.startswith("> f [0/0]") for line in lines), run.transcript  # stopped first
    # One prompt met the end of input; dyndbg said it detaches; the program ran on.
    assert [line for line in lines if line.startswith(PROMPT)] == [PROMPT], lines
    assert "detach" in run.transcript.lower(), run.transcript
    assert (run.stdout, run.returncode) == (expected.stdout, expected.returncode)
