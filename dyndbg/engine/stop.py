"""What the engine hands the front end: a stop, or a line of the
instruction trace."""
from __future__ import annotations

import enum
import types
from dataclasses import dataclass, field
from typing import NamedTuple

from dyndbg.cpython import is_return
from dyndbg.dynamo.compiles import GeneratedCode
from dyndbg.engine.breakpoints import Breakpoint
from dyndbg.engine.codeinfo import CodeInfo, Instr


class StopReason(enum.Enum):
    STEP = "step"
    BREAKPOINT = "breakpoint"
    EXCEPTION = "exception"
    POST_MORTEM = "post-mortem"


@dataclass
class Stop:
    frame: types.FrameType
    entry: GeneratedCode
    info: CodeInfo
    instr: Instr
    reason: StopReason
    stack: list[object] | None                    # None when not readable
    stack_note: str = ""                          # why not readable, or how it was taken
    breakpoints: list[Breakpoint] = field(default_factory=list)
    exception: BaseException | None = None
    first_in_frame: bool = False                  # the first stop in this run of the frame
    entry_locals: dict | None = None              # its arguments and free variables at its start
    why: str = ""                                 # "after dyndbg.breakpoint()" and the like
    # post mortem: the traceback's frames, each with the instruction it was at
    frames: list[tuple[types.FrameType, int]] | None = None


class InstructionTraceKind(enum.Enum):
    ENTER = "enter"              # a generated frame starts
    INSTRUCTION = "instruction"  # before it runs
    RETURN = "return"            # the frame returns `value`
    UNWIND = "unwind"            # the frame is left by an exception


class InstructionTraceEvent(NamedTuple):
    """One line of `trace on`'s output."""

    kind: InstructionTraceKind
    frame: types.FrameType
    entry: GeneratedCode
    info: CodeInfo
    instr: Instr | None          # INSTRUCTION only
    value: object = None         # RETURN only


def frame_event(kind: InstructionTraceKind, frame: types.FrameType, entry: GeneratedCode, info: CodeInfo,
                value: object = None) -> InstructionTraceEvent:
    """The trace line of a frame's start (ENTER) or end (RETURN): an end at
    an instruction that is no return is by an exception (UNWIND)."""
    if kind is InstructionTraceKind.RETURN:
        instr = info.containing(frame.f_lasti)
        if instr is None or not is_return(instr.opname):
            kind = InstructionTraceKind.UNWIND
    return InstructionTraceEvent(kind, frame, entry, info, None, value)
