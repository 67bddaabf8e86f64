"""Post mortem: the frames an exception left, each with the value stack as it
was before the failing instruction where that was recorded, and the stop
that opens the front end at the innermost generated frame of a traceback."""
from __future__ import annotations

import collections
import types
from typing import NamedTuple

from dyndbg.cpython import instruction_start
from dyndbg.dynamo import Registry
from dyndbg.engine.codeinfo import code_info
from dyndbg.engine.stop import Stop, StopReason
from dyndbg.ownframes import is_own_frame

NOT_RECORDED = ("not recorded before the failing instruction (recorded under "
                "`python -m dyndbg --post-mortem`)")


class Failure(NamedTuple):
    frame: types.FrameType
    lasti: int
    stack: list[object] | None


class FailureLog:
    """The latest frames an exception left (only the latest matter; few are
    kept, so few frames stay alive)."""

    KEPT = 8

    def __init__(self) -> None:
        self._failed: collections.OrderedDict[int, Failure] = collections.OrderedDict()

    def record(self, frame: types.FrameType, stack: list[object] | None) -> None:
        self._failed[id(frame)] = Failure(frame, _start(frame.f_code, frame.f_lasti), stack)
        while len(self._failed) > self.KEPT:
            self._failed.popitem(last=False)

    def stack_of(self, frame: types.FrameType, lasti: int) -> list[object] | None:
        failure = self._failed.get(id(frame))
        if failure is not None and failure.frame is frame and \
                failure.lasti == _start(frame.f_code, lasti):
            return failure.stack
        return None

    def clear(self) -> None:
        self._failed.clear()


def _start(code: types.CodeType, offset: int) -> int:
    """The instruction holding `offset` (which may point into its inline cache)."""
    start = instruction_start(code, offset)
    return offset if start is None else start


def post_mortem_stop(registry: Registry, failures: FailureLog, tb: types.TracebackType | None,
                     exc: BaseException | None) -> Stop | None:
    """The stop at the innermost generated frame of the traceback `tb`, at the
    instruction it failed on; None if the traceback has no generated frame."""
    entries = []
    while tb is not None:
        entries.append((tb.tb_frame, tb.tb_lasti))
        tb = tb.tb_next
    for depth in range(len(entries) - 1, -1, -1):
        frame, lasti = entries[depth]
        entry = registry.get(frame.f_code)
        if entry is not None:
            break
    else:
        return None
    info = code_info(entry.extra, entry.code)
    instr = info.containing(lasti)
    if instr is None:
        return None
    stack = failures.stack_of(frame, lasti)
    note = "as before the failing instruction" if stack is not None else NOT_RECORDED
    frames = [(f, i) for f, i in entries[:depth + 1] if not is_own_frame(f)]
    return Stop(frame, entry, info, instr, StopReason.POST_MORTEM, stack, note,
                exception=exc, frames=frames)
