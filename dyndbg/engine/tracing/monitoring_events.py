"""Which sys.monitoring events one generated code object gets from the
policy's CodeNeeds (monitoring.py sets them, per code object), and what the
tracer keeps of each code it set them on."""
from __future__ import annotations

import dis
import sys
import types
from typing import NamedTuple

from dyndbg.cpython import is_return
from dyndbg.engine.modes import CodeNeeds, TraceLevel

_E = sys.monitoring.events


class TracedCode(NamedTuple):
    """What one code object has: its events, for which policy, and why."""

    code: types.CodeType          # held, so that its id stays this code's
    events: int
    policy: object
    needs: CodeNeeds
    armed: frozenset[int]         # offsets where INSTRUCTION may stop after continue
    watched_calls: frozenset[int] = frozenset()   # 3.12: armed only to see a resume call


def code_events(needs: CodeNeeds, code: types.CodeType, armed: frozenset[int],
                running: bool) -> int:
    """The events `code` needs; `running`: it has traced frames that have
    not returned (MonitoringTracer.keep)."""
    events = 0
    if needs.instructions is not TraceLevel.NONE or armed:
        events |= _E.INSTRUCTION
    if needs.starts:
        events |= _E.PY_START | _E.PY_RETURN
    elif needs.instructions is TraceLevel.EVERY or running or \
            any(is_return(dis.opname[code.co_code[offset]]) for offset in armed):
        # Stepping (next, return and until stop after their frame returns),
        # live frames, or a stop at a return: PY_RETURN must already be on
        # when the return runs (turned on at that stop, it comes too late).
        events |= _E.PY_RETURN
    if needs.resume_calls:
        events |= _E.CALL
    return events
