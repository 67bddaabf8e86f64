"""How the program runs on from a stop (the engine's resume modes: step,
next, return, until, continue) and the settings that make every generated
instruction reach the engine (`trace on`, `record on`, --post-mortem's
failed calls). The engine (debugger.py) is a RunControl; the front ends set
these at a stop, and the tracing mechanism reads the policy they set."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING

from dyndbg.engine.codeinfo import Instr
from dyndbg.engine.modes import Mode, StepKind
from dyndbg.engine.stop import Stop, StopReason

if TYPE_CHECKING:
    from dyndbg.dynamo import DynamoHooks
    from dyndbg.engine.inside_graphs import InsideGraphs
    from dyndbg.engine.policy import TracePolicy
    from dyndbg.engine.recording.history import History
    from dyndbg.engine.stop import HeldStop
    from dyndbg.engine.tracing.tracer import Tracer


class RunControl:
    """The Engine's resume modes and tracing settings (a part of Engine)."""

    _mode: Mode
    _stop_recorded: bool
    policy: TracePolicy
    graphs: InsideGraphs
    tracer: Tracer
    hooks: DynamoHooks
    history: History
    held: HeldStop

    def _instr_at(self, frame: types.FrameType) -> Instr | None:
        raise NotImplementedError

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        self._mode = mode
        # Every generated instruction is delivered while `trace on` or `record on`.
        self.policy.stepping = mode.stepping or self.policy.instruction_trace or self.policy.history

    @property
    def instruction_trace(self) -> bool:
        """`trace on`: every generated instruction that runs, and every
        generated frame's start and return, go to the front end's trace()."""
        return self.policy.instruction_trace

    @instruction_trace.setter
    def instruction_trace(self, on: bool) -> None:
        self.policy.instruction_trace = on
        self._resume_with(self._mode)   # every instruction is delivered while on

    @property
    def keep_failed_calls(self) -> bool:
        """--post-mortem: keep the stack of every call out of generated code
        that an exception leaves, for post_mortem()."""
        return self.policy.failed_calls

    @keep_failed_calls.setter
    def keep_failed_calls(self, on: bool) -> None:
        self.policy.failed_calls = on
        self.tracer.retrace()

    @property
    def recording(self) -> bool:
        """`record on`: each generated instruction that runs goes into `history`."""
        return self.history.on

    @recording.setter
    def recording(self, on: bool) -> None:
        if not on:
            self.history.pause()
        elif self.held.generated is not None and not self._stop_recorded:
            self._record_stop(self.held.generated)
        self.history.on = self.policy.history = on
        self._resume_with(self._mode)   # every instruction is delivered while on

    def _record_stop(self, stop: Stop) -> None:
        """`record on` at a stop: the instruction it is at, not run yet, is the
        first recorded (with recording on, the tracer records each instruction
        just before it stops there). Not at an exception or post mortem: the
        failing instruction has run."""
        if stop.reason in (StopReason.STEP, StopReason.BREAKPOINT):
            self.history.record(stop.frame, stop.entry, stop.info)
            self._stop_recorded = True

    # -- resume modes (set by the front end) -----------------------------------
    def set_step(self, count: int = 1) -> None:
        self._resume_with(Mode(StepKind.STEP, count=count))

    def step_into_graph(self, frame: types.FrameType, name: str, backend: str | None) -> str:
        """`s` at the call of the compiled graph global `name` in `frame`:
        stop before each of its nodes as it runs, then at the instruction after
        the call. Step mode is set either way; "" when the graph is entered,
        else the one line saying why it is stepped over (where the tracing
        mechanism cannot watch the graph's code, only the first time: it
        does not change within a session)."""
        self.set_step(1)
        return self.graphs.step_into(frame, name, backend)

    def set_next(self, frame: types.FrameType, count: int = 1) -> None:
        self._resume_with(Mode(StepKind.NEXT, frame, count=count))

    def set_next_line(self, frame: types.FrameType, count: int = 1) -> None:
        self._resume_with(Mode.lines(frame, self._instr_at(frame), count))

    def set_step_line(self, frame: types.FrameType, count: int = 1) -> None:
        self._resume_with(Mode.lines(frame, self._instr_at(frame), count, into=True))

    def set_return(self, frame: types.FrameType) -> None:
        self._resume_with(Mode(StepKind.RETURN, frame))

    def set_until(self, frame: types.FrameType, index: int) -> None:
        self._resume_with(Mode(StepKind.UNTIL, frame, until_index=index))

    def set_continue(self) -> None:
        self._resume_with(Mode(StepKind.CONTINUE))

    def rearm(self) -> None:
        """Breakpoints changed while the program runs (an editor's): trace for them now."""
        self._resume_with(self._mode)

    def _resume_with(self, mode: Mode) -> None:
        self.mode = mode
        self.graphs.sync()      # before retrace: catch nan may arm generated code
        self.tracer.retrace()
        self.hooks.set_callback_active(self._wants_callback())

    def _wants_callback(self) -> bool:
        return self.policy.wants_callback(self.tracer.needs_code_callback)

