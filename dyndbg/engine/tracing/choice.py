"""Which tracing mechanism runs (tracer.py is the seam it plugs into):
sys.monitoring (monitoring.py) where this Python has it and its debugger
slot is free, else sys.settrace (settrace.py), each with the compiled core's
filters where they were built."""
from __future__ import annotations

import os
from typing import Callable

from dyndbg.cpython.tracing import monitoring_available, monitoring_tool_holder
from dyndbg.engine.tracing.tracer import EventSink, Tracer

# DYNDBG_TRACER=settrace forces the sys.settrace mechanism where sys.monitoring
# exists (for comparison and tests); =monitoring asks for sys.monitoring.
TRACER_VARIABLE = "DYNDBG_TRACER"


def make_tracer(sink: EventSink, note: Callable[[str], None]) -> Tracer:
    """sys.monitoring where this Python has it and its debugger slot is free,
    else sys.settrace; `note` says why when the choice is not the default."""
    from dyndbg.engine.tracing.settrace import SettraceTracer
    wanted = os.environ.get(TRACER_VARIABLE, "")
    if wanted not in ("", "settrace", "monitoring"):
        note(f"dyndbg: {TRACER_VARIABLE}={wanted!r} is not 'settrace' or 'monitoring'; ignored")
        wanted = ""
    if wanted != "settrace" and monitoring_available():
        holder = monitoring_tool_holder()
        if holder is None:
            from dyndbg.engine.tracing.monitoring import MonitoringTracer
            return MonitoringTracer(sink)
        note(f"dyndbg: sys.monitoring's debugger slot is held by {holder!r}; "
             "tracing with sys.settrace instead (slower)")
    elif wanted == "monitoring":
        note("dyndbg: sys.monitoring needs Python 3.12 or newer; tracing with sys.settrace")
    return SettraceTracer(sink)
