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

sys.settrace is per thread: the callback runs in the thread about to run the
code and installs the trace there, so whether it is installed, suspended and
how many traced frames run are the thread's own (`_ThreadState`). Without
the callback, threading.settrace gives the global trace to the threads
started after dyndbg (threads already running are not reached on 3.11).
Events reach the engine under threads.ENGINE_LOCK. With the compiled core,
its filters (compiled_filters.py) answer in front of these trace functions
the events that need nothing of the engine.
"""
from __future__ import annotations

import collections
import sys
import threading
import types

from dyndbg import cores
from dyndbg.cpython.tracing import prepare_settrace
from dyndbg.dynamo import GeneratedCode
from dyndbg.dynamo.names import RESUME_PREFIXES
from dyndbg.engine.breakpoints import ArmingPlan
from dyndbg.engine.modes import TraceLevel
from dyndbg.engine.tracing.compiled_filters import CompiledFilters, FrameStart, PythonTraces
from dyndbg.engine.threads import ENGINE_LOCK, in_main_thread
from dyndbg.engine.tracing.settrace_graphs import TracedGraphs
from dyndbg.engine.tracing.settrace_lines import line_tracer
from dyndbg.engine.tracing.tracer import EventSink, GraphEvents, MechanismBase
from dyndbg.faults import FAULTS_ON


class _ThreadState(threading.local):
    """What sys.settrace keeps per thread (class attributes: each thread's start)."""

    installed = False          # the global trace is set in this thread, by us
    suspended = 0              # dynamo compiles in this thread
    frames = 0                 # this thread's frames in `active`
    line_handled: tuple[int, int] | None = None  # (id(frame), f_lasti) of a line event


class SettraceTracer(MechanismBase):
    name = "settrace"
    needs_code_callback = True

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.policy = sink.policy
        self.hooks = sink.hooks
        self.events: collections.Counter[str] = collections.Counter()
        self.active: list[types.FrameType] = []        # live traced generated frames, all threads
        self._generated = sink.registry.by_id          # for the hot paths
        self._thread = _ThreadState()
        self._new_threads = False                      # threading.settrace is ours
        self._levels: dict[int, TraceLevel] = {}       # id(code) -> level after continue
        self._tracers: dict[int, tuple] = {}           # id(code) -> (ArmingPlan, line tracer)
        self._cache_version: object = None             # the policy's version of both
        self._line_tracer_shielded = False
        # Compiled graphs' code being stepped into or watched (settrace_graphs.py);
        # `_graph_codes` is empty but while one is.
        self._graphs = TracedGraphs(self.events, self._fail)
        self._graph_codes = self._graphs.codes
        # id(code) -> how its frames start: the frame starts the compiled core
        # makes by itself (CompiledFilters.leave_starts).
        self._starts: dict[int, FrameStart] = {}
        # What sys.settrace installs: the compiled core's filters in front of
        # the trace functions below, or _global_trace itself (cores.py).
        compiled = cores.settrace()
        self._filters = None if compiled is None else CompiledFilters(
            compiled, sink, self.active, self._thread, self.events, self._starts,
            PythonTraces(self._global_trace, self._callee_trace, self._local_trace, self._fail),
            self._graph_codes)
        self._installed_trace = self._global_trace if self._filters is None else \
            self._filters.installed_trace

    # -- the Tracer interface ---------------------------------------------------
    def start(self) -> None:
        prepare_settrace()
        self.hooks.shield(self._global_trace, self._local_trace, self._callee_trace,
                          self._new_thread_trace, self._fail, self._release,
                          self._graphs.start, self._graphs.trace,
                          # called from the compiled filters
                          type(self.policy).version.fget,  # type: ignore[attr-defined]  # a property's getter
                          self.sink.on_idle)
        if self._filters is not None and not FAULTS_ON:   # a fault is injected in Python
            self._filters.put_in_front_of_callback()
        if not self.hooks.has_callback:
            self._install()
            # No callback to install the trace where generated code is about to run:
            # every thread started from now on gets it as it starts.
            threading.settrace(self._new_thread_trace)
            self._new_threads = True

    def stop(self) -> None:
        """In this thread now; other threads drop the global trace at their next
        event that reaches dyndbg (`_global_trace`, `_dispatch`)."""
        if self._new_threads:
            self._new_threads = False
            threading.settrace(None)
        self._uninstall()
        self._starts.clear()
        for frame in list(self.active):
            frame.f_trace = None
            frame.f_trace_opcodes = False
        self.active.clear()

    def code_added(self, entry: GeneratedCode) -> None:
        pass  # the global trace function sees every frame start

    def code_starting(self, code: types.CodeType) -> None:
        """Tracing goes on only if a stop is possible in this code (or in a
        resume function it calls)."""
        if self.hooks.interrupt_pending and in_main_thread():
            self._install()  # its call event delivers the deferred interrupt
            return
        if self._thread.installed:
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
                self._add(frame)
        # Other threads' traced frames too: their trace is installed (a frame
        # of a thread without it would get no event, armed or not).
        for frame in list(self.active):
            entry = self.sink.registry.get(frame.f_code)
            if entry is not None:
                self._arm_frame(frame, entry,
                                max(TraceLevel.CALLS, self.policy.trace_level(entry, frame)))

    def keep(self, frame: types.FrameType) -> None:
        pass  # a frame that stops is traced: its return event comes

    def watch_graph(self, code: types.CodeType | None, events: GraphEvents) -> bool:
        """In this thread. The compiled core's call filter hands the calls of
        watched codes (every call, while a lazy graph's code is not made) to
        the global trace, and answers the others in C. While any code is
        watched the trace stays in this thread with no traced frame (`catch
        backward` watches code that runs outside generated code): the watch
        counts as one of the thread's frames, which both cores read before
        removing it."""
        if self._graphs.watch(code, events):
            self._thread.frames += 1
        self._install()
        return True

    def unwatch_graph(self, code: types.CodeType | None) -> None:
        if self._graphs.unwatch(code):
            self._thread.frames = max(0, self._thread.frames - 1)

    def step_into(self, frames: list[types.FrameType]) -> None:
        for frame in frames:    # this thread's (set_trace, Ctrl-C in the main thread)
            if not any(frame is a for a in self.active):
                self._add(frame)
            self._arm_frame(frame, self._generated[id(frame.f_code)], TraceLevel.EVERY)
        if self._filters is not None:
            self._filters.stop_recording(self.active)
        if frames or not self.hooks.has_callback:
            self._install()  # else the C callback installs it when generated code starts

    def suspend(self) -> None:
        """Dynamo compiles in this thread (the others run on, traced)."""
        thread = self._thread
        thread.suspended += 1
        if thread.installed and sys.gettrace() in (self._installed_trace, self._global_trace):
            sys.settrace(None)

    def resume(self) -> None:
        thread = self._thread
        thread.suspended = max(0, thread.suspended - 1)
        if thread.installed and not thread.suspended:
            sys.settrace(self._installed_trace)
        elif not thread.suspended and self._graphs.pinned == threading.get_ident():
            self._install()     # a graph watched while dynamo compiled: seen from now on

    # -- installing and arming (in the current thread) -------------------------------
    def _install(self) -> None:
        thread = self._thread
        if not thread.installed and not thread.suspended:
            thread.installed = True
            sys.settrace(self._installed_trace)

    def _uninstall(self) -> None:
        if self._thread.installed:
            self._thread.installed = False
            sys.settrace(None)

    def _maybe_remove(self) -> None:
        """No traced frame left in this thread: the trace goes (with the callback
        to install it again)."""
        if not self._thread.frames and self.hooks.has_callback:
            self._uninstall()

    def _new_thread_trace(self, frame: types.FrameType, event: str, arg: object):
        """threading.settrace's function: the thread's first event installs the
        global trace in it, as _install does."""
        self._thread.installed = True
        sys.settrace(self._installed_trace)
        return self._installed_trace(frame, event, arg)

    def _sync_code_caches(self) -> None:
        """Per-code decisions depend on the policy: drop them when it changes."""
        version = self.policy.version
        if self._cache_version != version:
            self._levels.clear()
            self._tracers.clear()
            self._starts.clear()
            self._cache_version = version

    def _arm_frame(self, frame: types.FrameType, entry: GeneratedCode, level: TraceLevel) -> None:
        # f_trace before f_trace_opcodes: 3.13 starts opcode events only so.
        if level is TraceLevel.ARMED:
            self._sync_code_caches()
            cached = self._tracers.get(id(entry.code))
            if cached is None:  # one plan and tracer per code object, shared by its frames
                plan = self.policy.arming_plan(entry)
                cached = self._tracers[id(entry.code)] = (plan, self._line_tracer(plan, entry))
            plan, frame.f_trace = cached
            frame.f_trace_lines = True
            # A frame re-armed mid-line gets no line event until the line changes.
            frame.f_trace_opcodes = plan.all_opcodes or \
                plan.line_of.get(frame.f_lasti) in plan.hot_lines
        else:
            frame.f_trace = self._local_trace
            if level is TraceLevel.EVERY and self._filters is not None:
                frame.f_trace = self._filters.record_filter(frame, entry) or self._local_trace
            elif level is TraceLevel.CALLS and self._filters is not None:
                frame.f_trace = self._filters.return_filter
            frame.f_trace_lines = False
            frame.f_trace_opcodes = level is TraceLevel.EVERY

    def _release(self, frame: types.FrameType) -> None:
        """Stop tracing a frame that can stop no more: the rest of it, and the
        calls it makes, run untraced (the trace goes if no traced frame is left)."""
        frame.f_trace_opcodes = False
        frame.f_trace_lines = False
        frame.f_trace = None
        self._drop(frame)
        with ENGINE_LOCK:
            self.sink.forget(frame)
        self._maybe_remove()

    def _add(self, frame: types.FrameType) -> None:
        """A frame of the current thread is traced from now on."""
        self.active.append(frame)
        self._thread.frames += 1

    def _drop(self, frame: types.FrameType) -> None:
        """From the frame's own thread (its return, its release)."""
        active = self.active
        for i in range(len(active) - 1, -1, -1):
            if active[i] is frame:
                del active[i]
                self._thread.frames = max(0, self._thread.frames - 1)
                break

    # -- trace functions ------------------------------------------------------------
    def _global_trace(self, frame: types.FrameType, event: str, arg: object):
        if event != "call":
            return None
        code = frame.f_code
        graphs = self._graph_codes
        if graphs and (id(code) in graphs or None in graphs):
            traced = self._graphs.start(frame)
            if traced is not None:
                return traced
        # The hot path: most calls made while a generated frame runs are not generated.
        if id(code) not in self._generated and not code.co_name.startswith(RESUME_PREFIXES) \
                and not (self.hooks.interrupt_pending and in_main_thread()):
            if self.policy.failed_calls and frame.f_back is not None \
                    and id(frame.f_back.f_code) in self._generated:
                # Called by generated code: if an exception leaves it, the
                # caller's stack still holds the call (read only then).
                frame.f_trace_lines = False
                return self._callee_trace
            return None
        if self.hooks.interrupt_pending and in_main_thread():
            # A Ctrl-C that arrived inside torch's C callback, where raising
            # would abort the process: delivered here, as the frame starts (in
            # the main thread, where Python raises it).
            self.hooks.interrupt_pending = False
            self._maybe_remove()
            raise KeyboardInterrupt
        try:
            with ENGINE_LOCK:   # waits while dyndbg is stopped in another thread
                if self.sink.detached:
                    self._uninstall()   # another thread detached
                    return None
                entry = self.sink.registry.get(code)  # registers a resume function on first sight
                if entry is None:
                    return None
                level = self.policy.trace_level(entry, frame)
                if level is TraceLevel.NONE:
                    self._maybe_remove()  # installed by the callback's cautious guess
                    return None
                self.events["start"] += 1
                self._add(frame)
                self.sink.on_frame_start(frame)
                self._arm_frame(frame, entry, level)
                if self._filters is not None:
                    self._filters.leave_starts(frame, entry, level)
                return frame.f_trace
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
            return None

    def _callee_trace(self, frame: types.FrameType, event: str, arg: object) -> None:
        """--post-mortem: the local trace of a function called by generated code."""
        if event == "exception" and frame.f_back is not None:
            try:
                with ENGINE_LOCK:
                    self.sink.on_call_failed(frame.f_back)
            except BaseException as error:  # noqa: BLE001
                self._fail(error)

    def _local_trace(self, frame: types.FrameType, event: str, arg: object) -> None:
        """Events of a traced generated frame. Returns None, which keeps the
        frame's current trace function (another may have been set meanwhile)."""
        self._dispatch(frame, event, arg)

    def _line_tracer(self, plan: ArmingPlan, entry: GeneratedCode):
        """The local trace function of a frame with breakpoints, after continue
        (settrace_lines.py), behind the compiled core's filter if there is one."""
        installed: list[object] = [None]
        policy = self.policy
        tracer = line_tracer(plan, self._dispatch, lambda: policy.stepping, self.events,
                             self._release, lambda: installed[0])
        if not self._line_tracer_shielded:  # every closure shares this code object
            self.hooks.shield(tracer)
            self._line_tracer_shielded = True
        installed[0] = tracer if self._filters is None else \
            self._filters.line_filter(plan, entry, tracer)
        return installed[0]

    def _dispatch(self, frame: types.FrameType, event: str, arg: object) -> None:
        try:
            with ENGINE_LOCK:   # waits while dyndbg is stopped in another thread
                if self.sink.detached:
                    frame.f_trace = None
                    self._uninstall()   # another thread detached
                    return
                if event == "opcode" or event == "line":
                    self.events["line" if event == "line" else "instruction"] += 1
                    thread = self._thread
                    if event == "opcode" and thread.line_handled == (id(frame), frame.f_lasti):
                        # A stop at a line event re-armed the frame for opcodes: the
                        # opcode event of the same instruction follows; it is done.
                        thread.line_handled = None
                        return
                    thread.line_handled = (id(frame), frame.f_lasti) if event == "line" else None
                    self.sink.on_instruction(frame)
                elif event == "exception":
                    self.events["exception"] += 1
                    self.sink.on_exception(frame, arg[1])  # type: ignore[index]  # an 'exception' event's tuple
                elif event == "return":
                    self.events["return"] += 1
                    self._drop(frame)
                    self.sink.on_return(frame, arg)
                    if not self.active:
                        self.sink.on_idle()
                    self._maybe_remove()
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
