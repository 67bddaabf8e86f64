"""Stops while dynamo compiles: where dynamo's symbolic trace stops, and how
it is stepped (`catch trace`, `b --trace`, and s/n/r/c at a trace stop).

The engine's other half (debugger.py) stops in the code dynamo generated;
this one stops in the user's code as dynamo interprets it. The hooks into
dynamo are dynamo/symbolic_trace.py's, installed only once a trace
catchpoint or breakpoint exists: until then compiling costs nothing more.
With one set, only the translators that can stop are watched instruction by
instruction: a frame a catchpoint names, one whose file holds a trace
breakpoint, and while stepping the frame being stepped and what it inlines.

Stepping is per compile: a compile that ends ends it, and the next trace
stop is the next catchpoint or breakpoint.
"""
from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Protocol

from dyndbg.dynamo.break_reasons import BreakReason
from dyndbg.dynamo.symbolic_trace import SymbolicState, TraceHooks, TracePoint, compile_id
from dyndbg.dynamo.versions import torch_version
from dyndbg.engine.breakpoints import Breakpoint, BreakpointTable
from dyndbg.engine.exceptions import PASSES_THROUGH
from dyndbg.engine.threads import ENGINE_LOCK
from dyndbg.engine.targets import TraceCatchTarget, TraceLineTarget


class TraceStep(enum.Enum):
    CONTINUE = "continue"    # the next catchpoint, breakpoint, graph break or restart
    STEP = "step"            # the next instruction dynamo interprets, inlined calls included
    NEXT = "next"            # the next one at this depth or shallower (over inlined calls)
    RETURN = "return"        # the next one shallower: the traced or inlined function is done


class TraceMode(NamedTuple):
    kind: TraceStep = TraceStep.CONTINUE
    depth: int = 0            # NEXT, RETURN: the depth stepped from
    compile_id: str = ""      # the compile being stepped


@dataclass
class TraceStop:
    """A stop while dynamo compiles."""

    point: TracePoint
    state: SymbolicState
    compile_id: str                        # "1/0"
    attempt: int                           # 0; 1 after a restart
    breakpoints: list[Breakpoint] = field(default_factory=list)
    reason: BreakReason | None = None      # GRAPH_BREAK: torch's reason; RESTART: why

    @property
    def trace_id(self) -> str:
        """As TORCH_LOGS writes it: "0/0", then "0/0_1" for the attempt after a restart."""
        return self.compile_id + (f"_{self.attempt}" if self.attempt else "")


class TraceFrontend(Protocol):
    """What the stepper needs of the engine's front end (debugger.Frontend)."""

    def interact_trace(self, stop: TraceStop) -> None: ...
    def message(self, text: str) -> None: ...


class TraceStepper:
    def __init__(self, breakpoints: BreakpointTable, frontend: TraceFrontend,
                 report_error: Callable[[str, BaseException], None]) -> None:
        self.breakpoints = breakpoints
        self.frontend = frontend
        self.hooks = TraceHooks(self, report_error, PASSES_THROUGH)
        self.mode = TraceMode()
        self.at_prompt = False
        self._stopped_in: set[str] = set()     # compile ids with a stop: their breaks stop too
        self._started: set[str] = set()        # compile ids whose START stop was made
        self._start_pending: int | None = None  # id() of the translator to stop at START
        self._start_hits: list[Breakpoint] = []
        self._files: dict[str, bool] = {}      # co_filename -> has a trace breakpoint's file

    # -- arming ------------------------------------------------------------------------
    def arm(self) -> str | None:
        """A trace catchpoint or breakpoint was set: watch dynamo from now on.
        Where this torch lacks what that needs, one line saying so (nothing
        is installed, and no trace stop happens)."""
        self._files.clear()
        missing = self.hooks.missing()
        if missing is not None:
            return (f"dyndbg: no stops while dynamo compiles with torch {torch_version()}: "
                    f"it has no {missing}")
        self.hooks.install()
        return None

    def disarm(self) -> None:
        self.hooks.uninstall()
        self.mode = TraceMode()

    def compile_ended(self) -> None:
        """Stepping does not go on into the next compile."""
        self.mode = TraceMode()
        self._start_pending = None

    def set_mode(self, kind: TraceStep, stop: TraceStop) -> None:
        state = stop.state
        self.mode = TraceMode(kind, state.depth, stop.compile_id)
        if kind is not TraceStep.CONTINUE:
            self.hooks.watch_chain(state.tx)   # every level it may stop in next

    # -- the listener dynamo's hooks call -------------------------------------------------
    def watches(self, state: SymbolicState) -> bool:
        """A translator starts: whether its instructions are to be reported."""
        cid, _ = compile_id()
        if state.is_root:
            catches = self._catches(state)
            if catches and cid not in self._started:
                self._started.add(cid)
                self._start_pending = id(state.tx)
                self._start_hits = catches
                return True
            if catches or cid in self._stopped_in:
                return True
        elif self.mode.kind is TraceStep.STEP and self.mode.compile_id == cid:
            return True
        return self._has_line_breakpoints(state.code.co_filename)

    def at(self, state: SymbolicState, reason: BreakReason | None) -> None:
        cid, attempt = compile_id()
        point = state.point
        hits: list[Breakpoint] = []
        if point is TracePoint.INSTRUCTION:
            if self._start_pending == id(state.tx):
                self._start_pending = None
                point = TracePoint.START
                hits = self.breakpoints.take([(bp, None) for bp in self._start_hits],
                                             lambda _: True, self.frontend.message)
                if not hits and not self._mode_stops(state, cid):
                    return
            else:
                hits = self._line_hits(state)
                if not hits and not self._mode_stops(state, cid):
                    return
        elif point is TracePoint.RETURN:
            if self.mode.kind is TraceStep.CONTINUE or self.mode.compile_id != cid:
                return
        elif cid not in self._stopped_in and not (
                self.mode.kind is not TraceStep.CONTINUE and self.mode.compile_id == cid):
            return     # a graph break or restart in a compile not being debugged
        self._stop(TraceStop(point, SymbolicState(state.tx, point), cid, attempt, hits, reason))

    # -- deciding ------------------------------------------------------------------------
    def _catches(self, state: SymbolicState) -> list[Breakpoint]:
        return [bp for bp in self.breakpoints if bp.enabled and
                isinstance(bp.target, TraceCatchTarget) and bp.target.matches(state.code)]

    def _line_breakpoints(self) -> list[Breakpoint]:
        return [bp for bp in self.breakpoints
                if bp.enabled and isinstance(bp.target, TraceLineTarget)]

    def _has_line_breakpoints(self, filename: str) -> bool:
        known = self._files.get(filename)
        if known is None:
            known = self._files[filename] = any(
                bp.target.file_matches(filename) for bp in self._line_breakpoints())  # type: ignore[attr-defined]  # TraceLineTarget
        return known

    def _line_hits(self, state: SymbolicState) -> list[Breakpoint]:
        filename = state.code.co_filename
        if not self._has_line_breakpoints(filename) or not state.starts_line():
            return []
        line = state.line
        reached = [(bp, None) for bp in self._line_breakpoints()
                   if bp.target.line == line and bp.target.file_matches(filename)]  # type: ignore[attr-defined]  # TraceLineTarget
        if not reached:
            return []
        namespace = state.namespace()
        return self.breakpoints.take(reached, lambda expr: eval(expr, {}, namespace),
                                     self.frontend.message)

    def _mode_stops(self, state: SymbolicState, cid: str) -> bool:
        mode = self.mode
        if mode.kind is TraceStep.CONTINUE or mode.compile_id != cid:
            return False
        if mode.kind is TraceStep.STEP:
            return True
        if mode.kind is TraceStep.NEXT:
            return state.depth <= mode.depth
        return state.depth < mode.depth        # RETURN

    def _stop(self, stop: TraceStop) -> None:
        self._stopped_in.add(stop.compile_id)
        self.mode = TraceMode()                # the front end sets the next one
        # One thread in the engine at a time, as at stops in generated code:
        # a compile-time stop waits while another thread is stopped.
        with ENGINE_LOCK:
            self.at_prompt = True
            try:
                self.frontend.interact_trace(stop)
            finally:
                self.at_prompt = False


def trace_line_target(spec: str) -> TraceLineTarget | None:
    """FILE:LINE as `b --trace` takes it; None if SPEC is not that."""
    filename, sep, line = spec.strip().rpartition(":")
    if not sep or not filename or not line.isdigit():
        return None
    return TraceLineTarget(os.path.expanduser(filename), int(line))
