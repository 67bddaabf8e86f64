"""The tracing policy: which generated frames are traced, and how much.

Only dynamo-generated frames are ever traced, and only where a stop is
possible: while stepping, every generated instruction; after `continue`, the
armed instructions of code holding enabled breakpoints (see ArmingPlan), and
the starts, returns and exceptions of frames that need them. The tracing
mechanisms (settrace.py, monitoring.py) ask these questions; the engine sets
`stepping`, `failed_calls` and `history`.
"""
from __future__ import annotations

import types

from dyndbg.cpython import entry_names_may_change
from dyndbg.dynamo import GeneratedCode, Registry
from dyndbg.dynamo.names import RESUME_GLOBAL, resume_code
from dyndbg.engine.breakpoints import ArmingPlan, BreakpointTable
from dyndbg.engine.targets import MarkerTarget
from dyndbg.engine.codeinfo import code_info
from dyndbg.engine.modes import CodeNeeds, TraceLevel


def keeps_entry_names(entry: GeneratedCode) -> bool:
    """What a frame of the code had bound at its start (its arguments and free
    variables, which the guards read) is bound alike at any stop (computed once
    per code): read there, not kept from the start."""
    keeps = entry.extra.get("keeps_entry_names")
    if keeps is None:
        keeps = entry.extra["keeps_entry_names"] = not entry_names_may_change(entry.code)
    return keeps


def _resume_globals(entry: GeneratedCode) -> list[str]:
    """The `__resume_at_*` globals the code loads (computed once per code)."""
    names = entry.extra.get("resume_globals")
    if names is None:
        names = entry.extra["resume_globals"] = [
            n for n in entry.code.co_names if RESUME_GLOBAL.fullmatch(n)]
    return names


class TracePolicy:
    def __init__(self, registry: Registry, breakpoints: BreakpointTable) -> None:
        self.registry = registry
        self.breakpoints = breakpoints
        # Every generated instruction is delivered: it may stop, or `trace on`
        # shows it (read on every event).
        self.stepping = True
        self.failed_calls = False  # --post-mortem: the stacks of calls an exception leaves are kept
        self.history = False       # `record on`: every generated instruction is recorded
        self.instruction_trace = False      # `trace on`: every instruction, start and return is shown
        self._plans: dict[int, ArmingPlan] = {}   # id(code) -> its plan, for `version`
        self._plans_version: object = None

    @property
    def version(self) -> object:
        """Changes whenever a per-code decision of trace_level may change in
        continue mode (mechanisms cache those per code object)."""
        return (self.breakpoints.version, self.failed_calls, self.instruction_trace, self.history)

    def idle(self) -> bool:
        """Nothing can stop (or be recorded) after continue. Once some code
        holds torch's markers, never: unhooked, torch would start its own
        debugger there."""
        if self.registry.has_markers or self.failed_calls or self.history:
            return False
        return not any(bp.enabled and not isinstance(bp.target, MarkerTarget)
                       and not bp.target.compile_time   # stops while dynamo compiles only
                       and not bp.target.graph_time     # stops inside a graph's run only
                       for bp in self.breakpoints)

    def wants_callback(self, mechanism_needs_it: bool) -> bool:
        """torch's C callback, before every run of generated code: only while
        the mechanism needs it and something can stop; always once some code
        holds torch's markers (unhooked, torch would start its own debugger)."""
        if self.registry.has_markers:
            return True
        return mechanism_needs_it and (self.stepping or not self.idle())

    def trace_level(self, entry: GeneratedCode, frame: types.FrameType | None = None,
                    recording: bool = True) -> TraceLevel:
        """How much of a generated frame must be traced for every possible stop
        (and, with `recording`, for --post-mortem's record of failed calls and
        for the history: everything, while `record on`).

        Without the frame (per code object) the answer errs towards tracing.
        """
        if self.stepping and (recording or not self.history):
            return TraceLevel.EVERY
        level = self.stop_level(entry, frame)
        if level is TraceLevel.NONE and recording and self.failed_calls:
            return TraceLevel.CALLS
        return level

    def stop_level(self, entry: GeneratedCode, frame: types.FrameType | None = None) -> TraceLevel:
        """trace_level after continue for the stops alone: what breakpoints and
        catchpoints need, without what `trace on`, `record on` and
        --post-mortem add (they change what is shown and kept, never where
        the program stops)."""
        if self.breakpoints.armed(entry, code_info(entry.extra, entry.code)):
            return TraceLevel.ARMED
        if self.breakpoints.catches_exceptions() or self._calls_watched_resume(entry, frame):
            return TraceLevel.CALLS
        return TraceLevel.NONE

    def exception_stops(self, entry: GeneratedCode, frame: types.FrameType, stepping: bool,
                        stopped_before: bool) -> bool:
        """An exception raised in `frame` stops where it would without `trace
        on` and `record on`: while stepping, where a breakpoint or catchpoint
        makes a stop possible, or in a frame that has stopped before (it stays
        traced until it returns) unless --post-mortem waits for the exception
        to end the program, which is what that option asks for."""
        if stepping or self.stop_level(entry, frame) is not TraceLevel.NONE:
            return True
        return stopped_before and not self.failed_calls

    def code_needs(self, entry: GeneratedCode) -> CodeNeeds:
        """trace_level, per code object and in parts. What a frame had bound at
        its start serves the explanations at a stop: kept at the start only
        where a stop is possible and the bindings may change (else they are
        read at the stop). `trace on` shows every start and return."""
        level = self.trace_level(entry)
        stops = level >= TraceLevel.ARMED or self.breakpoints.catches_exceptions()
        return CodeNeeds(level if level >= TraceLevel.ARMED else TraceLevel.NONE,
                         (stops and not keeps_entry_names(entry)) or self.instruction_trace,
                         self.watches_resume_calls(entry), level >= TraceLevel.CALLS)

    def watches_resume_calls(self, entry: GeneratedCode) -> bool:
        """Calls from `entry` into resume functions must be seen: one dynamo
        declined to compile runs without torch's C callback."""
        if not (self.stepping or self.breakpoints.watches_resume_calls()):
            return False
        return bool(_resume_globals(entry))

    def _calls_watched_resume(self, entry: GeneratedCode, frame: types.FrameType | None) -> bool:
        if not self.breakpoints.watches_resume_calls():
            return False
        names = _resume_globals(entry)
        if frame is None:
            return bool(names)
        for name in names:
            code = resume_code(frame.f_globals.get(name))
            if code is None or self.registry.has_transform(code):
                continue
            resume = self.registry.get(code)
            if resume is not None and \
                    self.breakpoints.armed(resume, code_info(resume.extra, resume.code)):
                return True
        return False

    def arming_plan(self, entry: GeneratedCode) -> ArmingPlan:
        """Which instructions of `entry` can stop after continue, and how to reach them."""
        if self._plans_version != self.version:
            self._plans.clear()
            self._plans_version = self.version
        plan = self._plans.get(id(entry.code))
        if plan is None:
            info = code_info(entry.extra, entry.code)
            plan = self._plans[id(entry.code)] = ArmingPlan(
                set(self.breakpoints.armed(entry, info)), info)
        return plan
