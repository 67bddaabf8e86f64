"""Tracing with sys.settrace: the mechanism on Python 3.11, and the fallback
on 3.12+ (DYNDBG_TRACER=settrace, or sys.monitoring's debugger slot taken).

torch's C callback (or, without it, a global trace function that filters by
code identity) installs the global trace just before generated code runs, if
that code can stop. Each generated frame gets a local trace for its level:
opcode events while stepping; after `continue`, line events, with opcode
events only while on a line holding an armed instruction (see ArmingPlan),
and the frame is released past its last armed instruction. The global trace
is removed when the last traced frame returns; ordinary frames called from a
traced frame see one 'call' event and are not traced; while dynamo compiles,
tracing is suspended.
"""
from __future__ import annotations

import collections
import sys
import types

from dyndbg.cpython.tracing import prepare_settrace
from dyndbg.dynamo import GeneratedCode
from dyndbg.dynamo.registry import RESUME_PREFIXES
from dyndbg.engine.breakpoints import ArmingPlan
from dyndbg.engine.control import PASSES_THROUGH
from dyndbg.engine.modes import TraceLevel
from dyndbg.engine.tracer import EventSink


class SettraceTracer:
    name = "settrace"
    needs_code_callback = True

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.policy = sink.policy
        self.hooks = sink.hooks
        self.events: collections.Counter[str] = collections.Counter()
        self.active: list[types.FrameType] = []        # live traced generated frames
        self._generated = sink.registry.by_id          # for the hot paths
        self._tracing = False
        self._suspended = 0
        self._levels: dict[int, TraceLevel] = {}       # id(code) -> level after continue
        self._tracers: dict[int, tuple] = {}           # id(code) -> (ArmingPlan, line tracer)
        self._cache_version: object = None             # the policy's version of both
        self._line_handled: tuple[int, int] | None = None  # (id(frame), f_lasti) of a line event
        self._line_tracer_shielded = False

    # -- the Tracer interface ---------------------------------------------------
    def start(self) -> None:
        prepare_settrace()
        self.hooks.shield(self._global_trace, self._local_trace, self._callee_trace)
        if not self.hooks.has_callback:
            self._install()

    def stop(self) -> None:
        if self._tracing:
            self._tracing = False
            sys.settrace(None)
        for frame in self.active:
            frame.f_trace = None
            frame.f_trace_opcodes = False
        self.active.clear()

    def code_added(self, entry: GeneratedCode) -> None:
        pass  # the global trace function sees every frame start

    def code_starting(self, code: types.CodeType) -> None:
        """Tracing goes on only if a stop is possible in this code (or in a
        resume function it calls)."""
        if self.hooks.interrupt_pending:
            self._install()  # its call event delivers the deferred interrupt
            return
        if self._tracing:
            return
        if self.policy.stepping:
            self._install()
            return
        self._sync_code_caches()
        level = self._levels.get(id(code))
        if level is None:
            entry = self._generated[id(code)]
            level = self._levels[id(code)] = self.policy.trace_level(entry)
        if level is not TraceLevel.NONE:
            self._install()

    def retrace(self) -> None:
        """Each live generated frame gets the tracing it needs now (every
        instruction when stepping, armed lines otherwise): the traced ones,
        and the callers on the current stack that started untraced (stepping
        out of a resume function goes on in them)."""
        for frame in self.sink.registry.generated_frames(sys._getframe(1)):
            if not any(frame is a for a in self.active):
                entry = self._generated.get(id(frame.f_code))
                if entry is None or self.policy.trace_level(entry, frame) is TraceLevel.NONE:
                    continue
                self.active.append(frame)
        for frame in self.active:
            entry = self.sink.registry.get(frame.f_code)
            if entry is not None:
                self._arm_frame(frame, entry,
                                max(TraceLevel.CALLS, self.policy.trace_level(entry, frame)))

    def keep(self, frame: types.FrameType) -> None:
        pass  # a frame that stops is traced: its return event comes

    def step_into(self, frames: list[types.FrameType]) -> None:
        for frame in frames:
            if not any(frame is a for a in self.active):
                self.active.append(frame)
            self._arm_frame(frame, self._generated[id(frame.f_code)], TraceLevel.EVERY)
        if frames or not self.hooks.has_callback:
            self._install()  # else the C callback installs it when generated code starts

    def suspend(self) -> None:
        self._suspended += 1
        if self._tracing and sys.gettrace() == self._global_trace:
            sys.settrace(None)

    def resume(self) -> None:
        self._suspended = max(0, self._suspended - 1)
        if self._tracing and not self._suspended:
            sys.settrace(self._global_trace)

    # -- installing and arming ------------------------------------------------------
    def _install(self) -> None:
        if not self._tracing and not self._suspended:
            self._tracing = True
            sys.settrace(self._global_trace)

    def _maybe_remove(self) -> None:
        if not self.active and self.hooks.has_callback and self._tracing:
            self._tracing = False
            sys.settrace(None)

    def _sync_code_caches(self) -> None:
        """Per-code decisions depend on the policy: drop them when it changes."""
        version = self.policy.version
        if self._cache_version != version:
            self._levels.clear()
            self._tracers.clear()
            self._cache_version = version

    def _arm_frame(self, frame: types.FrameType, entry: GeneratedCode, level: TraceLevel) -> None:
        # f_trace before f_trace_opcodes: 3.13 starts opcode events only so.
        if level is TraceLevel.ARMED:
            self._sync_code_caches()
            cached = self._tracers.get(id(entry.code))
            if cached is None:  # one plan and tracer per code object, shared by its frames
                plan = self.policy.arming_plan(entry)
                cached = self._tracers[id(entry.code)] = (plan, self._line_tracer(plan))
            plan, frame.f_trace = cached
            frame.f_trace_lines = True
            # A frame re-armed mid-line gets no line event until the line changes.
            frame.f_trace_opcodes = plan.all_opcodes or \
                plan.line_of.get(frame.f_lasti) in plan.hot_lines
        else:
            frame.f_trace = self._local_trace
            frame.f_trace_lines = False
            frame.f_trace_opcodes = level is TraceLevel.EVERY

    def _release(self, frame: types.FrameType) -> None:
        """Stop tracing a frame that can stop no more: the rest of it, and the
        calls it makes, run untraced (the trace goes if no traced frame is left)."""
        frame.f_trace_opcodes = False
        frame.f_trace_lines = False
        frame.f_trace = None
        self._drop(frame)
        self.sink.forget(frame)
        self._maybe_remove()

    def _drop(self, frame: types.FrameType) -> None:
        for i in range(len(self.active) - 1, -1, -1):
            if self.active[i] is frame:
                del self.active[i]
                break

    # -- trace functions ------------------------------------------------------------
    def _global_trace(self, frame: types.FrameType, event: str, arg: object):  # type: ignore[no-untyped-def]
        if event != "call":
            return None
        code = frame.f_code
        # The hot path: most calls made while a generated frame runs are not generated.
        if id(code) not in self._generated and not code.co_name.startswith(RESUME_PREFIXES) \
                and not self.hooks.interrupt_pending:
            if self.policy.failed_calls and frame.f_back is not None \
                    and id(frame.f_back.f_code) in self._generated:
                # Called by generated code: if an exception leaves it, the
                # caller's stack still holds the call (read only then).
                frame.f_trace_lines = False
                return self._callee_trace
            return None
        if self.hooks.interrupt_pending:
            # A Ctrl-C that arrived inside torch's C callback, where raising
            # would abort the process: delivered here, as the frame starts.
            self.hooks.interrupt_pending = False
            self._maybe_remove()
            raise KeyboardInterrupt
        try:
            entry = self.sink.registry.get(code)  # registers a resume function on first sight
            if self.sink.detached or entry is None:
                return None
            level = self.policy.trace_level(entry, frame)
            if level is TraceLevel.NONE:
                self._maybe_remove()  # installed by the callback's cautious guess
                return None
            self.events["start"] += 1
            self.active.append(frame)
            self.sink.on_frame_start(frame)
            self._arm_frame(frame, entry, level)
            return frame.f_trace
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
            return None

    def _callee_trace(self, frame: types.FrameType, event: str, arg: object) -> None:
        """--post-mortem: the local trace of a function called by generated code."""
        if event == "exception" and frame.f_back is not None:
            try:
                self.sink.on_call_failed(frame.f_back)
            except BaseException as error:  # noqa: BLE001
                self._fail(error)

    def _local_trace(self, frame: types.FrameType, event: str, arg: object) -> None:
        """Events of a traced generated frame. Returns None, which keeps the
        frame's current trace function (another may have been set meanwhile)."""
        self._dispatch(frame, event, arg)

    def _line_tracer(self, plan: ArmingPlan):  # type: ignore[no-untyped-def]
        """The local trace function of a frame with breakpoints, after continue.

        Line events switch opcode events on only while executing a line that
        holds an armed instruction no line event reaches; everything else
        returns at once. Returning None keeps the frame's trace function.
        """
        offsets, hot_lines, line_of = plan.offsets, plan.hot_lines, plan.line_of
        dispatch, policy, events = self._dispatch, self.policy, self.events

        def tracer(frame: types.FrameType, event: str, arg: object) -> None:
            if event == "opcode":
                if frame.f_lasti not in offsets:
                    events["instruction"] += 1
                    return None
            elif event == "line":
                lasti = frame.f_lasti
                hot = plan.all_opcodes or line_of.get(lasti) in hot_lines
                frame.f_trace_opcodes = hot
                if hot or lasti not in offsets:
                    events["line"] += 1
                    return None  # the opcode event for this instruction follows if hot
                # an armed instruction that a line event reaches: handled as its opcode
            dispatch(frame, event, arg)
            # Only under this plan: a stop may have re-armed the frame with a new one.
            if event != "return" and not policy.stepping and \
                    frame.f_trace is tracer and plan.done_after(frame.f_lasti):
                self._release(frame)
            return None

        if not self._line_tracer_shielded:  # every closure shares this code object
            self.hooks.shield(tracer)
            self._line_tracer_shielded = True
        return tracer

    def _dispatch(self, frame: types.FrameType, event: str, arg: object) -> None:
        try:
            if self.sink.detached:
                return
            if event == "opcode" or event == "line":
                self.events["line" if event == "line" else "instruction"] += 1
                if event == "opcode" and self._line_handled == (id(frame), frame.f_lasti):
                    # A stop at a line event re-armed the frame for opcodes: the
                    # opcode event of the same instruction follows; it is done.
                    self._line_handled = None
                    return
                self._line_handled = (id(frame), frame.f_lasti) if event == "line" else None
                self.sink.on_instruction(frame)
            elif event == "exception":
                self.events["exception"] += 1
                self.sink.on_exception(frame, arg[1])  # type: ignore[index]
            elif event == "return":
                self.events["return"] += 1
                self._drop(frame)
                self.sink.on_return(frame, arg)
                if not self.active:
                    self.sink.on_idle()
                    self._maybe_remove()
        except BaseException as error:  # noqa: BLE001
            self._fail(error)

    def _fail(self, error: BaseException) -> None:
        if isinstance(error, PASSES_THROUGH):
            raise error
        self.sink.internal_error("trace", error)
