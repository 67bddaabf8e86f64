"""Facts about instructions that differ between Python versions, by opname.

engine/ and ui/ ask these questions instead of naming opcodes themselves.
"""
from __future__ import annotations

# A frame's start is reported as its 'call' (settrace) or PY_START (monitoring)
# event; RESUME itself gets no opcode or INSTRUCTION event (measured on
# 3.11-3.13), so no stop can happen there.
SILENT_OPNAMES = frozenset({"RESUME"})

# Calls whose callable and arguments are on the value stack (3.13 adds CALL_KW,
# which carries the keyword names on top; 3.11 and 3.12 use KW_NAMES + CALL).
CALL_OPNAMES = frozenset({"CALL", "CALL_FUNCTION_EX", "CALL_KW"})

# Instructions that leave the frame with a value: RETURN_VALUE returns the top
# of the stack; RETURN_CONST (3.12, 3.13) its constant argument.
RETURN_OPNAMES = frozenset({"RETURN_VALUE", "RETURN_CONST"})
_RETURNS_ITS_ARGUMENT = frozenset({"RETURN_CONST"})

# The instruction that loads torch's <BREAKPOINT> marker constant.
MARKER_LOAD = "LOAD_CONST"


def is_return(opname: str) -> bool:
    return opname in RETURN_OPNAMES


def returned_value(opname: str, argval: object, stack: list[object]) -> tuple[bool, object]:
    """(True, value) when the instruction returns and the value is known."""
    if opname in _RETURNS_ITS_ARGUMENT:
        return True, argval
    if opname in RETURN_OPNAMES and stack:
        return True, stack[-1]
    return False, None
