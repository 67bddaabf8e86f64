"""Warm starts: the Python programs the suite starts are forked from a server
that has already imported torch and torch._dynamo, instead of each being a
new interpreter that imports them again (about 2.7 of the 3.4 seconds a small
program takes here, and the suite starts about 400).

Each program is still its own process, with its own pipes, signals, exit
status and environment; only the interpreter's start is shared. What a new
interpreter does at start and at exit is done here as CPython does it
(`__main__`, sys.argv, sys.path[0], the std streams, the traceback of an
uncaught exception, threads joined, atexit run and open files flushed at the
exit), except the teardown of the interpreter after that (module dicts
cleared, a last collection: most of a program's exit time with torch
loaded), which Python does not promise to a program's objects. What
torch reads from the environment when imported cannot change after the
server's import, so a program whose environment differs from the server's in
anything but ALLOWED_TO_DIFFER, or whose command line is not `python SCRIPT`,
`python -m MODULE` or `python -c CODE`, starts cold, as does every program
where DYNDBG_TEST_COLD_STARTS=1. test_cli.py starts its programs cold, and
test_warm_start.py holds warm and cold starts of the same programs equal.
The server also imports what a program's first compile imports (found by
a probe compile in a child of its own), and freezes its objects (gc.freeze)
so that a program's exit does not scan them; the program's first
gc.get_objects or gc.get_referrers thaws them.
What a warm start does not give: a hash seed of its own (the children of one
server share the server's, as they share where torch's objects are), and
gc.get_freeze_count() as a new interpreter has it.
DYNDBG_TEST_START_LOG=FILE writes one line a start: warm, or cold and why.

`Popen` and `run` are subprocess's, warm where they can be; the server is
warm_server.py.
"""
from __future__ import annotations

import atexit
import inspect
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from typing import Any

import warm_server

COLD = "DYNDBG_TEST_COLD_STARTS"
START_LOG = "DYNDBG_TEST_START_LOG"
# Variables a program may have that the server's import of torch did not see:
# none of them is read by torch when it is imported. PYTHONUNBUFFERED and
# PYTHONPATH are read at start, and a warm start does what they ask.
# TORCHINDUCTOR_CACHE_DIR torch reads when it first needs its cache, and sets
# it then (so an in-process test leaves it in the runner's environment).
ALLOWED_TO_DIFFER = frozenset({"HOME", "PYTEST_CURRENT_TEST", "TERM", "COLUMNS", "LINES",
                               "NO_COLOR", "PYTHONBREAKPOINT", "PYTHONUNBUFFERED",
                               "PYTHONPATH", "TORCHINDUCTOR_CACHE_DIR"})
ALLOWED_PREFIX = "DYNDBG_"
# The server's environment: this process's before any test changed it.
_BASE_ENV = dict(os.environ)
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warm_server.py")


# -- the client: what the tests call ---------------------------------------------------

def default_sigint() -> None:
    """A child's preexec_fn: SIGINT at its default and unblocked, as a
    terminal's foreground program has it. A child inherits both from the test
    runner: a runner started in the background (`cmd &`, job control off)
    ignores SIGINT, and python then keeps it ignored; a blocked SIGINT stays
    pending. Either way a Ctrl-C the test sends is lost without a word.
    A warm start does the same in the child it forks."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class _Server:
    """The fork server of this process (an xdist worker), started on first use."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        folder = tempfile.mkdtemp(prefix="dyndbg-warm-")
        self.path = os.path.join(folder, "server")
        self.log = os.path.join(folder, "server.log")
        with open(self.log, "wb") as log:
            # Its stdin is its lifeline: it ends when this process does.
            self.proc = subprocess.Popen([sys.executable, SERVER, self.path], env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=log, cwd=folder, start_new_session=True)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 240)
        if not ready or self.proc.stdout.readline() != warm_server.READY:
            self.proc.kill()
            raise RuntimeError(f"the warm-start server did not start: {self.why()}")
        atexit.register(shutil.rmtree, folder, True)
        atexit.register(self.proc.kill)

    def why(self) -> str:
        with open(self.log, errors="replace") as log:
            return log.read()[-2000:] or f"exit status {self.proc.poll()}"

    def start(self, request: dict[str, Any], fds: list[int]) -> tuple[socket.socket, int]:
        """Ask for a child; its connection (the exit status comes on it) and pid."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.connect(self.path)
            socket.send_fds(sock, [json.dumps(request).encode()], fds)
            answer = json.loads(sock.recv(warm_server.PACKET) or b"{}")
        except OSError:
            sock.close()
            raise
        if "pid" not in answer:
            sock.close()
            raise RuntimeError(f"the warm-start server did not fork: {answer or self.why()}")
        return sock, answer["pid"]


def _log(args: list[str], reason: str | None) -> None:
    """With DYNDBG_TEST_START_LOG=FILE, one line a start: warm, or cold and why."""
    path = os.environ.get(START_LOG)
    if path:
        with open(path, "a") as log:
            log.write(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", ""),
                                  "argv": args[1:3], "cold": reason}) + "\n")


_servers: list[_Server] = []
_servers_lock = threading.Lock()


def _may_differ(name: str) -> bool:
    return name in ALLOWED_TO_DIFFER or name.startswith(ALLOWED_PREFIX)


def _env_reason(env: dict[str, str]) -> str | None:
    """Why a program with this environment cannot be forked from the server."""
    differ = (env.keys() ^ _BASE_ENV.keys()) | {k for k in env.keys() & _BASE_ENV.keys()
                                                 if env[k] != _BASE_ENV[k]}
    fixed = sorted(k for k in differ if not _may_differ(k))
    if fixed:
        return "its environment differs in " + ", ".join(fixed)
    if "" in env.get("PYTHONPATH", "x").split(os.pathsep):
        return "an empty entry on its PYTHONPATH"
    return None


def _server() -> _Server | None:
    """This process's server, started on first use; None once it is gone."""
    with _servers_lock:
        if not _servers:
            _servers.append(_Server({k: v for k, v in _BASE_ENV.items() if not _may_differ(k)}))
        server = _servers[0]
    return server if server.proc.poll() is None else None


def _target(args: list[str]) -> list[str] | None:
    """['script', path] / ['module', name] / ['code', text], then the
    program's own arguments, for the command lines a warm start runs."""
    if len(args) < 2 or args[0] != sys.executable:
        return None
    if args[1] == "-m" and len(args) > 2:
        return ["module", *args[2:]]
    if args[1] == "-c" and len(args) > 2:
        return ["code", *args[2:]]
    if not args[1].startswith("-") and args[1].endswith(".py"):
        return ["script", *args[1:]]
    return None


_EXECUTE_CHILD = inspect.signature(subprocess.Popen._execute_child)  # type: ignore[attr-defined]


class Popen(subprocess.Popen):
    """subprocess.Popen, forked from the warm-start server where it can be."""

    _warm: socket.socket | None = None
    warm = False     # forked from the server (else a new interpreter)

    def _execute_child(self, *positional: Any) -> None:  # type: ignore[override]
        a = _EXECUTE_CHILD.bind(self, *positional).arguments
        args = [os.fspath(x) for x in ([a["args"]] if isinstance(a["args"], (str, bytes, os.PathLike))
                                      else a["args"])]
        env = dict(os.environ if a["env"] is None else a["env"])
        target = _target(args)
        if env.get(COLD) == "1":
            reason: str | None = COLD + "=1"
        elif target is None:
            reason = "not `python SCRIPT`, `-m MODULE` or `-c CODE`"
        elif (a["shell"] or a["executable"] is not None or a["pass_fds"]
              or a["preexec_fn"] not in (None, default_sigint)
              or a.get("process_group") not in (None, -1) or a["uid"] is not None
              or a["gid"] is not None or a["gids"] is not None or a["umask"] >= 0):
            reason = "a Popen argument a fork server does not do"
        else:
            reason = _env_reason(env)
        server = _server() if reason is None else None
        if server is None and reason is None:
            reason = "the server is gone: " + _servers[0].why()
        _log(args, reason)
        if server is None:
            return super()._execute_child(*positional)  # type: ignore[misc]
        sigint = "python" if (a["preexec_fn"] is default_sigint
                              or signal.getsignal(signal.SIGINT) is not signal.SIG_IGN) else "ignore"
        request = {"target": target, "argv": args, "env": env,
                   "cwd": os.fspath(a["cwd"]) if a["cwd"] is not None else os.getcwd(),
                   "new_session": bool(a["start_new_session"]), "sigint": sigint}
        fds = [a["p2cread"] if a["p2cread"] != -1 else 0,
               a["c2pwrite"] if a["c2pwrite"] != -1 else 1,
               a["errwrite"] if a["errwrite"] != -1 else 2]
        self._warm, self.pid = server.start(request, fds)
        self.warm = True
        self._child_created = True
        self._close_pipe_fds(a["p2cread"], a["p2cwrite"], a["c2pread"], a["c2pwrite"],  # type: ignore[attr-defined]
                             a["errread"], a["errwrite"])

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        if self._warm is None:
            return super()._try_wait(wait_flags)  # type: ignore[misc]
        if wait_flags & os.WNOHANG and not select.select([self._warm], [], [], 0)[0]:
            return (0, 0)
        packet = self._warm.recv(warm_server.PACKET)
        self._warm.close()
        # No status: the server is gone; say so as an exit status no program gives.
        return (self.pid, json.loads(packet)["status"] if packet else 255 << 8)

    def _internal_poll(self, _deadstate: int | None = None, **_: Any) -> int | None:  # type: ignore[override]
        if self._warm is None:
            return super()._internal_poll(_deadstate)  # type: ignore[misc]
        if self.returncode is None and self._waitpid_lock.acquire(False):  # type: ignore[attr-defined]
            try:
                if self.returncode is None:
                    pid, sts = self._try_wait(os.WNOHANG)
                    if pid == self.pid:
                        self._handle_exitstatus(sts)  # type: ignore[attr-defined]
            except OSError:
                if _deadstate is not None:
                    self.returncode = _deadstate
            finally:
                self._waitpid_lock.release()  # type: ignore[attr-defined]
        return self.returncode


def run(args: list[str], *, input: Any = None, capture_output: bool = False,
        timeout: float | None = None, check: bool = False, **kwargs: Any) -> subprocess.CompletedProcess:
    """subprocess.run, through Popen above."""
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with Popen(args, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except BaseException:
            process.kill()
            process.wait()
            raise
        retcode = process.poll()
    if check and retcode:
        raise subprocess.CalledProcessError(retcode, process.args, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(process.args, retcode or 0, stdout, stderr)
