"""The engine: stops in generated frames and hands them to the front end.

A tracing mechanism (settrace.py, monitoring.py, chosen by
tracing.choice.make_tracer) delivers the events that the policy (policy.py) asks for;
the engine decides at each whether to stop, and reads the frame's stack.
torch's C callback tells the engine when generated code is about to run;
while dynamo compiles, tracing is suspended.
"""
from __future__ import annotations

import types
from typing import Protocol

from dyndbg import cores
from dyndbg.cpython import StackUnavailable, read_value_stack, stack_support
from dyndbg.dynamo import DynamoHooks, GeneratedCode, Registry
from dyndbg.dynamo.edits import EDITS
from dyndbg.dynamo.markers import torch_has_marker
from dyndbg.engine.breakpoints import BreakpointTable
from dyndbg.engine.dynamo_notices import DynamoNotices
from dyndbg.engine.codeinfo import CodeInfo, Instr, code_info
from dyndbg.engine.conditions import Conditions
from dyndbg.engine.exceptions import ConditionInterrupted, DyndbgQuit
from dyndbg.engine.fast_paths import FastPaths
from dyndbg.engine.live_frames import LiveFrames
from dyndbg.engine.recording.history import History
from dyndbg.engine.interrupts import Interrupts
from dyndbg.engine.modes import Mode, StepKind
from dyndbg.engine.policy import TracePolicy, keeps_entry_names
from dyndbg.engine.postmortem import FailureLog, post_mortem_stop
from dyndbg.engine.snapshots import Snapshots
from dyndbg.engine.stop import (CompileStop, GraphStop, HeldStop, InstructionTraceEvent, InstructionTraceKind,
                                Stop, StopReason, frame_event)
from dyndbg.engine.compile_stepping import CompileStepper
from dyndbg.engine.inside_graphs import InsideGraphs
from dyndbg.engine.run_control import RunControl
from dyndbg.engine.tracing.tracer import Tracer
from dyndbg.engine.tracing.choice import make_tracer
from dyndbg.faults import FAULTS_ON, maybe_fault

__all__ = ["ConditionInterrupted", "DyndbgQuit", "Engine", "Frontend"]

# Exceptions that are control flow, not failures: no stop for these.
_QUIET_EXCEPTIONS = (StopIteration, StopAsyncIteration, GeneratorExit)


class Frontend(Protocol):
    def interact(self, stop: Stop) -> None: ...
    def interact_compile(self, stop: CompileStop) -> None: ...
    def interact_graph(self, stop: GraphStop) -> None: ...
    def instruction_traced(self, event: InstructionTraceEvent) -> None: ...
    def message(self, text: str) -> None: ...


class Engine(RunControl):
    def __init__(self, frontend: Frontend, force_fallback: bool = False) -> None:
        # The layout self-check, once, before any event, and before the history
        # and the tracing mechanism take the compiled core's parts: a compiled
        # reader that fails it sends the whole process to the Python core.
        stack_support()
        self.frontend = frontend
        self.registry = Registry()
        self.breakpoints = BreakpointTable(
            lambda: [(entry, self.info_for(entry)) for entry in self.registry.entries()])
        if torch_has_marker():
            self.breakpoints.add_marker_breakpoint()
        self.policy = TracePolicy(self.registry, self.breakpoints)
        self.conditions = Conditions()   # before the tracer: its compiled callbacks use them
        self._mode = Mode()
        self.detached = False
        self.notices = DynamoNotices(frontend.message, self.breakpoints, self.stop_soon)
        self.hooks = DynamoHooks(self.registry, self._on_code_start, self._suspend,
                                 self._resume, self.internal_error, force_fallback,
                                 on_give_up=self.notices.gave_up, on_skip=self.notices.skipped)
        # Stops while dynamo compiles (`catch trace`, `b --trace`): hooked on first use.
        # The stop the program is at, of either kind: the front ends read it here.
        self.held = HeldStop()
        self.compile_stops = CompileStepper(self.breakpoints, frontend, self.internal_error,
                                            self.held)
        # What watches compiled graphs' code as it runs (inside_graphs.py), and its parts.
        self.graphs = InsideGraphs(
            lambda: self.tracer, self.breakpoints, self.held, frontend, frontend.message,
            self.registry,
            lambda frame, expr, names=None: self.conditions.evaluate(frame, expr, lambda: None, names))
        self.graph_watches = self.graphs.watches
        self.graph_steps = self.graphs.steps         # `s` at a graph's call
        self.backward_catch = self.graphs.backward   # `catch backward`
        self.graph_lines = self.graphs.lines         # `b FILE:LINE` inside graphs
        self.nan_catch = self.graphs.nan             # `catch nan`
        self.snapshots = Snapshots()    # the stacks read, for exception stops and `up`
        self.failures = FailureLog()                   # for post_mortem()
        self.history = History()                       # `record on`: what ran, to step back
        self.fast_paths = FastPaths(lambda: self._mode.stepping, self.policy, self.history,
                                    self.breakpoints, self.conditions, self.hooks, self.info_for)
        self.frames = LiveFrames(self.snapshots, self.history)
        # Before the tracer: its compiled core empties these at a frame's start and end.
        self.frame_keyed = self.frames.keyed
        self.tracer: Tracer = make_tracer(self, frontend.message)
        self.registry.on_add = self._code_added
        self.interrupts = Interrupts(self, frontend.message)
        self._stop_recorded = False                    # its instruction is in the history
        self._generated = self.registry.by_id          # for the hot paths: id(code) -> entry
        self._stopped_exception: BaseException | None = None

    # -- life cycle -----------------------------------------------------------
    def start(self) -> None:
        if cores.note():  # the compiled core was not built, or failed its check
            self.frontend.message(cores.note())
        self.interrupts.install()
        self.hooks.install()
        # Everything dyndbg runs is entered through these: dynamo must skip them
        # and all they call.
        self.hooks.shield(self.interrupts.on_sigint, *self.history.entry_points())
        self.tracer.start()
        self.hooks.set_callback_active(self._wants_callback())
        EDITS.on_code = self.registry.add_edited

    def detach(self) -> None:
        """No more stops: the program runs on as without dyndbg."""
        self.detached = True
        self.graphs.disarm()
        self.hooks.uninstall()
        self.compile_stops.disarm()
        self.interrupts.restore()
        self.interrupts.pending = False
        self.snapshots.clear()
        self.failures.clear()
        self.history.on = self.policy.history = False
        self.history.clear()
        self.frames.clear()
        self._stopped_exception = None
        self.tracer.stop()
        EDITS.end_session(self.frontend.message)

    def close(self) -> None:
        """Detach and unregister from torch, for a session that ends outside
        torch's own hook loops (the end of `with dyndbg.debug()`)."""
        self.detach()
        self.hooks.remove()

    def quit(self) -> None:
        self.detach()
        raise DyndbgQuit()

    @property
    def in_condition(self) -> bool:
        """A breakpoint condition is running (Ctrl-C interrupts it, not the program)."""
        return self.conditions.running

    @property
    def traces_globally(self) -> bool:
        """No C callback where the mechanism needs one: a global trace function
        sees every call (slower)."""
        return self.tracer.needs_code_callback and not self.hooks.has_callback

    # -- set_trace() and Ctrl-C ---------------------------------------------------
    def stop_soon(self, frame: types.FrameType | None, caller: str = "") -> None:
        """set_trace(): stop at the next generated instruction to run: in the
        innermost generated frame that `frame` returns to, if there is one.
        `caller` names the entry point for the stop's first line."""
        generated = self.registry.generated_frames(frame)
        self.step_into(generated)
        if caller and generated:
            self.mode.why = f"after {caller}"
        elif caller and frame is not None:
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            self.mode.why = f"at the first generated code since {caller} at {where}"

    def step_into(self, frames: list[types.FrameType]) -> None:
        """Step mode, with these live generated frames stopping at their next instruction."""
        self.mode = Mode(StepKind.STEP)
        self.hooks.set_callback_active(self._wants_callback())
        self.tracer.step_into(frames)

    @property
    def at_prompt(self) -> bool:
        """The front end is serving a stop: in generated code, or while dynamo compiles."""
        return self.held.current is not None

    # -- queries ----------------------------------------------------------------
    def entry_for(self, code: types.CodeType) -> GeneratedCode | None:
        return self.registry.get(code)

    def info_for(self, entry: GeneratedCode) -> CodeInfo:
        return code_info(entry.extra, entry.code)

    def _instr_at(self, frame: types.FrameType) -> Instr | None:
        entry = self.registry.get(frame.f_code)
        return None if entry is None else self.info_for(entry).containing(frame.f_lasti)

    # -- torch's hooks ------------------------------------------------------------
    def _on_code_start(self, code: types.CodeType) -> None:
        """torch's C callback: generated code is about to run."""
        if FAULTS_ON:
            maybe_fault("callback")
        if id(code) not in self._generated:  # compiled before dyndbg was attached
            self.registry.recover(code) or self.registry.add_transformed(None, code, None)
        if not self.detached:
            self.tracer.code_starting(code)

    def _code_added(self, entry: GeneratedCode) -> None:
        """New generated code: breakpoints number their places in it (gdb's
        N.M) as it appears, and the mechanism sets its events."""
        self.graphs.code_added()    # catch nan: its graph, installed as dynamo made the code
        self.breakpoints.at_code(entry, self.info_for(entry))
        self.tracer.code_added(entry)

    def _suspend(self) -> None:
        self.tracer.suspend()

    def _resume(self) -> None:
        self.compile_stops.compile_ended()
        if not self.detached:
            self.graphs.sync()      # one set at a compile stop
            self.tracer.resume()

    # -- events (delivered by the tracing mechanism) -------------------------------
    def on_frame_start(self, frame: types.FrameType) -> None:
        """A traced generated frame starts (a new frame may reuse a finished one's id)."""
        self.frames.start(frame, self._generated.get(id(frame.f_code)))
        if self.policy.instruction_trace:
            self._instruction_traced(InstructionTraceKind.ENTER, frame)

    def start_only_forgets(self, entry: GeneratedCode) -> bool:
        """on_frame_start of a frame of `entry` does no more than forget: a
        mechanism may do that itself (the compiled core, settrace.c)."""
        return keeps_entry_names(entry) and not self.policy.instruction_trace

    def forget(self, frame: types.FrameType) -> None:
        """The frame can stop no more (it returned, or was released): what is
        kept by its id goes (the compiled core does the same, settrace.c)."""
        self.frames.forget(frame)

    def on_return(self, frame: types.FrameType, value: object = None) -> None:
        """The frame returns `value`, or is left by an exception."""
        self.forget(frame)
        if self.policy.instruction_trace:
            self._instruction_traced(InstructionTraceKind.RETURN, frame, value=value)
        if self.mode.frame is frame and not self.mode.goes_on_after(frame):
            self.mode = Mode(StepKind.STEP)   # stepped off: the next generated instruction

    def on_idle(self) -> None:
        """No traced generated frame is running (or the exception that stopped
        one was handled): the next exception is a new one."""
        self._stopped_exception = None

    def on_instruction(self, frame: types.FrameType) -> None:
        """Before the instruction at frame.f_lasti runs: stop there if a
        breakpoint or the stepping mode says so."""
        if FAULTS_ON:
            maybe_fault("opcode")
        code = frame.f_code
        entry = self._generated.get(id(code)) or self.registry.get(code)
        if entry is None:
            return
        info = self.info_for(entry)
        if self.history.on:
            self.history.record(frame, entry, info)
        # Delivered for `record on` alone, every instruction comes here too.
        stepping = self._mode.stepping or self.policy.instruction_trace
        if not stepping and frame.f_lasti not in self.breakpoints.armed(entry, info):
            return  # the fast path: nothing can stop here
        instr = info.at_offset(frame.f_lasti)
        if instr is None:
            return
        if self.policy.instruction_trace:
            self.frontend.instruction_traced(InstructionTraceEvent(
                InstructionTraceKind.INSTRUCTION, frame, entry, info, instr))
        read: list[tuple[list[object] | None, str]] = []

        def stack() -> list[object] | None:
            """The value stack, read once and only if something needs it."""
            if not read:
                try:
                    read.append((read_value_stack(frame), ""))
                except StackUnavailable as why:
                    read.append((None, str(why)))
            return read[0][0]

        # For an exception stop; `trace on` saw the instruction too, so its
        # stack is known there as well.
        values = stack() if self._mode.stepping or self.policy.instruction_trace else None
        if values is not None:
            self.snapshots.keep(frame, values)
        hit = self.breakpoints.hit(
            entry, info, frame, instr, stack,
            lambda expr: self.conditions.evaluate(frame, expr, stack), self.frontend.message)
        if not hit and not self.mode.stops_at(frame, instr):
            return
        reason = StopReason.BREAKPOINT if hit else StopReason.STEP
        values = stack()
        self._stop(Stop(frame, entry, info, instr, reason, values, read[0][1], hit,
                        why=self.mode.why if reason is StopReason.STEP else ""))

    def _instruction_traced(self, kind: InstructionTraceKind, frame: types.FrameType,
                            value: object = None) -> None:
        entry = self.registry.get(frame.f_code)
        if entry is not None:
            self.frontend.instruction_traced(
                frame_event(kind, frame, entry, self.info_for(entry), value))

    def on_exception(self, frame: types.FrameType, exc: BaseException) -> None:
        """An exception is raised in (or passes through) a traced generated frame."""
        if isinstance(exc, _QUIET_EXCEPTIONS) or exc is self._stopped_exception:
            return
        entry = self.registry.get(frame.f_code)
        if entry is None:
            return
        info = self.info_for(entry)
        instr = info.containing(frame.f_lasti)
        if instr is None:
            return
        stack = self.snapshots.before_current(frame)
        if stack is None and self.history.on:
            stack = self.history.stack_before(frame)
        self.failures.record(frame, stack)
        if not self.policy.exception_stops(entry, frame, self._mode.stepping,
                                           self.frames.has_stopped(frame)):
            return  # traced only to record or to show
        self._stopped_exception = exc
        note = "before the failing instruction" if stack is not None else \
            "not recorded before the failing instruction"
        self._stop(Stop(frame, entry, info, instr, StopReason.EXCEPTION, stack, note,
                        exception=exc))

    def on_call_failed(self, caller: types.FrameType) -> None:
        """--post-mortem: an exception leaves a call made by the generated frame
        `caller`: keep its stack as before that call (its operands are still there)."""
        if id(caller.f_code) not in self._generated:
            return
        self.snapshots.keep_suspended(caller)

    def post_mortem(self, tb: types.TracebackType | None, exc: BaseException | None) -> bool:
        """Open the front end at the innermost generated frame of the traceback
        `tb`, as it failed. False if the traceback has no generated frame."""
        stop = post_mortem_stop(self.registry, self.failures, tb, exc)
        if stop is None:
            return False
        self._stop(stop)
        return True

    def _stop(self, stop: Stop) -> None:
        self.frames.at_stop(stop)
        self.interrupts.pending = False
        if stop.reason is not StopReason.POST_MORTEM:
            self.tracer.keep(stop.frame)   # its state here lasts until it returns
        maybe_fault("render")
        self._stop_recorded = self.history.on
        with self.held.holding(stop):
            self.frontend.interact(stop)

    def internal_error(self, where: str, error: BaseException) -> None:
        """An error inside dyndbg: say so once, detach, let the program go on."""
        try:
            self.frontend.message(
                f"*** dyndbg internal error in {where}: {type(error).__name__}: {error}; "
                "detaching, the program continues without the debugger")
        finally:
            self.detach()

