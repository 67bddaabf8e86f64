"""The warm-start server (tests/warm_start.py starts it, one a test
process): it imports torch and torch._dynamo once, then forks a child for
each program asked for, and the child becomes that program as a new
interpreter would run it; the program's exit status goes back on the
request's connection. Only the standard library is imported here before
the fork: what the tests import never reaches the programs.
"""
from __future__ import annotations

import atexit
import gc
import json
import os
import selectors
import signal
import socket
import sys
from typing import Any

PRELOADED = ("torch", "torch._dynamo")
_GET_OBJECTS = gc.get_objects   # the collector's own, never the thawing one
READY = b"ready\n"
PACKET = 1 << 20

# What the probe compiles: a graph break, aot_eager forward and backward, and
# eager, as the suite's programs do. Its first compile imports some 460
# modules (fx passes, AOT autograd, sympy, networkx, ...): half a second a
# program on torch 2.15, paid once here instead.
PROBE = """
import torch
def f(x):
    y = x.sin() * 2
    torch._dynamo.graph_break()
    return (y + 1).sum()
x = torch.ones(3, requires_grad=True)
torch.compile(f, backend="aot_eager")(x).backward()
torch.compile(lambda x: x.cos() + 1, backend="eager")(torch.ones(2))
"""


def _compile_imports() -> list[str]:
    """The modules a program's first compiles import, in import order, found
    by a probe forked from here (so that nothing of its compile, counters
    and caches included, is in the server). [] where the probe failed, or
    where those imports warned (a program would have shown the warning)."""
    import warnings
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        payload: dict[str, Any] = {"modules": []}
        try:
            os.close(read_end)
            before = set(sys.modules)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                exec(compile(PROBE, "<warm-start probe>", "exec"), {"__name__": "__probe__"})
            payload = {"modules": [name for name in sys.modules if name not in before],
                       "warned": bool(caught)}
        finally:
            data = json.dumps(payload).encode()
            while data:
                data = data[os.write(write_end, data):]
            os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 1 << 16):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    try:
        found = json.loads(b"".join(chunks))
    except ValueError:
        return []
    return [] if found.get("warned", True) else found["modules"]


def _serve(path: str) -> tuple[dict[str, Any], list[int]]:
    """Import torch and what its first compiles import, then fork a child per
    request until stdin ends. Returns only in a child: its request and its
    three std fds."""
    import warnings
    for name in PRELOADED:
        __import__(name)
    for name in _compile_imports():
        if name not in sys.modules:
            try:
                __import__(name)
            except Exception:  # noqa: BLE001 - a program imports it itself then
                pass
    # The server's objects move out of the collector's sight: a child then
    # neither scans them at its exit (which would copy every page holding one,
    # 0.2 s a program on torch 2.15) nor in its collections. A child's first
    # gc.get_objects or gc.get_referrers brings them back (_thaw_on_use).
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    selector.register(0, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    os.write(1, READY)
    while True:
        for key, _ in selector.select():
            if key.fileobj is listener:
                conn, _ = listener.accept()
                packet, fds, _, _ = socket.recv_fds(conn, PACKET, 3)
                with warnings.catch_warnings():
                    # 3.12+ warns that the server has threads (torch's pool): the child
                    # is a program that does not use it, and gets its filters back.
                    warnings.simplefilter("ignore", DeprecationWarning)
                    pid = os.fork()
                if pid == 0:
                    selector.close()
                    for fd in (listener, conn):
                        fd.close()
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    os.close(wake_read)
                    os.close(wake_write)
                    for socket_ in children.values():
                        socket_.close()
                    return json.loads(packet), fds
                for fd in fds:
                    os.close(fd)
                children[pid] = conn
                conn.send(json.dumps({"pid": pid}).encode())
            elif key.fileobj == wake_read:
                while True:
                    try:
                        if not os.read(wake_read, 512):
                            break
                    except BlockingIOError:
                        break
                while children:
                    try:
                        pid, status = os.waitpid(-1, os.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                    conn = children.pop(pid, None)
                    if conn is not None:
                        try:
                            conn.send(json.dumps({"status": status}).encode())
                        except OSError:
                            pass
                        conn.close()
            elif not os.read(0, 512):
                os._exit(0)


def _stdio(fd: int, name: str, like: Any) -> Any:
    """A std stream over fd as CPython makes it at start (create_stdio)."""
    import io
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    writing = fd != 0
    raw = io.FileIO(fd, "wb" if writing else "rb", closefd=False)
    raw.name = name  # type: ignore[misc]
    buffer: Any = raw if (unbuffered and writing) else (
        io.BufferedWriter(raw) if writing else io.BufferedReader(raw))
    line_buffering = not unbuffered and (raw.isatty() or fd == 2)
    return io.TextIOWrapper(buffer, encoding=like.encoding, errors=like.errors, newline="\n",
                            line_buffering=line_buffering,
                            write_through=unbuffered)


def _own_frames_dropped(tb: Any) -> Any:
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return tb


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become the program the request names, started and
    ended as a new interpreter would run it."""
    import builtins
    import importlib
    import runpy
    import site
    import types
    for target, fd in enumerate(fds):
        os.dup2(fd, target, inheritable=True)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    if request["new_session"]:
        os.setsid()
    if request["sigint"] == "python":
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.stdin = sys.__stdin__ = _stdio(0, "<stdin>", sys.__stdin__)
    sys.stdout = sys.__stdout__ = _stdio(1, "<stdout>", sys.__stdout__)
    sys.stderr = sys.__stderr__ = _stdio(2, "<stderr>", sys.__stderr__)
    kind, what, *args = request["target"]
    # sys.path as a start with this PYTHONPATH makes it (the server had none).
    extra = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[1:1] = [p for p in dict.fromkeys(extra) if p not in sys.path[1:]]
    importlib.invalidate_caches()   # what the server's finders saw may have changed since
    sys.orig_argv = request["argv"]
    from importlib.machinery import BuiltinImporter, SourceFileLoader
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __loader__=BuiltinImporter)
    if sys.version_info < (3, 14):
        main.__annotations__ = {}
    sys.modules["__main__"] = main
    _thaw_on_use()
    # Python's random reseeds itself in a forked child; numpy's does not.
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    # A sitecustomize on this PYTHONPATH runs as site runs it at a start.
    for name, run_it in (("sitecustomize", site.execsitecustomize),
                         ("usercustomize", site.execusercustomize)):
        if any(os.path.exists(os.path.join(p, name + ".py")) for p in extra):
            sys.modules.pop(name, None)
            run_it()
    try:
        if kind == "module":
            sys.argv = ["-m", *args]
            sys.path[0] = os.getcwd()
            runpy._run_module_as_main(what)  # type: ignore[attr-defined]  # what `python -m` calls
        elif kind == "code":
            sys.argv = ["-c", *args]
            sys.path[0] = ""
            exec(compile(what, "<string>", "exec"), main.__dict__)
        else:
            path = os.path.join(os.getcwd(), what)   # as CPython makes it absolute: not normalized
            sys.argv = [what, *args]
            sys.path[0] = os.path.dirname(os.path.realpath(path))
            main.__dict__.update(__file__=path, __loader__=SourceFileLoader("__main__", path))
            if sys.version_info < (3, 15):     # 3.15 no longer sets __cached__ on __main__
                main.__dict__["__cached__"] = None
            with open(path, "rb") as source:
                code = compile(source.read(), path, "exec")
            exec(code, main.__dict__)
    except SystemExit as exit_:
        status = _exit_status(exit_)
    except BaseException as error:
        # The hook shows the exception's own traceback: ours dropped from it.
        error.__traceback__ = _own_frames_dropped(error.__traceback__)
        sys.excepthook(type(error), error, error.__traceback__)
        status = -signal.SIGINT if isinstance(error, KeyboardInterrupt) else 1
    else:
        status = 0
    _end(status)


def _thaw_on_use() -> None:
    """The server froze its objects (gc.freeze): the first time the program
    asks the collector what objects there are, or which refer to one, they
    are thawed first, so that it sees every object a new interpreter would."""
    originals = {name: getattr(gc, name) for name in ("get_objects", "get_referrers")}

    def thawing(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            for each, original in originals.items():
                setattr(gc, each, original)
            gc.unfreeze()
            return originals[name](*args, **kwargs)
        call.__name__ = call.__qualname__ = name
        call.__doc__ = originals[name].__doc__
        return call

    for name in originals:
        setattr(gc, name, thawing(name))


def _exit_status(exit_: SystemExit) -> int:
    """The status CPython ends with for this SystemExit, its message printed."""
    code = exit_.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _end(status: int) -> None:
    """End as CPython's finalization ends a program, up to what a program can
    see: threads joined, exit handlers run, open files flushed, the std
    streams flushed (status 120 where stdout cannot be), an uncaught
    KeyboardInterrupt ending by SIGINT. The interpreter's teardown after that
    (module dicts cleared, a last collection: 1.2 of a warm start's 1.7 s on
    3.12 + torch 2.14.1) is skipped: Python does not promise to finalize the
    objects still alive at exit."""
    import io
    import threading
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls first
    atexit._run_exitfuncs()
    files = (io.BufferedWriter, io.BufferedRandom, io.TextIOWrapper)
    # Unless the program thawed them, the server's objects stay out of this
    # scan: no file of the program's is among them.
    for obj in _GET_OBJECTS():
        # type(), not isinstance(): that reads __class__, which a proxy answers.
        if type(obj) in files and obj is not sys.stdout and obj is not sys.stderr:
            try:
                if not obj.closed:
                    obj.flush()
            except Exception:  # noqa: BLE001 - as CPython ignores it at teardown
                pass
    for stream in (sys.stdout, sys.stderr):
        if stream is None or getattr(stream, "closed", False):
            continue      # as CPython's flush_std_files skips a closed one
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            if stream is sys.stdout and status == 0:
                status = 120
    if status == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status)

if __name__ == "__main__":
    _become(*_serve(sys.argv[1]))
