"""The library entry points: set_trace(), breakpoint(), debug(), post_mortem().

Each is wrapped in torch.compiler.disable: called inside a compiled function,
dynamo breaks the graph there and the transformed code calls it, so the stop
lands in that dynamo frame right after the call; and dynamo never traces
dyndbg's own frames below it.
"""
from __future__ import annotations

import sys
import types
from typing import NamedTuple, TextIO

import torch

from dyndbg import attach as _attach
from dyndbg.engine.breakpoints import Breakpoint, Location
from dyndbg.engine.codeinfo import Instr
from dyndbg.engine.debugger import DyndbgQuit, Engine

_DISABLE_WRAPPER_FILE = torch._dynamo.eval_frame.__file__


def _engine(out: TextIO | None = None, commands: list[str] | None = None,
            no_color: bool = False) -> tuple[Engine, bool]:
    """The attached engine, or a new one (True when new)."""
    engine = _attach.current()
    if engine is not None:
        if commands:
            engine.frontend.pending.extend(commands)  # type: ignore[attr-defined]  # the prompt's Session
        return engine, False
    return _attach.attach(out or sys.stdout, commands, no_color), True


def _caller() -> types.FrameType | None:
    """The frame that called the entry point, above torch.compiler.disable's wrapper."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == _DISABLE_WRAPPER_FILE:
        frame = frame.f_back
    return frame


def _set_trace() -> None:
    engine, _ = _engine()
    engine.stop_soon(_caller(), "set_trace()")


def _breakpoint() -> None:
    engine, _ = _engine()
    engine.stop_soon(_caller(), "dyndbg.breakpoint()")


set_trace = torch.compiler.disable(_set_trace, reason="dyndbg.set_trace()")
set_trace.__doc__ = """Stop at the next dynamo-generated instruction to run.

Called from ordinary code, the stop comes when compiled code next runs;
called inside a compiled function (or through breakpoint() with
PYTHONBREAKPOINT=dyndbg.set_trace), right after the call, in the dynamo frame.
Starts a session on stdout/stdin if none is attached."""

breakpoint = torch.compiler.disable(_breakpoint, reason="dyndbg.breakpoint()")
breakpoint.__doc__ = """Inside a compiled function: dynamo breaks the graph here and
calls this from the transformed code; dyndbg stops in that dynamo frame right
after the call, at the graph boundary."""


def listen(port: int = 5678, host: str = "127.0.0.1") -> int:
    """Serve the Debug Adapter Protocol on HOST:PORT for an editor to attach
    to (as debugpy.listen); returns the port bound (PORT 0: any free one).
    Anyone who can reach the port can run code in this process: keep the
    host loopback unless the network is yours."""
    from dyndbg.dap import server
    if _attach.current() is not None:
        raise RuntimeError("dyndbg is already attached to this process")
    frontend = server.start(listen=(host, port),
                            announce=lambda text: print(text, file=sys.stderr, flush=True))
    if frontend.port is None:
        raise RuntimeError("the DAP server is not listening")
    return frontend.port


def wait_for_client() -> None:
    """After listen(): block until an editor has attached and sent its
    breakpoints (configurationDone)."""
    from dyndbg.dap import server
    frontend = server.listening()
    if frontend is None:
        raise RuntimeError("call dyndbg.listen() first")
    server.wait_for_configuration(frontend)


class GeneratedView(NamedTuple):
    """One code object dynamo generated, as dyndbg tracks it."""

    label: str                       # `f [0/0]`, as stops and listings name it
    function: str                    # the compiled function, or the resume function
    compile_id: str | None           # "0/1" as in TORCH_LOGS; None if never compiled
    code: types.CodeType
    instructions: tuple[Instr, ...]  # indexed as `ll` shows and `b INDEX` takes them


class LocationView(NamedTuple):
    """One place a breakpoint resolved to (gdb's `N.M`, as `b` lists it): a code
    object it arms, or for torch's markers (breakpoint 0) one marker in it."""

    number: str                      # "1.2": breakpoint 1, its second place
    where: str                       # as `b` lists it: `f [0/1]`, `f [0/0] instr 12`
    function: str                    # the compiled function, or the resume function
    compile_id: str | None           # "0/1" as in TORCH_LOGS
    code: types.CodeType | None      # None: a compiled graph holding the line
    instructions: tuple[int, ...]    # the indexes armed there (`ll` marks them B1, `B1?`)
    lines: tuple[int, ...]           # their source lines, in that order, each once
    enabled: bool                    # `disable 1.2` turns one place off
    hits: int                        # times reached there


class BreakpointView(NamedTuple):
    number: int
    kind: str                        # "break", "tbreak" or "catch"
    location: str                    # as `b` lists it
    enabled: bool
    condition: str | None
    hits: int
    locations: tuple[LocationView, ...] = ()   # its places, in the order they resolved


class debug:
    """`with dyndbg.debug(commands=[...]) as session:` stop in generated code
    run inside the block only; at its end the debugger detaches. `quit` ends
    the block (the exception does not propagate). `session.generated()` and
    `session.breakpoints()` tell what dyndbg tracks, in the block and after."""

    def __init__(self, commands: list[str] | None = None, out: TextIO | None = None,
                 no_color: bool = False) -> None:
        self.commands = list(commands or [])
        self.out = out
        self.no_color = no_color
        self.engine: Engine | None = None
        self._owned = False

    def __enter__(self) -> "debug":
        self.engine, self._owned = _engine(self.out, self.commands, self.no_color)
        if not self._owned:
            self.engine.stop_soon(None)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: types.TracebackType | None) -> bool:
        if self._owned and self.engine is not None:
            self.engine.close()
        return exc_type is not None and issubclass(exc_type, DyndbgQuit)

    def generated(self) -> list[GeneratedView]:
        """The generated code objects seen so far, in the order they were
        registered (compiled, or first seen)."""
        if self.engine is None:
            return []
        return [GeneratedView(entry.label(), entry.function, entry.compile_id, entry.code,
                              tuple(self.engine.info_for(entry).instructions))
                for entry in self.engine.registry.entries()]

    def breakpoints(self) -> list[BreakpointView]:
        """The breakpoints, by number: `number`, `kind`, `location` (as `b` lists
        it), `enabled`, `condition`, `hits`, and `locations`: each place it
        resolved to as a LocationView (`number` "1.2", `where`, `function`,
        `compile_id`, `code`, `instructions` armed there as `ll` indexes them,
        their `lines`, `enabled`, `hits`), in the order they resolved; a
        catchpoint or a pending breakpoint has none."""
        if self.engine is None:
            return []
        return [BreakpointView(bp.number, bp.kind, bp.target.describe(), bp.enabled,
                               bp.condition, bp.hits,
                               tuple(_location_view(self.engine, bp, loc)
                                     for loc in bp.locations))
                for bp in self.engine.breakpoints]


def _location_view(engine: Engine, bp: Breakpoint, location: Location) -> LocationView:
    entry = engine.registry.get(location.code) if location.code is not None else None
    instrs: list[Instr] = []
    if entry is not None and location.code is not None:
        info = engine.info_for(entry)
        armed = engine.breakpoints.at_code(entry, info)
        for offset in sorted(armed):
            if any(b is bp for b in armed[offset]) and \
                    bp.location_at(location.code, offset) is location:
                instr = info.at_offset(offset)
                if instr is not None:
                    instrs.append(instr)
    lines = tuple(dict.fromkeys(i.line for i in instrs if i.line is not None))
    return LocationView(f"{bp.number}.{location.number}", location.where,
                        entry.function if entry is not None else
                        location.code.co_name if location.code is not None else location.where,
                        entry.compile_id if entry is not None else None, location.code,
                        tuple(i.index for i in instrs), lines, location.enabled, location.hits)


def post_mortem(t: types.TracebackType | BaseException | None = None) -> None:
    """Open the REPL at the innermost dynamo-generated frame of a traceback,
    as it failed: the failing instruction, locals, guards, and the value stack
    as before that instruction where it was recorded (under
    `python -m dyndbg --post-mortem`). `t`: a traceback or an exception;
    default: the exception being handled, else the last uncaught one."""
    exc = t if isinstance(t, BaseException) else None
    tb = exc.__traceback__ if exc is not None else t
    if t is None:
        exc = sys.exc_info()[1] or getattr(sys, "last_value", None)
        tb = exc.__traceback__ if exc is not None else None
    if tb is None:
        raise ValueError("A valid traceback must be passed if no exception is being handled")
    engine, owned = _engine()
    if owned:
        engine.set_continue()  # compiled code run from the prompt does not stop
    try:
        if not engine.post_mortem(tb, exc):  # type: ignore[arg-type]  # a traceback here (tb or its exception's)
            engine.frontend.message("dyndbg: no dynamo-generated frame in this traceback")
    finally:
        if owned:
            engine.close()
