"""What dyndbg says when dynamo stops compiling a function, which then runs
eagerly: it gave up on it (the recompile limit, dynamo/compiles/give_ups.py) or
skipped its frame (an exception torch suppressed, dynamo/compiles/skips.py).
One line each on the front end's output; with `catch recompile` (a give-up)
or `catch graph-break` (a skip at a graph break) the program also stops at
the next generated instruction to run: the caller's, once the function
returns, where the caller is generated code; as near the event as generated
code gets.
"""
from __future__ import annotations

import types
from typing import Callable

from dyndbg.dynamo.compiles import program_frame
from dyndbg.dynamo.compiles import FrameSkip
from dyndbg.dynamo.compiles import GiveUp
from dyndbg.engine.breakpoints import BreakpointTable


class DynamoNotices:
    """Told by the dynamo hooks; `stop_soon(frame, caller)` is the engine's."""

    def __init__(self, message: Callable[[str], None], breakpoints: BreakpointTable,
                 stop_soon: Callable[[types.FrameType | None, str], None]) -> None:
        self._message = message
        self._breakpoints = breakpoints
        self._stop_soon = stop_soon

    def gave_up(self, give_up: GiveUp) -> None:
        self._message(give_up.one_line())
        if self._breakpoints.catches("recompile"):
            self._stop_soon(program_frame(), f"dynamo gave up on {give_up.function} "
                                             "(catch recompile)")

    def skipped(self, skip: FrameSkip) -> None:
        self._message(skip.one_line())
        if skip.graph_break and self._breakpoints.catches("graph-break"):
            self._stop_soon(program_frame(), f"dynamo skipped {skip.function} "
                                             "(catch graph-break)")
