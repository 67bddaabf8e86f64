"""Where the callable and its arguments sit on the stack at `CALL n`."""
from __future__ import annotations

import sys

from dyndbg.cpython.valuestack import NULL


def call_target(stack: list[object], nargs: int) -> tuple[object, int] | None:
    """(callable, number of arguments including a bound self) or None."""
    if len(stack) < nargs + 2:
        return None
    below, above = stack[-nargs - 2], stack[-nargs - 1]
    if sys.version_info[:2] == (3, 11):
        # 3.11: [NULL, callable, args...] or [method, self, args...]
        return (above, nargs) if below is NULL else (below, nargs + 1)
    # 3.12+: [callable, NULL, args...] or [callable, self, args...]
    return (below, nargs) if above is NULL else (below, nargs + 1)
