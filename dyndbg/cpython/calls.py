"""Where the callable and its arguments sit on the value stack at a call.

3.11, 3.12: CALL n              [NULL, callable, args...] or [method, self, args...]
            CALL_FUNCTION_EX    [NULL, callable, args, kwargs if arg & 1]
3.13:       CALL n              [callable, NULL, args...] or [callable, self, args...]
            CALL_KW n           the same, with the keyword names on top
            CALL_FUNCTION_EX    [callable, NULL, args, kwargs if arg & 1]
3.14, 3.15: as 3.13, but CALL_FUNCTION_EX has no argument and always
            [callable, NULL, args, kwargs or NULL]
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from dyndbg.cpython.opcodes import function_ex_kwargs_slot
from dyndbg.cpython.valuestack import NULL

_CALLABLE_FIRST = sys.version_info >= (3, 13)


@dataclass
class CallSite:
    function: object
    args: list[object]          # positional arguments, a bound self first


def call_site(opname: str, arg: int | None, stack: list[object]) -> CallSite | None:
    """The call the instruction is about to make, read from the stack; None if
    the instruction is not a call or the stack does not fit."""
    if arg is None and opname != "CALL_FUNCTION_EX":   # 3.14's takes none
        return None
    arg = arg or 0
    if opname == "CALL_KW":
        if len(stack) < arg + 3:
            return None
        stack = stack[:-1]      # the keyword names: the last arguments are keywords
        opname = "CALL"
    if opname == "CALL" and len(stack) >= arg + 2:
        below, above = stack[-arg - 2], stack[-arg - 1]
        args = list(stack[len(stack) - arg:])
        if _CALLABLE_FIRST:
            return CallSite(below, args) if above is NULL else CallSite(below, [above] + args)
        return CallSite(above, args) if below is NULL else CallSite(below, [above] + args)
    if opname == "CALL_FUNCTION_EX":
        position = -3 if function_ex_kwargs_slot(arg) else -2   # where callable and NULL end
        if len(stack) < 1 - position:
            return None
        positional = stack[position + 1]
        if not isinstance(positional, (tuple, list)):
            return None
        function = stack[position - 1] if _CALLABLE_FIRST else stack[position]
        return CallSite(function, list(positional))
    return None
