"""Tracing with sys.monitoring (PEP 669): the mechanism on Python 3.12+.

Events are enabled per code object, for dynamo-generated code only, under the
debugger's tool id, as the policy's CodeNeeds say: INSTRUCTION while stepping,
or after `continue` on code holding armed instructions, where every other
instruction answers DISABLE the first time it runs (so an armed breakpoint
costs nothing on the instructions around it until the policy changes and
`restart_events` turns them on again); PY_START and PY_RETURN where a stop
may want the frame's arguments from its start; CALL where a resume function
that dynamo declined to compile may be called (it runs without torch's C
callback, so its code gets its events as it is called; on 3.12 such a call,
a CALL_FUNCTION_EX, gives no CALL event and is seen at its INSTRUCTION event,
kept on for it; resume_calls.py). RAISE and PY_UNWIND
can only be global: on while anything is traced, off while dynamo compiles;
they cost nothing until an exception is raised.

Frames that ran traced and have not returned (a frame being stepped when the
user continues) keep their code's PY_RETURN and exception delivery until
they return, as settrace keeps tracing such a frame: an exception raised
there after `continue` still stops.

A compiled graph that `s` steps into gets events of its own, only while it
is entered (monitoring_graphs.py).

sys.monitoring is global: generated code gets its events in every thread,
those started before dyndbg included. Events reach the engine under
threads.ENGINE_LOCK; a Ctrl-C caught in torch's callback is raised in the
main thread only, as Python raises it.
"""
from __future__ import annotations

import collections
import sys
import types
from typing import TYPE_CHECKING, Callable

from dyndbg import cores
from dyndbg.cpython.tracing import CALL_EVENT_MISSES_FUNCTION_EX
from dyndbg.dynamo import GeneratedCode
from dyndbg.engine.fast_paths import EVERY_INSTRUCTION, FastInstructions
from dyndbg.engine.modes import TraceLevel
from dyndbg.engine.tracing.monitoring_events import TracedCode, code_events
from dyndbg.engine.tracing.monitoring_graphs import MonitoredGraphs
from dyndbg.engine.tracing.resume_calls import ResumeCalls
from dyndbg.engine.threads import ENGINE_LOCK, in_main_thread
from dyndbg.engine.tracing.tracer import EventSink, GraphEvents, MechanismBase

if TYPE_CHECKING:
    from dyndbg.engine.tracing._monitoring import InstructionFilter

_M = sys.monitoring
_E = _M.events
DISABLE = _M.DISABLE
_GLOBAL_EVENTS = _E.RAISE | _E.PY_UNWIND


class MonitoringTracer(MechanismBase):
    name = "sys.monitoring"
    needs_code_callback = False   # events are set per code object as it is registered

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.policy = sink.policy
        self.hooks = sink.hooks
        # Counted where it costs nothing on a hot path: instructions (the first
        # time each runs, then armed ones), calls and exceptions.
        self.events: collections.Counter[str] = collections.Counter()
        self._tool = _M.DEBUGGER_ID
        self._generated = sink.registry.by_id
        self._traced: dict[int, TracedCode] = {}       # id(code) -> its events
        self._running: dict[int, list[types.FrameType]] = {}  # id(code) -> its traced live frames
        self._resume_calls = ResumeCalls(sink.registry, lambda: sink.detached, self._ensure)
        self._policy: object = None       # the policy the events are being set for now
        self._disabled = False            # a location answered DISABLE since the last restart
        self._global = 0                  # global events wanted (while not suspended)
        self._suspended = 0
        self._started = False
        # The compiled graphs being stepped into (monitoring_graphs.py).
        self._graphs = MonitoredGraphs(self._tool, sink, self.events, self._fail,
                                       self._apply_global)
        self._graph_codes = self._graphs.watched    # empty while no graph is entered
        # The compiled core answers INSTRUCTION events itself while the
        # engine only records, or at a false condition: for the codes listed
        # here (filled by _on_instruction, emptied by retrace), id(code) ->
        # _fast_entry(code).
        self._compiled = cores.monitoring()
        self._fast: dict[int, FastInstructions | tuple[()]] = {}
        self._on_instruction_filter: InstructionFilter | None = None if self._compiled is None \
            else self._compiled.instruction_filter(self._fast, sink.conditions, ENGINE_LOCK, sink,
                                                   self.events, self._fail, self._on_instruction)
        on_instruction: Callable[[types.CodeType, int], object] = \
            self._on_instruction_filter or self._on_instruction
        self._callbacks = ((_E.INSTRUCTION, on_instruction), (_E.PY_START, self._on_start),
                           (_E.PY_RETURN, self._on_return), (_E.CALL, self._on_call),
                           (_E.RAISE, self._on_raise), (_E.PY_UNWIND, self._on_unwind),
                           (_E.LINE, self._graphs.on_line))

    # -- the Tracer interface ---------------------------------------------------
    def start(self) -> None:
        _M.use_tool_id(self._tool, "dyndbg")
        for event, callback in self._callbacks:
            _M.register_callback(self._tool, event, callback)
        # torch reacts to monitoring callbacks as to any frame: keep dynamo away.
        self.hooks.shield(self._on_instruction, self._fail, self._graphs.on_start,
                          self._graphs.on_end,
                          *(callback for _, callback in self._callbacks[1:]))
        self._started = True
        # Code compiled before attaching is known without the C callback too.
        self.sink.registry.recover_existing()
        self.retrace()

    def stop(self) -> None:
        self._running.clear()
        if not self._started:
            return
        self._started = False
        _M.set_events(self._tool, 0)
        self._graphs.clear()
        for traced in self._traced.values():
            if traced.events:
                _M.set_local_events(self._tool, traced.code, 0)
        self._traced.clear()
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
        if self.hooks.interrupt_pending and in_main_thread():
            # A Ctrl-C caught in torch's C callback, where raising would abort
            # the process: PY_START delivers it as the frame starts.
            traced = self._traced.get(id(code))
            _M.set_local_events(self._tool, code, (traced.events if traced else 0) | _E.PY_START)
            self._traced.pop(id(code), None)   # set again by the next _ensure
            return
        traced = self._traced.get(id(code))
        if traced is None or traced.policy != self._policy:
            self._ensure(self._generated[id(code)])

    def retrace(self) -> None:
        """Every generated code object seen so far gets the events the policy
        wants now; locations that answered DISABLE are turned on again."""
        if not self._started:
            return
        self._fast.clear()   # the mode or the breakpoints changed: asked again
        if self._on_instruction_filter is not None:
            # The compiled filter: the entry it found last, too.
            self._on_instruction_filter.forget()
        policy = (self.policy.stepping, self.policy.version)
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

    def keep(self, frame: types.FrameType) -> None:
        """Live until it returns: its code gets PY_RETURN meanwhile."""
        running = self._running.setdefault(id(frame.f_code), [])
        if any(f is frame for f in running):
            return
        running.append(frame)
        entry = self._generated.get(id(frame.f_code))
        if entry is not None and self._started:
            self._ensure(entry)

    def step_into(self, frames: list[types.FrameType]) -> None:
        # Events are per code object: the running frames' code is instrumented
        # at once, and they stop at their next instruction.
        self.retrace()

    def watch_graph(self, code: types.CodeType | None, events: GraphEvents) -> bool:
        """The graph's code alone gets its events (monitoring_graphs.py)."""
        try:
            self._graphs.watch(code, events)
        except (ValueError, TypeError):   # not a code object sys.monitoring can instrument
            return False
        return True

    def unwatch_graph(self, code: types.CodeType | None) -> None:
        self._graphs.unwatch(code)

    def suspend(self) -> None:
        self._suspended += 1
        self._apply_global()

    def resume(self) -> None:
        self._suspended = max(0, self._suspended - 1)
        self._apply_global()

    # -- setting events ---------------------------------------------------------------
    def _ensure(self, entry: GeneratedCode) -> None:
        code = entry.code
        needs = self.policy.code_needs(entry)
        armed = frozenset(self.policy.arming_plan(entry).offsets) \
            if needs.instructions is TraceLevel.ARMED else frozenset()
        watched: frozenset[int] = frozenset()
        if CALL_EVENT_MISSES_FUNCTION_EX and needs.resume_calls:
            # 3.12: a resume call is seen at its INSTRUCTION event
            watched = frozenset(self._resume_calls.function_ex_calls(code)) - armed
            armed |= watched
        events = code_events(needs, code, armed, bool(self._running.get(id(code))))
        known = self._traced.get(id(code))
        if known is None or known.events != events:
            _M.set_local_events(self._tool, code, events)
        self._traced[id(code)] = TracedCode(code, events, self._policy, needs, armed, watched)
        if (events or needs.exceptions) and not self._global:
            self._global = _GLOBAL_EVENTS
            self._apply_global()

    def _apply_global(self) -> None:
        wanted = 0 if self._suspended else self._global | self._graphs.global_events
        if _M.get_events(self._tool) != wanted:
            _M.set_events(self._tool, wanted)

    def _returned(self, code: types.CodeType, offset: int) -> types.FrameType:
        """The traced frame of `code` returning at `offset`. Its code may need
        fewer events once its last live frame is gone."""
        running = self._running.get(id(code))
        # The returning frame, under this callback's caller (the innermost one
        # started may be another thread's, at the same offset).
        frame = sys._getframe(2)
        if running:
            for k in range(len(running) - 1, -1, -1):
                if running[k] is frame:
                    del running[k]
                    break
            if not running:
                del self._running[id(code)]
                known = self._traced.get(id(code))
                if known is not None:
                    events = code_events(known.needs, code, known.armed, False)
                    if events != known.events:
                        _M.set_local_events(self._tool, code, events)
                        self._traced[id(code)] = known._replace(events=events)
        return frame

    # -- callbacks (each returns quickly where nothing can stop) ----------------------
    def _on_instruction(self, code: types.CodeType, offset: int) -> object:
        self.events["instruction"] += 1
        sink = self.sink
        stepping = self.policy.stepping
        known: TracedCode | None = None
        if not stepping:
            known = self._traced.get(id(code))
            if known is None or offset not in known.armed:
                self._disabled = True
                return DISABLE  # until the policy changes
        try:
            with ENGINE_LOCK:   # waits while dyndbg is stopped in another thread
                if not sink.detached:
                    frame = sys._getframe(1)
                    if CALL_EVENT_MISSES_FUNCTION_EX:
                        self._before_function_ex(code, offset, frame)
                    sink.on_instruction(frame)
                    if self._compiled is not None and id(code) not in self._fast:
                        self._fast[id(code)] = self._fast_entry(code)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
        if known is not None and offset in known.watched_calls:
            self._disabled = True
            return DISABLE  # one look per call site, as at a CALL event
        return None

    def _fast_entry(self, code: types.CodeType) -> FastInstructions | tuple[()]:
        """What the compiled callback needs for `code` (engine/tracing/_monitoring.c):
        the recording and no checks while the engine only records
        (engine.fast_paths.record), the condition checks while it does not
        step, or EVERY_INSTRUCTION where the engine sees every instruction."""
        entry, known = self._generated.get(id(code)), self._traced.get(id(code))
        if entry is None or known is None:
            return EVERY_INSTRUCTION
        slow = known.armed
        if CALL_EVENT_MISSES_FUNCTION_EX and known.needs.resume_calls:
            slow |= frozenset(self._resume_calls.function_ex_calls(code))
        fast = self.sink.fast_paths.record(entry)
        if fast is not None:
            return FastInstructions(fast.record, fast.spec, slow | frozenset(fast.armed),
                                    fast.after, {})
        if self.policy.stepping:
            return EVERY_INSTRUCTION
        checks = self.sink.fast_paths.condition_checks(entry)
        return FastInstructions(None, None, slow - checks.keys() | known.watched_calls, None,
                                checks)

    def _before_function_ex(self, code: types.CodeType, offset: int,
                            frame: types.FrameType) -> None:
        known = self._traced.get(id(code))
        if known is not None and known.needs.resume_calls:
            self._resume_calls.before_function_ex(code, offset, frame)

    def _on_start(self, code: types.CodeType, offset: int) -> object:
        if self.hooks.interrupt_pending and in_main_thread():
            self.hooks.interrupt_pending = False
            raise KeyboardInterrupt
        if self._graph_codes and id(code) not in self._generated:
            answer = self._graphs.on_start(code, sys._getframe(1))
            if answer is DISABLE:
                self._disabled = True    # until the next restart_events
            return answer
        if self.sink.detached or id(code) not in self._generated:
            return None
        try:
            with ENGINE_LOCK:
                if self.sink.detached:
                    return
                frame = sys._getframe(1)
                self._running.setdefault(id(code), []).append(frame)
                self.sink.on_frame_start(frame)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
        return None

    def _on_return(self, code: types.CodeType, offset: int, value: object) -> None:
        if self.sink.detached or \
                self._graph_codes and self._graphs.on_end(code, sys._getframe(1)):
            return
        try:
            with ENGINE_LOCK:
                if self.sink.detached:
                    return
                frame = self._returned(code, offset)
                self.sink.on_return(frame, value)
                self.sink.on_idle()   # a normal return: any exception we stopped at was handled
        except BaseException as error:  # noqa: BLE001
            self._fail(error)

    def _on_call(self, code: types.CodeType, offset: int, function: object,
                 arg0: object) -> object:
        """A call from generated code: a resume function dynamo declined to
        compile gets its events before it starts. One look per call site."""
        self.events["call"] += 1
        try:
            self._resume_calls.watch(function)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
        self._disabled = True
        return DISABLE

    def _delivers_exceptions(self, code: types.CodeType) -> bool:
        known = self._traced.get(id(code))
        return (known is not None and known.needs.exceptions) or id(code) in self._running

    def _on_raise(self, code: types.CodeType, offset: int, exc: BaseException) -> None:
        if self.sink.detached or not self._delivers_exceptions(code):
            return   # a global event: most raises are in code that is not ours
        self.events["exception"] += 1
        try:
            with ENGINE_LOCK:
                if not self.sink.detached:
                    self.sink.on_exception(sys._getframe(1), exc)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)

    def _on_unwind(self, code: types.CodeType, offset: int, exc: BaseException) -> None:
        """A frame leaves by an exception: a traced one has returned; with
        --post-mortem, a generated caller keeps its stack as before the call."""
        sink = self.sink
        if sink.detached or \
                self._graph_codes and self._graphs.on_end(code, sys._getframe(1)):
            return
        running = id(code) in self._running
        if not running and not self.policy.failed_calls:
            return
        try:
            frame = sys._getframe(1)
            caller = frame.f_back
            failed_call = self.policy.failed_calls and caller is not None and \
                id(caller.f_code) in self._generated
            if not running and not failed_call:
                return   # not ours: no wait for the engine (any thread's code unwinds here)
            with ENGINE_LOCK:
                if sink.detached:
                    return
                if running:
                    self._returned(code, frame.f_lasti)
                    sink.on_return(frame)
                if failed_call and caller is not None:
                    sink.on_call_failed(caller)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
