"""The tracing mechanisms' version quirks: which exist, and what each needs."""
from __future__ import annotations

import dis
import sys
import types


def monitoring_available() -> bool:
    """sys.monitoring (PEP 669) exists from Python 3.12."""
    return hasattr(sys, "monitoring")


def monitoring_tool_holder() -> str | None:
    """The name of the tool holding sys.monitoring's debugger slot, if any."""
    return sys.monitoring.get_tool(sys.monitoring.DEBUGGER_ID)


def prepare_settrace() -> None:
    """Make opcode events possible before the first sys.settrace.

    On 3.12 (CPython gh-114480, fixed in 3.13) sys.settrace enables opcode
    events only if some frame has set f_trace_opcodes before it is called;
    setting it on this frame and back does that and traces nothing."""
    if sys.version_info[:2] == (3, 12):
        frame = sys._getframe()
        frame.f_trace_opcodes = True
        frame.f_trace_opcodes = False


# 3.12's CALL_FUNCTION_EX gives sys.monitoring no CALL event when it calls a
# Python function (3.13 does): a call made so is seen at its INSTRUCTION event.
CALL_EVENT_MISSES_FUNCTION_EX = sys.version_info[:2] == (3, 12)
_CALL_FUNCTION_EX = dis.opmap["CALL_FUNCTION_EX"]


def function_ex_calls(code: types.CodeType) -> dict[int, int]:
    """{offset: oparg} of the code's CALL_FUNCTION_EX instructions."""
    return {i.offset: i.arg or 0 for i in dis.get_instructions(code)
            if i.opcode == _CALL_FUNCTION_EX}
