"""The compiled core's part in sys.settrace tracing (engine/tracing/_settrace.c).

Its filters sit in front of SettraceTracer's Python trace functions and
answer in C the events that need nothing of the engine: a call that starts
no generated frame, a frame start that only forgets (`leave_starts`), a line
or opcode with no armed instruction or with a false condition, a return while
continuing, an instruction that is only recorded. Whatever else happens goes
on to the Python function behind each filter. Frames are booked (the
tracer's `active` and per-thread counts, the engine's frame_keyed) by the C
FrameBook in the same places as SettraceTracer._add, _drop and forget.
"""
from __future__ import annotations

import collections
import sys
import threading
import types
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from dyndbg.dynamo import GeneratedCode
from dyndbg.dynamo.names import RESUME_PREFIXES
from dyndbg.engine.breakpoints import ArmingPlan
from dyndbg.engine.modes import TraceLevel
from dyndbg.engine.threads import ENGINE_LOCK
from dyndbg.engine.tracing.tracer import EventSink

if TYPE_CHECKING:
    from dyndbg.engine.tracing._settrace import FrameBook, ReturnFilter

TraceFunction = Callable[[types.FrameType, str, object], object]


class PythonTraces(NamedTuple):
    """SettraceTracer's trace functions, behind the filters."""

    global_trace: TraceFunction     # a call: does a generated frame start?
    callee_trace: TraceFunction     # --post-mortem: a call made by generated code
    local_trace: TraceFunction      # any event of a traced generated frame
    fail: Callable[[BaseException], None]


class FrameStart(NamedTuple):
    """How the call filter starts a frame of one code by itself (the tracer's
    `starts`, id(code) -> FrameStart; engine/tracing/_starts.c and
    _call_filter.c read it by index)."""

    version: object             # the policy's version it holds for
    trace: TraceFunction        # the frame's trace function: a line filter, or the return filter


class CompiledFilters:
    def __init__(self, compiled: types.ModuleType, sink: EventSink,
                 active: list[types.FrameType], thread: threading.local,
                 events: collections.Counter[str], starts: dict[int, FrameStart],
                 python: PythonTraces, graphs: dict[int | None, Any]) -> None:
        self._compiled = compiled
        self._sink = sink
        self._thread = thread
        self._events = events
        self._starts = starts
        self._python = python
        self.book: FrameBook = compiled.frame_book(active, thread, sink.frame_keyed, sink.hooks, ENGINE_LOCK)
        # What sys.settrace installs: the call filter in front of the global trace.
        self.installed_trace = compiled.call_filter(
            sink.registry.by_id, RESUME_PREFIXES, sink.hooks, sink.policy, python.global_trace,
            compiled.callee_filter(python.callee_trace), starts, sink, events, self.book,
            graphs)     # the watched graph codes: their calls go to the global trace
        # A frame traced for its calls: its return while continuing is booked in C.
        self.return_filter: ReturnFilter = compiled.return_filter(
            self.book, sink.policy, sink, events, sink.on_idle, python.local_trace)

    def put_in_front_of_callback(self) -> None:
        """torch's callback reaches the code filter first: it installs the
        trace in C for code whose frames start in C."""
        sink = self._sink
        sink.hooks.put_in_front(lambda callback: self._compiled.code_filter(
            sink.registry.by_id, self._starts, sink.hooks, sink.policy, sink, self._thread,
            sys.settrace, self.installed_trace, callback))

    def line_filter(self, plan: ArmingPlan, entry: GeneratedCode,
                    tracer: TraceFunction) -> TraceFunction:
        """In front of `tracer`, a frame's line tracer under `plan`: answers the
        events that need nothing, and the armed instructions whose condition
        is false."""
        sink = self._sink
        done_from = -1 if plan.loops else plan.last_armed
        return self._compiled.line_filter(
            plan.offsets, plan.hot_lines, plan.line_of, bool(plan.all_opcodes), done_from,
            sink.fast_paths.condition_checks(entry), sink.conditions, ENGINE_LOCK, sink,
            self.book, self._events, tracer)

    def record_filter(self, frame: types.FrameType, entry: GeneratedCode) -> TraceFunction | None:
        """The trace function for a frame the engine only records, or None. Not
        while a line event's stop is pending its opcode event (_dispatch skips
        that one)."""
        fast = self._sink.fast_paths.record(entry)
        line_handled = self._thread.line_handled
        if fast is None or line_handled is not None and line_handled[0] == id(frame):
            return None
        return self._compiled.record_filter(fast.record, fast.spec, fast.armed, ENGINE_LOCK,
                                            self._sink, self._events, fast.after,
                                            self._python.fail, self._python.local_trace)

    def stop_recording(self, active: list[types.FrameType]) -> None:
        """A frame that was recorded in C stops at its next instruction (step
        mode), as one under the Python local trace does."""
        for frame in active:
            if type(frame.f_trace) is self._compiled.RecordFilterType:
                frame.f_trace = self._python.local_trace

    def leave_starts(self, frame: types.FrameType, entry: GeneratedCode,
                     level: TraceLevel) -> None:
        """The call filter starts the code's next frames by itself while the
        policy's version stays, where each would start as this one did and
        the engine's start only forgets: armed by a line filter (ARMED depends
        on the code alone), or traced for its calls under --post-mortem
        (CALLS then, whatever the frame)."""
        sink, trace = self._sink, frame.f_trace
        same_for_all = (level is TraceLevel.ARMED and
                        type(trace) is self._compiled.LineFilterType) or \
            (level is TraceLevel.CALLS and sink.policy.failed_calls and
             trace is self.return_filter)
        if same_for_all and trace is not None and sink.start_only_forgets(entry):
            self._starts[id(entry.code)] = FrameStart(sink.policy.version, trace)
