"""Stops while dynamo compiles: where dynamo's symbolic execution stops, and how
it is stepped (`catch trace`, `b --trace`, and s/n/r/c at a compile stop).

The engine's other half (debugger.py) stops in the code dynamo generated;
this one stops in the user's code as dynamo interprets it. The hooks into
dynamo are dynamo/symbolic/state.py's, installed only once a trace
catchpoint or breakpoint exists: until then compiling costs nothing more.
With one set, only the translators that can stop are watched instruction by
instruction: a frame a catchpoint names, one whose file holds a trace
breakpoint, and while stepping the frame being stepped and what it inlines.

Stepping is per compile: a compile that ends ends it (one line says so),
and the next compile stop is the next catchpoint or breakpoint. A compile
started while the program is stopped (an expression at a stop calls a
compiled function), or while another thread is stopped, makes no stop:
one line says so, and dynamo goes on.
"""
from __future__ import annotations

import enum
import os
from typing import Any, Callable, NamedTuple, Protocol

from dyndbg.dynamo.symbolic import SymbolicState, CompilePoint, compile_id
from dyndbg.dynamo.symbolic import CompileStopHooks
from dyndbg.dynamo.versions import torch_version
from dyndbg.dynamo.compiles import BreakReason
from dyndbg.engine.breakpoints import Breakpoint, BreakpointTable
from dyndbg.engine.stop import CompileStop, HeldStop
from dyndbg.engine.exceptions import PASSES_THROUGH
from dyndbg.engine.threads import ENGINE_LOCK
from dyndbg.engine.targets import CompileCatchTarget, CompileLineTarget


class CompileStep(enum.Enum):
    CONTINUE = "continue"    # the next catchpoint, breakpoint, graph break or restart
    STEP = "step"            # the next instruction dynamo interprets, inlined calls included
    NEXT = "next"            # the next one at this depth or shallower (over inlined calls)
    RETURN = "return"        # the next one shallower: the traced or inlined function is done
    NEXT_LINE = "nextline"   # the next of the user's lines in this function, or its caller's
    STEP_LINE = "stepline"   # as NEXT_LINE, or the first line of a call dynamo inlines


class CompileStepMode(NamedTuple):
    kind: CompileStep = CompileStep.CONTINUE
    depth: int = 0            # the depth stepped from
    compile_id: str = ""      # the compile being stepped
    line: int | None = None   # NEXT_LINE, STEP_LINE: the line stepped from
    tx: Any = None            # NEXT_LINE, STEP_LINE: the translator stepped in

    def steps_in(self, cid: str) -> bool:
        """Stepping, in the compile `cid`."""
        return self.kind is not CompileStep.CONTINUE and self.compile_id == cid

    @property
    def into_calls(self) -> bool:
        """Stops in a call dynamo inlines (whose translator must be watched)."""
        return self.kind in (CompileStep.STEP, CompileStep.STEP_LINE)


class _PendingStart(NamedTuple):
    """A frame a trace catchpoint names: its first instruction stops."""

    tx: Any                                # dynamo's translator
    catchpoints: list[Breakpoint]


class CompileStopFrontend(Protocol):
    """What the stepper needs of the engine's front end (debugger.Frontend)."""

    def interact_compile(self, stop: CompileStop) -> None: ...
    def message(self, text: str) -> None: ...


class CompileStepper:
    def __init__(self, breakpoints: BreakpointTable, frontend: CompileStopFrontend,
                 report_error: Callable[[str, BaseException], None],
                 held: HeldStop | None = None) -> None:
        self.breakpoints = breakpoints
        self.frontend = frontend
        self.hooks = CompileStopHooks(self, report_error, PASSES_THROUGH)
        self.mode = CompileStepMode()
        self.held = held if held is not None else HeldStop()   # the engine's: the stop it is at
        self._stopped_in: set[str] = set()     # compile ids with a stop: their breaks stop too
        self._started: set[str] = set()        # compile ids whose START stop was made
        self._pending: _PendingStart | None = None
        # co_filename -> whether a trace breakpoint names it, for the table's version
        self._files: dict[str, bool] = {}
        self._files_version = -1

    def catch(self, pattern: str = "*") -> Breakpoint:
        """`catch trace PATTERN`: stop when dynamo starts tracing a matching
        function (where this torch cannot, one line says so)."""
        bp = self.breakpoints.add(CompileCatchTarget("trace", pattern=pattern))
        unavailable = self.arm()
        if unavailable:
            self.frontend.message(unavailable)
        return bp

    # -- arming ------------------------------------------------------------------------
    def arm(self) -> str | None:
        """A trace catchpoint or breakpoint was set: watch dynamo from now on.
        Where this torch lacks what that needs, one line saying so (nothing
        is installed, and no compile stop happens)."""
        missing = self.hooks.missing()
        if missing is not None:
            return (f"dyndbg: no stops while dynamo compiles with torch {torch_version()}: "
                    f"it has no {missing}")
        self.hooks.install()
        return None

    def disarm(self) -> None:
        self.hooks.uninstall()
        self.mode = CompileStepMode()

    def compile_ended(self) -> None:
        """Stepping does not go on into the next compile: one line says so."""
        if self.mode.kind is not CompileStep.CONTINUE:
            self.frontend.message(f"dyndbg: compile {self.mode.compile_id} ended; the step "
                                  "ends with it (a catch trace or b --trace stops in the "
                                  "next compile)")
        self.mode = CompileStepMode()
        self._pending = None
        self.hooks.forget()

    def set_mode(self, kind: CompileStep, stop: CompileStop) -> None:
        state = stop.state
        self.mode = CompileStepMode(kind, state.depth, stop.compile_id, state.line, state.tx)
        if kind is not CompileStep.CONTINUE:
            self.hooks.watch_chain(state.tx)   # every level it may stop in next

    # -- the listener dynamo's hooks call -------------------------------------------------
    def watches(self, state: SymbolicState) -> bool:
        """A translator starts: whether its instructions are to be reported."""
        cid, _ = compile_id()
        if state.is_root:
            catches = self._catches(state)
            if catches and cid not in self._started:
                self._started.add(cid)
                self._pending = _PendingStart(state.tx, catches)
                return True
            if catches or cid in self._stopped_in:
                return True
        elif self.mode.into_calls and self.mode.compile_id == cid:
            return True
        return self._has_line_breakpoints(state.code.co_filename)

    def at(self, state: SymbolicState, reason: BreakReason | None, cause: str = "") -> None:
        cid, attempt = compile_id()
        point = state.point
        hits: list[Breakpoint] = []
        if point is CompilePoint.INSTRUCTION:
            pending = self._pending
            if pending is not None and pending.tx is state.tx:
                self._pending = None
                point = CompilePoint.START
                hits = self._take(pending.catchpoints, state)
            else:
                hits = self._line_hits(state)
            if not hits and not self._mode_stops(state, cid):
                return
        elif point is CompilePoint.RETURN:
            if not self.mode.steps_in(cid):
                return
        elif cid not in self._stopped_in and not self.mode.steps_in(cid):
            return     # a graph break or restart in a compile not being debugged
        self._stop(CompileStop(point, SymbolicState(state.tx, point), cid, attempt, tuple(hits),
                             reason, cause))

    # -- deciding ------------------------------------------------------------------------
    def _catches(self, state: SymbolicState) -> list[Breakpoint]:
        return [bp for bp in self.breakpoints if bp.enabled and
                isinstance(bp.target, CompileCatchTarget) and bp.target.matches(state.code)]

    def _line_breakpoints(self) -> list[Breakpoint]:
        return [bp for bp in self.breakpoints
                if bp.enabled and isinstance(bp.target, CompileLineTarget)]

    def _has_line_breakpoints(self, filename: str) -> bool:
        if self._files_version != self.breakpoints.version:   # added, enabled, deleted
            self._files.clear()
            self._files_version = self.breakpoints.version
        known = self._files.get(filename)
        if known is None:
            known = self._files[filename] = any(
                bp.target.file_matches(filename) for bp in self._line_breakpoints())  # type: ignore[attr-defined]  # CompileLineTarget
        return known

    def _line_hits(self, state: SymbolicState) -> list[Breakpoint]:
        filename = state.code.co_filename
        if not self._has_line_breakpoints(filename) or not state.starts_line():
            return []
        line = state.line
        reached = [bp for bp in self._line_breakpoints()
                   if bp.target.line == line and bp.target.file_matches(filename)]  # type: ignore[attr-defined]  # CompileLineTarget
        return self._take(reached, state) if reached else []

    def _take(self, reached: list[Breakpoint], state: SymbolicState) -> list[Breakpoint]:
        """Of those reached, those that stop; conditions see what `p` sees
        there, and can change nothing dynamo compiles (read_only)."""
        def evaluate(expression: str) -> object:
            with state.read_only():
                return eval(expression, state.globals(), state.namespace())
        return self.breakpoints.take([(bp, None) for bp in reached], evaluate,
                                     self.frontend.message)

    def _mode_stops(self, state: SymbolicState, cid: str) -> bool:
        mode = self.mode
        if not mode.steps_in(cid):
            return False
        if mode.kind is CompileStep.STEP:
            return True
        if mode.kind is CompileStep.NEXT:
            return state.depth <= mode.depth
        if mode.kind is CompileStep.RETURN:
            return state.depth < mode.depth
        if state.depth < mode.depth or (state.tx is not mode.tx and state.depth == mode.depth):
            return True                        # back in a caller (or a new attempt's frame)
        if state.tx is mode.tx:
            return state.line is not None and state.line != mode.line
        return mode.kind is CompileStep.STEP_LINE and not state.in_prologue()

    def _stop(self, stop: CompileStop) -> None:
        self.mode = CompileStepMode()                # the front end sets the next one
        # One thread in the engine at a time. Not waiting for another thread's
        # stop: this thread holds dynamo's compile lock, which that stop may
        # need (an expression there that compiles).
        if self.held.current is not None:
            self._no_stop(stop, "the program is")
            return
        if not ENGINE_LOCK.acquire(blocking=False):
            self._no_stop(stop, "another thread is")
            return
        self._stopped_in.add(stop.compile_id)
        try:
            with self.held.holding(stop):
                self.frontend.interact_compile(stop)
        finally:
            ENGINE_LOCK.release()


    def _no_stop(self, stop: CompileStop, who: str) -> None:
        self.frontend.message(f"dyndbg: dynamo compiles {stop.state.root_function} "
                              f"[{stop.compile_id}] while {who} stopped: no stop in that "
                              "compile")


def compile_line_target(spec: str) -> CompileLineTarget | None:
    """FILE:LINE as `b --trace` takes it; None if SPEC is not that."""
    filename, sep, line = spec.strip().rpartition(":")
    if not sep or not filename or not line.isdigit():
        return None
    return CompileLineTarget(os.path.expanduser(filename), int(line))
