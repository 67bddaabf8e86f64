"""The local trace function of a generated frame with breakpoints, after
`continue`, under sys.settrace (settrace.py arms frames with it).

Line events switch opcode events on only while executing a line that holds
an armed instruction no line event reaches; everything else returns at
once. Returning None keeps the frame's trace function.
"""
from __future__ import annotations

import collections
import types
from typing import Callable

from dyndbg.engine.breakpoints import ArmingPlan


def line_tracer(plan: ArmingPlan, dispatch: Callable[[types.FrameType, str, object], None],
                stepping: Callable[[], bool], events: collections.Counter[str],
                release: Callable[[types.FrameType], None],
                installed: Callable[[], object]) -> Callable[[types.FrameType, str, object], None]:
    """The trace function for frames armed under `plan`. `installed()`: what
    f_trace holds under this plan (this tracer, or the compiled core's filter
    in front of it); past the plan's last armed instruction such a frame is
    released (no longer traced)."""
    offsets, hot_lines, line_of = plan.offsets, plan.hot_lines, plan.line_of

    def tracer(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "opcode":
            if frame.f_lasti not in offsets:
                events["instruction"] += 1
                return None
        elif event == "line":
            lasti = frame.f_lasti
            hot = plan.all_opcodes or line_of.get(lasti) in hot_lines
            frame.f_trace_opcodes = hot
            if hot or lasti not in offsets:
                events["line"] += 1
                return None  # the opcode event for this instruction follows if hot
            # an armed instruction that a line event reaches: handled as its opcode
        dispatch(frame, event, arg)
        # Only under this plan: a stop may have re-armed the frame with a new one.
        if event != "return" and not stepping() and \
                frame.f_trace is installed() and plan.done_after(frame.f_lasti):
            release(frame)
        return None

    return tracer
