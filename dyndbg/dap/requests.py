"""The client's requests, by family, and what happens at each stop.

A request `foo` is served by the method `r_foo` of one of the families
(`dyndbg/guards` by `r_dyndbg_guards`); each returns the response body.
Inspection at a stop goes through the prompt's own Session (stack, locals,
guards, evaluation): no second copy of that logic.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

from dyndbg.dap.breakpoint_requests import BreakpointRequests
from dyndbg.dap.capabilities import CAPABILITIES, catch_trace_pattern
from dyndbg.dap.code_requests import CodeRequests
from dyndbg.dap.protocol import RequestError
from dyndbg.dap.stop_requests import StopRequests, refuse_in_console
from dyndbg.dap.compile_stop_requests import PREFIX, CompileStopRequests, stop_text
from dyndbg.dap.graph_stop_requests import GraphStopRequests, stop_description
from dyndbg.dynamo.compiles import GeneratedCode
from dyndbg.engine.stop import Stop, StopReason
from dyndbg.engine.threads import ENGINE_LOCK
from dyndbg.ui.session import CommandOutput, Session
from dyndbg.ui.text.values import exception_text

if TYPE_CHECKING:
    from dyndbg.dap.hub import Frontend
    from dyndbg.engine.debugger import Engine
    from dyndbg.engine.stop import CompileStop, GraphStop


class QuietReader:
    """The inspection session never reads commands: the client sends them."""

    interactive = False

    def read(self, prompt: str) -> str | None:
        return None


def inspection_session(engine: "Engine") -> Session:
    session = Session(None, no_color=True)
    session.reader = QuietReader()
    session.engine = engine
    return session


class ThreadIds:
    """DAP thread ids are int32: 1 for the main thread, then 2, 3, ... in the
    order threads are first seen."""

    def __init__(self) -> None:
        self._ids: dict[int, int] = {threading.main_thread().ident or 0: 1}

    def of(self, thread: threading.Thread) -> int:
        ident = thread.ident or 0
        if ident not in self._ids:
            self._ids[ident] = len(self._ids) + 1
        return self._ids[ident]

    def program_threads(self) -> list[threading.Thread]:
        """The program's threads, without dyndbg's own."""
        return [t for t in threading.enumerate() if not t.name.startswith("dyndbg-")]


class Requests:
    def __init__(self, frontend: "Frontend", engine: "Engine") -> None:
        self.frontend = frontend
        self.engine = engine
        self.session = inspection_session(engine)
        self.threads = ThreadIds()
        self.stop_thread = 1
        self.stop_on_entry = False
        self.entry_pending = False       # the next step stop is the launch's entry
        self.pausing = False              # the next step stop answers a `pause`
        # Run after the response to a request is sent (the spec's order).
        self.after_response: dict[str, Callable[[], None]] = {}
        self.stops = StopRequests(self)
        self.breaks = BreakpointRequests(self)
        self.code = CodeRequests(self)
        self.compile_requests = CompileStopRequests(self, self.stops.refs)
        self.graph_requests = GraphStopRequests(self, self.stops.refs)
        self._families = (self, self.stops, self.breaks, self.code)
        # The registry tells the engine of new code; the client hears of it after.
        told_engine = engine.registry.on_add

        def on_add(entry: GeneratedCode) -> None:
            # On the compiling thread: the reader thread changes breakpoints
            # under this lock while the program runs.
            with ENGINE_LOCK:
                if told_engine is not None:
                    told_engine(entry)
                self.code_added(entry)
        engine.registry.on_add = on_add

    # -- the stop: the engine holds it; the client is told of it while it is served -----
    @property
    def stop(self) -> Stop | None:
        """The stop in generated code the client is stopped at."""
        return self.engine.held.generated if self.frontend.stopped else None

    @property
    def compile_stop(self) -> CompileStop | None:
        """The compile stop the client is stopped at."""
        return self.engine.held.compile if self.frontend.stopped else None

    @property
    def graph_stop(self) -> GraphStop | None:
        """The stop inside a compiled graph the client is stopped at."""
        return self.engine.held.graph if self.frontend.stopped else None

    def code_added(self, entry: GeneratedCode) -> None:
        """Runs while dynamo compiles: nothing may escape into it."""
        try:
            self.code.code_added(entry)
            self.breaks.code_added(entry)
        except Exception as error:  # noqa: BLE001 - reached from dynamo's compile
            self.frontend.output(f"dyndbg: internal error telling the editor of new code: "
                                 f"{type(error).__name__}: {exception_text(error)}")

    def handler(self, command: str) -> Callable[[dict], dict | None] | None:
        if self.compile_stop is not None:   # at a compile stop, its own first
            found = self.compile_requests.handler(command)
            if found is not None:
                return found
        if self.graph_stop is not None:     # at a graph stop, its own first
            found = self.graph_requests.handler(command)
            if found is not None:
                return found
        name = "r_" + command.replace("/", "_")
        for family in self._families:
            found = getattr(family, name, None)
            if found is not None:
                return found
        return None

    def event(self, name: str, body: dict | None = None) -> None:
        channel = self.frontend.channel
        if channel is not None:
            channel.event(name, body)

    def console_command(self, command: str, typed: bool = False) -> CommandOutput:
        """Run one of the prompt's commands: what it shows in the console, and
        its errors. `typed` in the debug console: what moves the program is
        refused."""
        return self.session.run_line(command, refuse_in_console if typed else None)

    # -- stops --------------------------------------------------------------------------
    def skips(self, stop: Stop) -> bool:
        """A stop the client's exception filters turn down."""
        return stop.reason is StopReason.EXCEPTION and not self.breaks.wants_exception_stops

    def stopped(self, stop: Stop) -> None:
        self.stop_thread = self.threads.of(threading.current_thread())
        self.session.enter(stop)
        shown = self.session.output_of(lambda: self.session.print_stop(stop)).text
        if shown:
            self.frontend.output(shown)
        reason = self._reason(stop)
        from dyndbg.ui.text import render
        body = {"reason": reason, "threadId": self.stop_thread,
                "description": render.location_line(stop.entry.label(), stop.info, stop.instr,
                                                    render.renamer(stop.frame))
                .lstrip("> ").strip(),
                "allThreadsStopped": False, "preserveFocusHint": False}
        if stop.breakpoints:
            body["hitBreakpointIds"] = [bp.number for bp in stop.breakpoints]
        if stop.exception is not None:
            body["text"] = f"{type(stop.exception).__name__}: {exception_text(stop.exception)}"
        else:
            from dyndbg.ui.text import boundaries
            graph_break = boundaries.break_at(stop)
            if graph_break is not None:
                body["text"] = graph_break.one_line()
        self.event("stopped", body)

    def _reason(self, stop: Stop) -> str:
        """The stop's reason; the entry and pause it may answer end with it."""
        entry, pause = self.entry_pending, self.pausing
        self.entry_pending = self.pausing = False
        if stop.reason in (StopReason.EXCEPTION, StopReason.POST_MORTEM):
            return "exception"
        if stop.reason is StopReason.BREAKPOINT:
            return self.breaks.reason_for(stop.breakpoints)
        return "entry" if entry else "pause" if pause else "step"

    def compile_stopped(self, stop: CompileStop) -> None:
        """A stop while dynamo compiles: what the prompt prints, then the event."""
        self.stop_thread = self.threads.of(threading.current_thread())
        session = self.session
        described: list[tuple[str, str | None]] = []

        def show() -> None:
            # What is shown reads dynamo's state: where that fails, the stop is still made.
            try:
                session.compile_commands.print_stop(stop)
                described.append(stop_text(stop))
            except Exception as error:  # noqa: BLE001 - reached from dynamo's compile
                session.error(f"cannot show this stop: {type(error).__name__}: "
                              f"{exception_text(error)}")
                described.append((f"{PREFIX}[compile {stop.trace_id}]", None))
        shown = session.output_of(show).text
        description, text = described[0]
        if shown:
            self.frontend.output(shown)
        body = {"reason": self.compile_requests.reason(stop), "threadId": self.stop_thread,
                "description": description, "allThreadsStopped": False,
                "preserveFocusHint": False}
        if text is not None:
            body["text"] = text
        self.event("stopped", body)

    def graph_stopped(self, stop: GraphStop) -> None:
        """A stop inside a compiled graph: what the prompt prints, then the event."""
        self.stop_thread = self.threads.of(threading.current_thread())
        session = self.session
        shown = session.output_of(lambda: session.graph_commands.print_stop(stop)).text
        if shown:
            self.frontend.output(shown)
        self.event("stopped", {"reason": "breakpoint" if stop.breakpoints else "step",
                               "threadId": self.stop_thread,
                               "description": stop_description(stop, shown),
                               "allThreadsStopped": False, "preserveFocusHint": False})

    def resumed(self) -> None:
        self.stops.forget_stop()
        self.compile_requests.forget_stop()

    # -- the session's life -----------------------------------------------------------------
    def r_initialize(self, arguments: dict) -> dict:
        return CAPABILITIES

    def r_launch(self, arguments: dict) -> None:
        self._configure(arguments, "launch")

    def r_attach(self, arguments: dict) -> None:
        self._configure(arguments, "attach")

    def _configure(self, arguments: dict, command: str) -> None:
        if command == "attach" and arguments.get("catchTrace") is not None:
            # `launch` passes it on the program's command line (adapter.py): set already.
            try:
                self.engine.compile_stops.catch(catch_trace_pattern(arguments["catchTrace"]))
            except ValueError as error:
                raise RequestError(str(error)) from None
        self.stop_on_entry = bool(arguments.get("stopOnEntry", False))
        self.after_response[command] = lambda: self.event("initialized")

    def r_configurationDone(self, arguments: dict) -> None:
        if self.stop_on_entry:
            self.entry_pending = True
            self.engine.set_step()
        elif not self.engine.detached:
            self.engine.set_continue()
        self.frontend.configured.set()

    def r_threads(self, arguments: dict) -> dict:
        threads = self.threads.program_threads()
        return {"threads": [{"id": self.threads.of(t), "name": t.name} for t in threads]}

    def r_pause(self, arguments: dict) -> None:
        if self.stop is not None:
            return   # already stopped
        self.pausing = True
        self.engine.set_step()   # from this thread, as a breakpoint set while running
        self.frontend.output("dyndbg: pausing at the next dynamo-generated instruction to "
                             "run; ordinary Python code runs on until then")

    def r_disconnect(self, arguments: dict) -> None:
        self.detach()

    r_terminate = r_disconnect

    def detach(self) -> None:
        """The program runs on without the debugger."""
        if not self.engine.detached:
            self.engine.detach()
            self.frontend.output("dyndbg: detached; the program runs to its end")
        self.frontend.configured.set()

    def checked_stop(self) -> Stop:
        if self.stop is None:
            raise RequestError("no thread is stopped")
        return self.stop
