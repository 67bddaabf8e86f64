"""What the tests share: driving the real CLI in a subprocess, the places
they run from, and how a listing differs between Pythons. Tests import
this module; conftest.py holds only pytest's fixtures and hooks."""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dyndbg import cores
from listing import Listing, parse_listing
import warm_start
from warm_start import default_sigint  # noqa: F401  (tests take it from here)

ROOT = Path(__file__).resolve().parent.parent
CORE_BUILT = cores.built()
if not CORE_BUILT:
    # No compiled core here (no compiler at install): the programs the tests
    # start run on the Python core as chosen, without the line that says it
    # was not built (test_cores checks that line).
    os.environ.setdefault(cores.CORE_VARIABLE, "python")
SAMPLES = ROOT / "samples"
TIMEOUT = 240
# 3.13 keeps a call's callable below its NULL on the stack (dis shows `g + NULL`);
# 3.11 and 3.12 above it (`NULL + g`).
CALLABLE_FIRST = sys.version_info >= (3, 13)
CALLABLE_SLOT = 0 if CALLABLE_FIRST else 1   # its index above [NULL, callable]'s base


# How a listing shows `a[b]`: 3.14 has no BINARY_SUBSCR, it is BINARY_OP [].
SUBSCRIPT = re.compile(r"BINARY_OP +\[\]" if sys.version_info >= (3, 14) else "BINARY_SUBSCR")


def with_null(name: str) -> str:
    """How dis shows a LOAD_GLOBAL of `name` that also pushes a call's NULL."""
    return f"{name} + NULL" if CALLABLE_FIRST else f"NULL + {name}"


# dyndbg's own source files, as a traceback through them would name them.
OWN_CODE = str(ROOT / "dyndbg") + os.sep
# The tracing mechanism the programs under test get (dyndbg/engine/tracing/choice.py's rule).
MONITORING = hasattr(sys, "monitoring") and os.environ.get("DYNDBG_TRACER") != "settrace"


@dataclass
class Run:
    stdout: str        # the program's own output
    stderr: str
    returncode: int
    transcript: str    # dyndbg's output (--out), empty for plain runs


_EMPTY_HOME: list[str] = []


def empty_home() -> str:
    """An empty directory for HOME: a developer's own ~/.dyndbgrc (or
    history) must not change what the suite sees."""
    if not _EMPTY_HOME:
        path = tempfile.mkdtemp(prefix="dyndbg-test-home-")
        atexit.register(shutil.rmtree, path, True)
        _EMPTY_HOME.append(path)
    return _EMPTY_HOME[0]


def child_env(home: Path | None = None, extra: dict[str, str | None] | None = None) -> dict[str, str]:
    """The environment of the programs the tests start; extra: variables to
    set, or to remove where the value is None."""
    env = dict(os.environ)
    env.pop("PYTHONBREAKPOINT", None)
    env["PYTHONUNBUFFERED"] = "1"
    env["NO_COLOR"] = "1"
    env["HOME"] = str(home) if home is not None else empty_home()
    # This tree's dyndbg, whatever the venv's editable install points at (3.12/3.13
    # venvs are shared by every clone on the machine and point at the last one set up).
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + old if old else "")
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


# Where plain runs are kept for the whole session, shared by the xdist
# workers (conftest.py sets it): the same program run plainly again gives
# what it gave, so it is run once.
PLAIN_RUNS = "DYNDBG_TEST_PLAIN_RUNS"
# What the tests vary that a plain program cannot see: the test's name, and
# dyndbg's core and tracer where the program never names dyndbg.
_UNSEEN = {"PYTEST_CURRENT_TEST"}
_UNSEEN_WITHOUT_DYNDBG = _UNSEEN | {"DYNDBG_CORE", "DYNDBG_TRACER"}


def run_plain(script: Path | str, *args: str, cwd: Path = ROOT) -> Run:
    """`python script args...`, run once per session for the same program,
    arguments, directory and environment (a program that names dyndbg keeps
    the core and tracer in its key)."""
    env = child_env()
    source = Path(cwd, script).read_bytes()
    unseen = _UNSEEN if b"dyndbg" in source else _UNSEEN_WITHOUT_DYNDBG
    seen = {k: v for k, v in env.items() if k not in unseen}
    key = hashlib.sha256(json.dumps([str(script), args, str(cwd), sorted(seen.items()),
                                     source.hex()]).encode()).hexdigest()
    kept = Path(os.environ[PLAIN_RUNS], key + ".json") if os.environ.get(PLAIN_RUNS) else None
    if kept is not None and kept.exists():
        return Run(*json.loads(kept.read_text()))
    proc = warm_start.run([sys.executable, str(script), *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=TIMEOUT)
    run = Run(proc.stdout, proc.stderr, proc.returncode, "")
    if kept is not None:
        fresh = kept.with_suffix(f".{os.getpid()}")
        fresh.write_text(json.dumps([run.stdout, run.stderr, run.returncode, ""]))
        fresh.replace(kept)      # whole, whichever worker writes it last
    return run


def run_dyndbg(target: list[str] | Path | str, commands: str | list[str] = "",
               tmp_path: Path | None = None, options: list[str] | None = None,
               cwd: Path = ROOT, stdin_bytes: bytes | None = None, home: Path | None = None,
               env: dict[str, str | None] | None = None) -> Run:
    """`python -m dyndbg [options] --out FILE target...` with commands on stdin.
    home: HOME (an empty directory by default); env: variables to set or remove (None)."""
    if isinstance(commands, list):
        commands = "".join(c + "\n" for c in commands)
    argv = [sys.executable, "-m", "dyndbg", *(options or [])]
    transcript_file = None
    if tmp_path is not None:
        transcript_file = tmp_path / f"transcript-{os.getpid()}-{len(list(tmp_path.iterdir()))}.txt"
        argv += ["--out", str(transcript_file)]
    argv += [str(t) for t in target] if isinstance(target, list) else [str(target)]
    data = stdin_bytes if stdin_bytes is not None else commands.encode()
    proc = warm_start.run(argv, input=data, capture_output=True, cwd=cwd,
                          env=child_env(home, env), timeout=TIMEOUT)
    transcript = transcript_file.read_text() if transcript_file and transcript_file.exists() else ""
    return Run(proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"),
               proc.returncode, transcript)



def plain(name: str) -> Run:
    """A plain run of samples/NAME (once a session, as every run_plain)."""
    return run_plain(SAMPLES / name)


@dataclass
class GraphBreakCode:
    """samples/graph_break.py's generated code as dyndbg lists it (`ll`; `dis --raw`
    for the real global names): f [0/0] and its resume function [1/0]. What is
    at an index depends on the torch (and Python) that compiled it; find
    instructions in these by what they are (tests/listing.py)."""
    f: Listing
    f_raw: Listing
    resume: Listing
    resume_raw: Listing


GRAPH_BREAK_LISTINGS = ["ll", "dis --raw", "b torch_dynamo_resume_in_*", "c", "ll", "dis --raw", "q"]


def graph_break_code_of(run: Run) -> GraphBreakCode:
    """graph_break.py's code, parsed from a run of GRAPH_BREAK_LISTINGS."""
    outputs: dict[str, list[list[str]]] = {}
    current: list[str] | None = None
    for line in run.transcript.splitlines():
        if line.startswith("(dyndbg) "):
            current = outputs.setdefault(line[len("(dyndbg) "):], [])
            current.append([])
        elif current:
            current[-1].append(line)
    assert len(outputs.get("ll", [])) == 2 and len(outputs.get("dis --raw", [])) == 2, \
        f"no listings of f and its resume function:\n{run.transcript[-3000:]}"
    resumed = [line for line in outputs["c"][0] if line.startswith("> ")]
    assert resumed and resumed[0].startswith("> torch_dynamo_resume_in_f_at_10 [1/0]  "), resumed
    (f, resume), (f_raw, resume_raw) = outputs["ll"], outputs["dis --raw"]
    return GraphBreakCode(parse_listing(f), parse_listing(f_raw), parse_listing(resume),
                          parse_listing(resume_raw))


def program_cache(tmp_path_factory, name: str) -> Path:
    """An inductor cache folder (TORCHINDUCTOR_CACHE_DIR) for the runs of one
    test program, shared by the modules (and the xdist workers) of this
    session that compile it: a graph there is this program's own, with its
    line map (the machine's shared cache may hold a graph of the same shape
    that another program compiled first), and it is compiled once a session."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent          # the session's folder, above each worker's
    folder = Path(base, f"inductor-{name}")
    folder.mkdir(exist_ok=True)
    return folder
