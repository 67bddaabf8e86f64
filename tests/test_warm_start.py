"""Warm starts (tests/warm_start.py) give what a new interpreter gives: the
same program started both ways has the same output, errors and exit status,
as a script, with -m, with -c, and under dyndbg's CLI."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import warm_start
from harness import ROOT, SAMPLES, child_env

# What differs between any two runs: where objects are (hex, or an id), torch's uuids.
ADDRESS = re.compile(r"0x[0-9a-f]{6,}|\b\d{12,}\b|[0-9a-f]{8}(_[0-9a-f]{4}){3}_[0-9a-f]{12}")
# What a program sees of how it was started, and how it ends: a thread
# joined at exit, exit handlers, a file it never closed (written out when it
# ends), then an uncaught exception (or KeyboardInterrupt, or an exit status)
# as its last word.
SHOW = """\
import atexit, os, signal, sys, threading, time
import torch
print("name", __name__, "argv", sys.argv, "path0", sys.path[0])
print("file", globals().get("__file__"), "spec", getattr(__spec__, "name", __spec__))
print("main", sorted(k for k in globals() if k.startswith("__")))
loader = globals().get("__loader__")
print("loader", getattr(loader, "__name__", type(loader).__name__), "warm_start" in sys.modules)
for stream in (sys.stdin, sys.stdout, sys.stderr):
    print(stream.name, stream.encoding, stream.errors, stream.line_buffering,
          stream.write_through, stream.isatty(), type(stream.buffer).__name__)
print("signals", signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGPIPE),
      signal.getsignal(signal.SIGCHLD))
import gc   # the collector sees torch's objects, as a new interpreter's does
print("referrers", any(r is vars(torch) for r in gc.get_referrers(torch.nn)))
print("cwd", os.getcwd(), "env", os.environ.get("DYNDBG_TEST_SHOWN"), "stdin", sys.stdin.read())
threading.Thread(target=lambda: (time.sleep(0.2), print("thread ended"))).start()
atexit.register(print, "exit handler ran")
atexit.register(lambda: print("left unclosed:", open(os.environ["DYNDBG_TEST_FILE"]).read()))
unclosed = open(os.environ["DYNDBG_TEST_FILE"], "w")
unclosed.write("written, never closed")   # flushed when the program ends
end = sys.argv[1] if len(sys.argv) > 1 else ""
if end == "raise":
    raise ValueError("the last word")
if end == "interrupt":
    raise KeyboardInterrupt
if end == "exit":
    sys.exit("exit with a message")
"""


def _starts(argv: list[str], cwd: Path, env_extra: dict[str, str] | None = None,
            typed: str = "typed") -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """The same program started cold and warm."""
    env = child_env(extra={"DYNDBG_TEST_SHOWN": "yes", **(env_extra or {})})
    runs = []
    for cold in ("1", "0"):
        env[warm_start.COLD] = cold
        env["DYNDBG_TEST_FILE"] = str(cwd / f"unclosed-{cold}.txt")
        with warm_start.Popen([sys.executable, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=cwd, env=env,
                              preexec_fn=warm_start.default_sigint) as process:
            assert process.warm == (cold == "0")
            out, err = process.communicate(typed, timeout=240)
        runs.append(subprocess.CompletedProcess(argv, process.returncode, out, err))
    return runs[0], runs[1]


def _same(cold: subprocess.CompletedProcess, warm: subprocess.CompletedProcess) -> None:
    """The same, but for what differs between any two runs."""
    def seen(run: subprocess.CompletedProcess) -> tuple[int, str, str]:
        return run.returncode, ADDRESS.sub("0x?", run.stdout), ADDRESS.sub("0x?", run.stderr)
    assert seen(warm) == seen(cold)


@pytest.fixture(scope="module")
def show(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("show")
    (folder / "show.py").write_text(SHOW)
    (folder / "showpkg").mkdir()
    (folder / "showpkg" / "__init__.py").write_text("")
    (folder / "showpkg" / "__main__.py").write_text(SHOW)
    return folder


@pytest.mark.parametrize("end", ["raise", "interrupt", "exit"])
def test_a_script_ends_as_in_a_new_interpreter(show: Path, end: str) -> None:
    cold, warm = _starts([os.path.join("..", show.name, "show.py"), end], cwd=show)
    assert "the last word" in cold.stderr or end != "raise"
    for run in (cold, warm):
        assert (show / f"unclosed-{'1' if run is cold else '0'}.txt").read_text() == \
            "written, never closed"
    assert "thread ended" in cold.stdout and "exit handler ran" in cold.stdout
    _same(cold, warm)


def test_a_module_and_code_start_as_in_a_new_interpreter(show: Path) -> None:
    # A sitecustomize on PYTHONPATH (as the soak's) runs before the program.
    site = show / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text("import atexit\nprint('sitecustomize ran')\n"
                                           "atexit.register(print, 'its exit handler ran')\n")
    cold, warm = _starts(["-m", "showpkg", "raise"], cwd=show,
                         env_extra={"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])})
    assert cold.stdout.startswith("sitecustomize ran") and "its exit handler" in cold.stdout
    _same(cold, warm)
    _same(*_starts(["-c", SHOW, "exit"], cwd=show))


def test_the_cli_on_a_sample_as_in_a_new_interpreter(tmp_path: Path) -> None:
    commands = "guards\nb __compiled_fn_*\nc\nstack\nc\nc\n"
    cold, warm = _starts(["-m", "dyndbg", str(SAMPLES / "uncaught.py")], cwd=ROOT, typed=commands)
    assert "uncaught error from compiled code" in cold.stderr and "hit 1" in cold.stdout
    _same(cold, warm)


def test_what_torch_reads_at_import_starts_cold() -> None:
    """A variable torch reads when imported, unlike dyndbg's own, is not
    forked from a server that imported torch without it."""
    env = child_env()
    warm = warm_start.Popen([sys.executable, "-c", "import os; print(os.getppid())"],
                            stdout=subprocess.PIPE, text=True, env=env)
    server = warm_start._server()
    assert server is not None and int(warm.communicate()[0]) == server.proc.pid
    assert warm_start._env_reason({**env, "DYNDBG_CORE": "python", "HOME": "/"}) is None
    for name in ("TORCH_LOGS", "TORCHDYNAMO_VERBOSE", "PYTHONHASHSEED", "OMP_NUM_THREADS"):
        assert warm_start._env_reason({**env, name: "x"}) == f"its environment differs in {name}"
