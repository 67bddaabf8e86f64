"""Where the callable and its arguments sit on the value stack at a call."""
from __future__ import annotations

import sys
from dataclasses import dataclass

from dyndbg.cpython.valuestack import NULL

CALL_OPNAMES = frozenset({"CALL", "CALL_FUNCTION_EX"})


@dataclass
class CallSite:
    function: object
    args: list[object]          # positional arguments, a bound self first


def call_site(opname: str, arg: int | None, stack: list[object]) -> CallSite | None:
    """The call the instruction is about to make, read from the stack; None if
    the instruction is not a call or the stack does not fit."""
    if opname == "CALL" and arg is not None and len(stack) >= arg + 2:
        below, above = stack[-arg - 2], stack[-arg - 1]
        args = list(stack[len(stack) - arg:])
        if sys.version_info[:2] == (3, 11):
            # 3.11: [NULL, callable, args...] or [method, self, args...]
            return CallSite(above, args) if below is NULL else CallSite(below, [above] + args)
        # 3.12+: [callable, NULL, args...] or [callable, self, args...]
        return CallSite(below, args) if above is NULL else CallSite(below, [above] + args)
    if opname == "CALL_FUNCTION_EX" and arg is not None:
        # [NULL, callable, args, kwargs if arg & 1]
        position = -3 if arg & 1 else -2
        if len(stack) < -position:
            return None
        positional = stack[position + 1]
        if not isinstance(positional, (tuple, list)):
            return None
        return CallSite(stack[position], list(positional))
    return None
