"""The engine's state, as values: where the next stop may happen, and how
much of a generated frame must be traced for it."""
from __future__ import annotations

import enum
import types
from dataclasses import dataclass, field
from typing import NamedTuple

from dyndbg.cpython import is_return
from dyndbg.dynamo.names import is_resume_name
from dyndbg.engine.codeinfo import Instr


class StepKind(enum.Enum):
    STEP = "step"            # the next generated instruction, any frame
    NEXT = "next"            # the next instruction of one frame
    RETURN = "return"        # that frame's return instruction
    UNTIL = "until"          # an instruction of that frame at or past an index
    LINE = "line"            # the next user source line of one frame (`into`: or another frame)
    CONTINUE = "continue"    # breakpoints and catchpoints only


@dataclass
class Mode:
    """Where the next stop may happen."""

    kind: StepKind = StepKind.STEP
    frame: types.FrameType | None = None   # for NEXT, RETURN, UNTIL, LINE
    count: int = 1                         # step N / next N / nextline N
    until_index: int = -1
    why: str = ""                          # said at the stop, e.g. "after dyndbg.breakpoint()"
    line: int | None = None                # LINE: the user line being stepped off
    last_index: int = -1                   # LINE: the frame's last instruction seen
    into: bool = False                     # LINE: stop in any other generated frame too
    looped: bool = False                   # LINE: a jump back since the last line stop
    callers: list[types.FrameType] = field(default_factory=list)   # LINE: frames whose
    #   resume function the step went on in, innermost last
    draining: bool = False                 # LINE: the frame only returns its resume's result

    @classmethod
    def lines(cls, frame: types.FrameType, here: Instr | None, count: int = 1,
              into: bool = False) -> Mode:
        """LINE mode from `frame`'s current instruction `here` (None if unknown)."""
        return cls(StepKind.LINE, frame, count, line=None if here is None else here.line,
                   last_index=-1 if here is None else here.index, into=into)

    @property
    def stepping(self) -> bool:
        """Every generated instruction may stop (the engine decides which)."""
        return self.kind is not StepKind.CONTINUE

    def stops_at(self, frame: types.FrameType, instr: Instr) -> bool:
        """Whether this mode stops before `instr` of `frame`; a step, next or
        line count counts down here."""
        if self.kind is StepKind.CONTINUE:
            return False
        if self.kind is StepKind.RETURN:
            return frame is self.frame and is_return(instr.opname)
        if self.kind is StepKind.UNTIL:
            return frame is self.frame and instr.index >= self.until_index
        if self.kind is StepKind.LINE and not self._new_line(frame, instr):
            return False
        if self.kind is StepKind.NEXT and frame is not self.frame:
            return False
        self.count -= 1
        return self.count <= 0

    def _new_line(self, frame: types.FrameType, instr: Instr) -> bool:
        """LINE: `instr` starts a user line other than the one being stepped
        off, or the same one again after a jump back (a loop: CPython's line
        events, hence pdb's `next`, count a backward jump as a new entry).
        With `into`, another generated frame's first instruction seen counts
        too. A resume function the frame calls is the rest of the same user
        function (after a graph break): the step goes on in it, line by line,
        as F10 over `print()` reaches the next line. A line that counts
        becomes the one stepped off (for a count)."""
        caller = self.frame
        if not self.into and frame is not caller and \
                getattr(frame, "f_back", None) is caller and caller is not None and \
                is_resume_name(frame.f_code.co_name):
            self.callers.append(caller)
            self.frame, self.last_index, self.looped = frame, -1, False
        if self.draining and frame is self.frame:
            return False
        if frame is not self.frame:
            if not self.into:
                return False   # calls run through
            self.frame = frame
        else:
            self.looped |= instr.index <= self.last_index
            if instr.line is None or (instr.line == self.line and not self.looped):
                self.last_index = instr.index
                return False
        self.line, self.last_index, self.looped = instr.line, instr.index, False
        return True

    def goes_on_after(self, frame: types.FrameType) -> bool:
        """The stepped frame returned: whether the step goes on, in the frame
        whose resume function it was. What dynamo left there after that call
        only returns its result: no line of the user's, so it runs to its own
        return (then the next generated instruction stops, as for any frame)."""
        if self.kind is not StepKind.LINE or frame is not self.frame or not self.callers:
            return False
        self.frame, self.draining = self.callers.pop(), True
        return True


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
