"""The engine's state, as values: where the next stop may happen, and how
much of a generated frame must be traced for it."""
from __future__ import annotations

import enum
import types
from dataclasses import dataclass
from typing import NamedTuple


class StepKind(enum.Enum):
    STEP = "step"            # the next generated instruction, any frame
    NEXT = "next"            # the next instruction of one frame
    RETURN = "return"        # that frame's return instruction
    UNTIL = "until"          # an instruction of that frame at or past an index
    CONTINUE = "continue"    # breakpoints and catchpoints only


@dataclass
class Mode:
    """Where the next stop may happen."""

    kind: StepKind = StepKind.STEP
    frame: types.FrameType | None = None   # for NEXT, RETURN, UNTIL
    count: int = 1                         # step N / next N
    until_index: int = -1
    why: str = ""                          # said at the stop, e.g. "after dyndbg.breakpoint()"

    @property
    def stepping(self) -> bool:
        """Every generated instruction may stop (the engine decides which)."""
        return self.kind is not StepKind.CONTINUE

    def stops_at(self, frame: types.FrameType, index: int, returns: bool) -> bool:
        """Whether this mode stops before the instruction `index` of `frame`
        (`returns`: it is a return); a step or next count counts down here."""
        if self.kind is StepKind.CONTINUE:
            return False
        if self.kind is StepKind.RETURN:
            return frame is self.frame and returns
        if self.kind is StepKind.UNTIL:
            return frame is self.frame and index >= self.until_index
        if self.kind is StepKind.NEXT and frame is not self.frame:
            return False
        self.count -= 1
        return self.count <= 0


class TraceLevel(enum.IntEnum):
    """How much of a generated frame is traced, least first."""

    NONE = 0     # not at all
    CALLS = 1    # its start, return and exceptions, and the calls it makes
                 # (to see a resume function start, or a call fail)
    ARMED = 2    # also its armed instructions (breakpoints after continue)
    EVERY = 3    # every instruction (stepping)


class CodeNeeds(NamedTuple):
    """What one generated code object needs traced (for mechanisms that set
    events per code object, as sys.monitoring does)."""

    instructions: TraceLevel   # NONE, ARMED (its armed instructions) or EVERY
    starts: bool               # its frames' arguments at the start and their returns
    resume_calls: bool         # the calls it makes into resume functions
    exceptions: bool           # exceptions raised in it (a stop, or --post-mortem's record)
