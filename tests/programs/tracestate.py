"""What tracing reaches a program, whichever mechanism dyndbg uses: a trace
function (sys.settrace), or sys.monitoring events (3.12+), of any tool."""
import sys

_MON = getattr(sys, "monitoring", None)
_TOOLS = range(6)   # the tool ids a tool may hold (6 and 7 are CPython's own)


def _exception_events() -> int:
    e = _MON.events
    return e.RAISE | e.RERAISE | e.PY_UNWIND | e.PY_THROW | e.EXCEPTION_HANDLED | e.C_RAISE


def monitored(code) -> bool:
    """Some tool has monitoring events on this code object."""
    return _MON is not None and any(_MON.get_local_events(t, code) for t in _TOOLS)


def ordinary_code_traced() -> bool:
    """Ordinary code would be traced now: a trace function is installed, or a
    global monitoring event that is not about exceptions is on."""
    if sys.gettrace() is not None:
        return True
    return _MON is not None and any(_MON.get_events(t) & ~_exception_events() for t in _TOOLS)


def anything_traced() -> bool:
    """A trace function, or any global monitoring event of any tool."""
    return sys.gettrace() is not None or (
        _MON is not None and any(_MON.get_events(t) for t in _TOOLS))


def frame_traced(frame) -> bool:
    return frame.f_trace is not None or monitored(frame.f_code)


def generated_code_traced() -> bool:
    """A trace function is installed, or some code dynamo generated has events."""
    from torch._dynamo.convert_frame import orig_code_map
    codes = [ref() for ref in list(orig_code_map.refs.values())]
    return ordinary_code_traced() or any(monitored(c) for c in codes if c is not None)
