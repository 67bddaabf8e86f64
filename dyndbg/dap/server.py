"""The DAP server inside the program's process: the engine's front end for
an editor, as ui/session.py's prompt is for a terminal.

One client at a time, over a socket (the stdio adapter's, or an editor's
own for `--listen`). A reader thread takes the client's requests. While a
thread is stopped, every request waits in a queue for that thread: frames
are read, expressions run and the engine changes on the thread that owns
them, as at the prompt. While the program runs, the reader thread serves
the requests that need no stop (breakpoints, threads, pause, sources),
holding the engine's lock; the others are refused with a reason. A stop
while dynamo compiles (interact_compile) is served the same way, on the
compiling thread, by the requests of dap/compile_stop_requests.py; a stop
inside a compiled graph by those of dap/graph_stop_requests.py.
"""
from __future__ import annotations

import atexit
import os
import queue
import socket
import sys
import threading
from typing import TYPE_CHECKING, Callable

from dyndbg.dap.protocol import Channel, Message, ProtocolError, RequestError
from dyndbg.engine.stop import Stop, InstructionTraceEvent
from dyndbg.engine.threads import ENGINE_LOCK
from dyndbg.ui.text.values import exception_text

if TYPE_CHECKING:
    from dyndbg.dap.requests import Requests
    from dyndbg.engine.debugger import Engine
    from dyndbg.engine.stop import CompileStop, GraphStop

# Served while the program runs (everything else needs a stopped thread).
WHILE_RUNNING = {"initialize", "launch", "attach", "configurationDone", "threads",
                 "setBreakpoints", "setFunctionBreakpoints", "setInstructionBreakpoints",
                 "setExceptionBreakpoints", "pause", "disconnect", "terminate",
                 "loadedSources", "source", "disassemble", "dyndbg/setView"}
# Handled on the stopped thread, they end the stop.
RESUMING = {"continue", "next", "stepIn", "stepOut", "disconnect", "terminate"}


class DapFrontend:
    """engine.Frontend for one DAP client at a time."""

    def __init__(self) -> None:
        self.channel: Channel | None = None
        self.engine: "Engine"
        self.requests: "Requests"            # set by serve()
        self.configured = threading.Event()   # configurationDone (or no client any more)
        self.stopped = False
        self._state = threading.Lock()        # `stopped` and the queue change together
        self._queue: queue.Queue[Message] = queue.Queue()
        self._resumed = False
        self._left_at_stop = False            # the client left while a thread was stopped
        self.sends_exit = False               # --listen: say when the program ends
        self.port: int | None = None          # the port listened on
        self.to_adapter = False               # served over the stdio adapter's socket

    # -- engine.Frontend --------------------------------------------------------------
    def message(self, text: str) -> None:
        self.output(text)

    def instruction_traced(self, event: InstructionTraceEvent) -> None:
        from dyndbg.ui.text import render
        self.output(render.instruction_trace_line(event, render.renamer(event.frame)))

    def interact(self, stop: Stop) -> None:
        """Serve the client on this thread until a request resumes the program."""
        channel = self.channel
        if channel is None:
            return   # no client: no stop
        if self.requests.skips(stop):
            return
        self._hold(lambda: self.requests.stopped(stop))

    def interact_compile(self, stop: CompileStop) -> None:
        """A stop while dynamo compiles (on the compiling thread, inside its
        compile, holding the engine: compile_stepping.py): served as a stop in
        generated code is, until a request steps dynamo on or continues."""
        if self.channel is None or self.engine.detached:
            return   # no client: no stop
        self._hold(lambda: self.requests.compile_stopped(stop))

    def interact_graph(self, stop: GraphStop) -> None:
        """A stop inside a compiled graph (stepIn at its call), served on the
        graph's thread by the requests of dap/graph_stop_requests.py."""
        if self.channel is None or self.engine.detached:
            self.engine.graph_steps.finish()   # no client: the graph runs on
            return
        self._hold(lambda: self.requests.graph_stopped(stop))

    def _hold(self, announce: Callable[[], None]) -> None:
        """Stopped: `announce` tells the client, then its requests are served
        here until one resumes."""
        with self._state:
            self.stopped = True
            self._resumed = False
        try:
            announce()
            while not self._resumed and self.channel is not None:
                try:
                    request = self._queue.get(timeout=0.5)
                except queue.Empty:
                    continue
                self._serve(request)
        finally:
            with self._state:
                self.stopped = False
            self.requests.resumed()
            self._drain()
            with self._state:
                left, self._left_at_stop = self._left_at_stop, False
            if left:
                self.requests.detach()   # the client left during the stop

    def resume(self) -> None:
        """The request being served ends the stop."""
        self._resumed = True

    # -- output -------------------------------------------------------------------------
    def output(self, text: str, category: str = "console") -> None:
        channel = self.channel
        if channel is not None:
            channel.event("output", {"category": category, "output": text + "\n"})

    # -- the client's requests ----------------------------------------------------------
    def _read_loop(self, channel: Channel) -> None:
        while True:
            try:
                message = channel.read()
            except ProtocolError as error:
                self.output(f"dyndbg: bad message ignored: {error}")
                continue
            except Exception:  # noqa: BLE001 - the connection is unusable: as if closed
                message = None
            if message is None:
                self._client_gone()
                return
            if message.get("type") == "request":
                self._take(message)

    def _take(self, request: Message) -> None:
        """Queue the request for the stopped thread, or serve it now, holding
        the engine (waiting while a stop or a condition has it)."""
        while True:
            with self._state:
                if self.stopped:
                    self._queue.put(request)
                    return
            if ENGINE_LOCK.acquire(timeout=0.05):
                try:
                    with self._state:
                        stopped = self.stopped
                    if not stopped:
                        self._serve(request, running=True)
                        return
                finally:
                    ENGINE_LOCK.release()

    def _drain(self) -> None:
        """Requests that came in as the stop ended: served as while running."""
        while True:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                return
            self._serve(request, running=True)

    def _serve(self, request: Message, running: bool = False) -> None:
        channel = self.channel
        if channel is None:
            return
        command = str(request.get("command", ""))
        try:
            if running and command not in WHILE_RUNNING:
                raise RequestError(f"{command!r} needs a stopped thread; the program is "
                                   "running (pause it, or wait for a breakpoint)")
            handler = self.requests.handler(command)
            if handler is None:
                raise RequestError(f"unknown request {command!r}")
            arguments = request.get("arguments") or {}
            if not isinstance(arguments, dict):
                raise RequestError("'arguments' must be an object")
            body = handler(arguments)
        except RequestError as error:
            channel.fail(request, str(error))
            return
        except Exception as error:  # noqa: BLE001 - a bad request never kills the adapter
            channel.fail(request, f"dyndbg: {command} failed: {type(error).__name__}: "
                                  f"{exception_text(error)}")
            return
        channel.respond(request, body)
        after = self.requests.after_response.pop(command, None)
        if after is not None:
            after()
        if command in RESUMING and not running:
            self.resume()

    def _client_gone(self) -> None:
        """The client closed the connection: detach, the program runs on."""
        self.channel = None
        self.configured.set()
        if self.to_adapter:
            _output_to_devnull()
        with self._state:
            if self.stopped:
                self._resumed = self._left_at_stop = True   # it detaches as it resumes
                return
        with ENGINE_LOCK:
            self.requests.detach()

    def program_ended(self, status: int | None) -> None:
        """The program is ending (`--listen`: the client has no process to
        watch); said once, with the exit status where the CLI knows it."""
        channel = self.channel
        if channel is not None and self.sends_exit:
            self.sends_exit = False
            if status is not None:
                channel.event("exited", {"exitCode": status})
            channel.event("terminated")

    # -- connections ----------------------------------------------------------------------
    def serve(self, connection: socket.socket) -> None:
        """The client on `connection` (the stdio adapter's, `--dap-connect`)."""
        self.to_adapter = True
        self._open(connection)

    def _open(self, connection: socket.socket) -> None:
        channel = Channel(connection.makefile("rb"), connection.makefile("wb"))
        self.channel = channel
        threading.Thread(target=self._read_loop, args=(channel,),
                         name="dyndbg-dap-reader", daemon=True).start()

    def accept(self, listener: socket.socket) -> None:
        """Take clients from `listener` (`--listen`): the first to come; once it
        has left, the program runs on without the debugger and later
        connections are closed at once."""
        self.port = listener.getsockname()[1]
        self.sends_exit = True
        atexit.register(self.program_ended, None)   # dyndbg.listen(): the status is unknown
        threading.Thread(target=self._accept_loop, args=(listener,),
                         name="dyndbg-dap-listen", daemon=True).start()

    def _accept_loop(self, listener: socket.socket) -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            if self.channel is not None or self.engine.detached:
                connection.close()   # one client, once
                continue
            self._open(connection)


def _output_to_devnull() -> None:
    """The stdio adapter has gone (or will stop reading): the pipes it gave
    for stdout and stderr may break, and the program must not fail on a
    print. What it writes from now on is lost, as nobody is there to see it."""
    try:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
    except OSError:
        pass


def _listener(host: str, port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(1)
    except BaseException:
        listener.close()
        raise
    return listener


_listening: DapFrontend | None = None   # the `--listen` server, told when the program ends


def start(connect: tuple[str, int] | None = None, listen: tuple[str, int] | None = None,
          announce: Callable[[str], None] = print, wait: bool = False) -> DapFrontend:
    """Attach an engine with a DAP front end: connected to the stdio adapter
    (`connect`) or serving `listen`. The program waits for the client's
    configurationDone when connected, or with `wait`. The socket comes first:
    where it cannot be had (OSError), nothing is attached."""
    global _listening
    from dyndbg.attach import start_engine
    from dyndbg.dap.requests import Requests
    from dyndbg.engine.debugger import Engine
    connection = socket.create_connection(connect, timeout=30) if connect is not None else None
    listener = _listener(*listen) if listen is not None else None
    frontend = DapFrontend()
    engine = Engine(frontend)
    frontend.engine = engine
    frontend.requests = Requests(frontend, engine)
    start_engine(engine)
    engine.set_continue()   # no stop until the client asks for one
    if connection is not None:
        connection.settimeout(None)
        frontend.serve(connection)
    if listener is not None:
        host, port = listener.getsockname()[:2]
        announce(f"dyndbg: listening on {host}:{port}")
        frontend.accept(listener)
        _listening = frontend
    if connection is not None or wait:
        wait_for_configuration(frontend)
    return frontend


def wait_for_configuration(frontend: DapFrontend) -> None:
    """Block the program until the client has sent configurationDone."""
    while not frontend.configured.wait(0.5):
        pass


def listening() -> DapFrontend | None:
    """The `--listen` (or dyndbg.listen()) server of this process, if any."""
    return _listening


def program_ended(status: int) -> None:
    """The program is ending: a `--listen` client has no process to watch."""
    if _listening is not None:
        _listening.program_ended(status)
