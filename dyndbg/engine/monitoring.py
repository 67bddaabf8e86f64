"""Tracing with sys.monitoring (PEP 669): the mechanism on Python 3.12+.

Events are enabled per code object, for dynamo-generated code only, under the
debugger's tool id: PY_START and PY_RETURN for every generated code object
that can stop; INSTRUCTION while stepping, or after `continue` on code holding
armed instructions, where every other instruction answers DISABLE the first
time it runs (so an armed breakpoint costs nothing on the instructions around
it until the policy changes and `restart_events` turns them on again); CALL
where a resume function that dynamo declined to compile may be called (it runs
without torch's C callback, so its code gets its events as it is called).
RAISE and PY_UNWIND can only be global: on while anything is traced, off while
dynamo compiles; they cost nothing until an exception is raised.

Frames that ran traced and have not returned ("live": a frame being stepped
when the user continues) keep their code's start, return and exception
events until they return, as settrace keeps tracing such a frame: an
exception raised there after `continue` still stops.
"""
from __future__ import annotations

import collections
import sys
import types

from dyndbg.dynamo import GeneratedCode, is_resume_name
from dyndbg.engine.control import PASSES_THROUGH
from dyndbg.engine.modes import TraceLevel
from dyndbg.engine.tracer import EventSink

_M = sys.monitoring
_E = _M.events
DISABLE = _M.DISABLE
_GLOBAL_EVENTS = _E.RAISE | _E.PY_UNWIND


class MonitoringTracer:
    name = "sys.monitoring"
    needs_code_callback = False   # events are set per code object as it is registered

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.hooks = sink.hooks
        self.events: collections.Counter[str] = collections.Counter()
        self._tool = _M.DEBUGGER_ID
        self._generated = sink.registry.by_id
        # id(code) -> (code, the local events set on it, the policy they were set for)
        self._set: dict[int, tuple[types.CodeType, int, object]] = {}
        self._policy: object = None       # the policy the events are being set for now
        self._live: dict[int, types.FrameType] = {}  # id -> traced frame not returned yet
        self._disabled = False            # a location answered DISABLE since the last restart
        self._global = 0                  # global events wanted (while not suspended)
        self._suspended = 0
        self._started = False
        self._callbacks = ((_E.INSTRUCTION, self._on_instruction), (_E.PY_START, self._on_start),
                           (_E.PY_RETURN, self._on_return), (_E.CALL, self._on_call),
                           (_E.RAISE, self._on_raise), (_E.PY_UNWIND, self._on_unwind))

    # -- the Tracer interface ---------------------------------------------------
    def start(self) -> None:
        _M.use_tool_id(self._tool, "dyndbg")
        for event, callback in self._callbacks:
            _M.register_callback(self._tool, event, callback)
        # torch reacts to monitoring callbacks as to any frame: keep dynamo away.
        self.hooks.shield(*(callback for _, callback in self._callbacks))
        self._started = True
        # Code compiled before attaching is known without the C callback too.
        self.sink.registry.recover_existing()
        self.retrace()

    def stop(self) -> None:
        self._live.clear()
        if not self._started:
            return
        self._started = False
        _M.set_events(self._tool, 0)
        for code, events, _ in self._set.values():
            if events:
                _M.set_local_events(self._tool, code, 0)
        self._set.clear()
        for event, _ in self._callbacks:
            _M.register_callback(self._tool, event, None)
        _M.free_tool_id(self._tool)

    def code_added(self, entry: GeneratedCode) -> None:
        """New code gets its events before it first runs (without the C
        callback, nothing else would give them)."""
        if self._started and self._policy is not None:
            self._ensure(entry)

    def code_starting(self, code: types.CodeType) -> None:
        if not self._started:
            return
        if self.hooks.interrupt_pending:
            # A Ctrl-C caught in torch's C callback, where raising would abort
            # the process: PY_START delivers it as the frame starts.
            events = self._set.get(id(code), (code, 0, None))[1] | _E.PY_START
            self._set_local(code, events, None)
            return
        known = self._set.get(id(code))
        if known is None or known[2] != self._policy:
            self._ensure(self._generated[id(code)])

    def retrace(self) -> None:
        """Every generated code object seen so far gets the events the policy
        wants now; locations that answered DISABLE are turned on again."""
        if not self._started:
            return
        policy = (self.sink.stepping, self.sink.policy_version)
        if policy == self._policy and not self._disabled:
            return
        self._policy = policy
        self._global = 0
        for entry in self.sink.registry.entries():
            self._ensure(entry)
        self._apply_global()
        if self._disabled:
            self._disabled = False
            _M.restart_events()

    def step_into(self, frames: list[types.FrameType]) -> None:
        # Events are per code object: the running frames' code is instrumented
        # at once, and they stop at their next instruction.
        self.retrace()

    def suspend(self) -> None:
        self._suspended += 1
        self._apply_global()

    def resume(self) -> None:
        self._suspended = max(0, self._suspended - 1)
        self._apply_global()

    # -- setting events ---------------------------------------------------------------
    def _wanted(self, entry: GeneratedCode) -> int:
        level = self.sink.trace_level(entry)
        if level is TraceLevel.NONE:
            if any(frame.f_code is entry.code for frame in self._live.values()):
                return _E.PY_START | _E.PY_RETURN   # until its live frames return
            return 0
        events = _E.PY_START | _E.PY_RETURN
        if level >= TraceLevel.ARMED:
            events |= _E.INSTRUCTION
        if self.sink.watches_resume_calls(entry):
            events |= _E.CALL
        return events

    def _ensure(self, entry: GeneratedCode) -> None:
        events = self._wanted(entry)
        known = self._set.get(id(entry.code))
        if known is None or known[1] != events:
            self._set_local(entry.code, events, self._policy)
        else:
            self._set[id(entry.code)] = (entry.code, events, self._policy)
        if events and not self._global:
            self._global = _GLOBAL_EVENTS
            self._apply_global()

    def _set_local(self, code: types.CodeType, events: int, policy: object) -> None:
        _M.set_local_events(self._tool, code, events)
        self._set[id(code)] = (code, events, policy)

    def _apply_global(self) -> None:
        wanted = 0 if self._suspended else self._global
        if _M.get_events(self._tool) != wanted:
            _M.set_events(self._tool, wanted)

    def _traced(self, code: types.CodeType) -> bool:
        known = self._set.get(id(code))
        return known is not None and known[1] != 0

    def _returned(self, frame: types.FrameType) -> None:
        """A traced frame left: its code may need fewer events now."""
        if self._live.pop(id(frame), None) is not None and not self.sink.stepping:
            entry = self._generated.get(id(frame.f_code))
            if entry is not None:
                self._ensure(entry)
            if not any(events for _, events, _ in self._set.values()):
                self._global = 0
                self._apply_global()

    # -- callbacks (each returns quickly where nothing can stop) ----------------------
    def _on_instruction(self, code: types.CodeType, offset: int) -> object:
        self.events["instruction"] += 1
        sink = self.sink
        if not sink.stepping:
            entry = self._generated.get(id(code))
            if entry is None or offset not in sink.arming_plan(entry).offsets:
                self._disabled = True
                return DISABLE  # until the policy changes
        try:
            if not sink.detached:
                frame = sys._getframe(1)
                self._live[id(frame)] = frame
                sink.on_instruction(frame)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
        return None

    def _on_start(self, code: types.CodeType, offset: int) -> None:
        if self.hooks.interrupt_pending:
            self.hooks.interrupt_pending = False
            raise KeyboardInterrupt
        if id(code) not in self._generated or self.sink.detached:
            return
        self.events["start"] += 1
        try:
            frame = sys._getframe(1)
            self._live[id(frame)] = frame
            self.sink.on_frame_start(frame)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)

    def _on_return(self, code: types.CodeType, offset: int, value: object) -> None:
        if self.sink.detached:
            return
        self.events["return"] += 1
        try:
            frame = sys._getframe(1)
            self.sink.on_return(frame)
            self.sink.on_idle()   # a normal return: any exception we stopped at was handled
            self._returned(frame)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)

    def _on_call(self, code: types.CodeType, offset: int, function: object,
                 arg0: object) -> object:
        """A call from generated code: a resume function dynamo declined to
        compile gets its events before it starts. One look per call site."""
        self.events["call"] += 1
        target = getattr(function, "__code__", None)
        try:
            if isinstance(target, types.CodeType) and is_resume_name(target.co_name) \
                    and not self.sink.registry.has_transform(target):
                entry = self.sink.registry.get(target)
                if entry is not None and not self.sink.detached:
                    self._ensure(entry)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
        self._disabled = True
        return DISABLE

    def _on_raise(self, code: types.CodeType, offset: int, exc: BaseException) -> None:
        if not self._traced(code) or self.sink.detached:
            return   # global event: most raises are in code that is not ours
        self.events["exception"] += 1
        try:
            self.sink.on_exception(sys._getframe(1), exc)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)

    def _on_unwind(self, code: types.CodeType, offset: int, exc: BaseException) -> None:
        """A frame leaves by an exception: a traced one has returned; with
        --post-mortem, a generated caller keeps its stack as before the call."""
        sink = self.sink
        if sink.detached:
            return
        traced = self._traced(code)
        if not traced and not sink.recording:
            return
        try:
            frame = sys._getframe(1)
            if traced:
                self.events["return"] += 1
                sink.on_return(frame)
                self._returned(frame)
            caller = frame.f_back
            if sink.recording and caller is not None and id(caller.f_code) in self._generated:
                sink.on_call_failed(caller)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)

    def _fail(self, error: BaseException) -> None:
        if isinstance(error, PASSES_THROUGH):
            raise error
        self.sink.internal_error("trace", error)
