"""Byte offsets into CPython's private frame structs, one table per version.

Checked against each version's Include/internal/pycore_frame.h (64-bit):

PyFrameObject:        ob_refcnt, ob_type, f_back, f_frame (pointer to the
                      _PyInterpreterFrame) at byte 24 on 3.11, 3.12 and 3.13.
_PyInterpreterFrame:  3.11: f_func, f_globals, f_builtins, f_locals, f_code,
                            frame_obj, previous, prev_instr, int stacktop,
                            bool is_entry, char owner, localsplus[] at 72
                      3.12: f_code, previous, f_funcobj, f_globals, f_builtins,
                            f_locals, frame_obj, prev_instr, int stacktop,
                            uint16 return_offset, char owner, localsplus[] at 72
                      3.13: as 3.12, f_code renamed f_executable, prev_instr
                            renamed instr_ptr
3.11 stores the stack pointer (stacktop) at every trace event; 3.12 and 3.13
store it only across some events (a line event, an inlined call) and leave
-1 at opcode and INSTRUCTION events, where the depth comes from the bytecode
(stackdepth.py). 3.14 keeps a stack pointer instead of stacktop: no table.
Each table is validated at run time before use (valuestack.stack_support).
"""
from __future__ import annotations

import struct
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class FrameLayout:
    f_frame: int      # PyFrameObject -> _PyInterpreterFrame*
    f_code: int       # _PyInterpreterFrame -> PyCodeObject* (f_executable on 3.13)
    stacktop: int     # _PyInterpreterFrame -> int stacktop (index into localsplus)
    localsplus: int   # _PyInterpreterFrame -> PyObject *localsplus[]
    stacktop_at_events: bool  # stacktop is stored during an instruction event


_LAYOUTS_64BIT = {
    (3, 11): FrameLayout(f_frame=24, f_code=32, stacktop=64, localsplus=72,
                         stacktop_at_events=True),
    (3, 12): FrameLayout(f_frame=24, f_code=0, stacktop=64, localsplus=72,
                         stacktop_at_events=False),
    (3, 13): FrameLayout(f_frame=24, f_code=0, stacktop=64, localsplus=72,
                         stacktop_at_events=False),
}


def layout_for_running_python() -> FrameLayout | None:
    """The layout table for this interpreter, or None where dyndbg has none."""
    if struct.calcsize("P") != 8 or sys.implementation.name != "cpython":
        return None
    return _LAYOUTS_64BIT.get(sys.version_info[:2])
