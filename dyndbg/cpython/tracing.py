"""The tracing mechanisms' version quirks: which exist, and what each needs."""
from __future__ import annotations

import sys


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
