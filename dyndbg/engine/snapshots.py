"""The value stacks the engine read, by live frame: the stack before a frame's
current instruction stays readable after that instruction failed (an
exception stop), or while the frame is suspended in a call (`up`)."""
from __future__ import annotations

import types

from dyndbg.cpython import StackUnavailable, instruction_start, read_suspended_stack


class Snapshots:
    def __init__(self) -> None:
        # id(frame) -> (f_lasti, the stack before that instruction): the last one read
        self.by_frame: dict[int, tuple[int, list[object]]] = {}

    def __len__(self) -> int:
        return len(self.by_frame)

    def keep(self, frame: types.FrameType, stack: list[object]) -> None:
        self.by_frame[id(frame)] = (frame.f_lasti, stack)

    def keep_suspended(self, frame: types.FrameType) -> None:
        """A frame suspended in a call: its stack as before that call."""
        try:
            self.keep(frame, read_suspended_stack(frame))
        except StackUnavailable:
            pass

    def clear(self) -> None:
        self.by_frame.clear()

    def before_current(self, frame: types.FrameType) -> list[object] | None:
        """The stack before `frame`'s current instruction, if it was read."""
        snapshot = self.by_frame.get(id(frame))
        if snapshot is None:
            return None
        lasti = frame.f_lasti  # at an exception event it may point into the inline cache
        if snapshot[0] != lasti and snapshot[0] != instruction_start(frame.f_code, lasti):
            return None
        return snapshot[1]

    def suspended(self, frame: types.FrameType) -> list[object] | None:
        """The stack of a live generated frame suspended in a call (a caller of
        the stopped frame), as before its current instruction."""
        snapshot = self.before_current(frame)
        if snapshot is not None:
            return snapshot
        try:
            return read_suspended_stack(frame)
        except StackUnavailable:
            return None
