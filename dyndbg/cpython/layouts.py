"""Byte offsets into CPython's private frame structs, one table per version.

PyFrameObject:        ob_refcnt, ob_type, f_back, f_frame (pointer to the
                      _PyInterpreterFrame) at byte 24 on every supported version.
_PyInterpreterFrame:  3.11: f_func, f_globals, f_builtins, f_locals, f_code,
                      frame_obj, previous, prev_instr, int stacktop, ... localsplus[]
                      3.12: f_code, f_funcobj, f_globals, f_builtins, f_locals,
                      frame_obj, previous, prev_instr, int stacktop, ... localsplus[]
Each table is validated at run time before use (see valuestack.self_check).
"""
from __future__ import annotations

import struct
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class FrameLayout:
    f_frame: int      # PyFrameObject -> _PyInterpreterFrame*
    f_code: int       # _PyInterpreterFrame -> PyCodeObject*
    stacktop: int     # _PyInterpreterFrame -> int stacktop (index into localsplus)
    localsplus: int   # _PyInterpreterFrame -> PyObject *localsplus[]


_LAYOUTS_64BIT = {
    (3, 11): FrameLayout(f_frame=24, f_code=32, stacktop=64, localsplus=72),
    (3, 12): FrameLayout(f_frame=24, f_code=0, stacktop=64, localsplus=72),
}


def layout_for_running_python() -> FrameLayout | None:
    """The layout table for this interpreter, or None where dyndbg has none."""
    if struct.calcsize("P") != 8 or sys.implementation.name != "cpython":
        return None
    return _LAYOUTS_64BIT.get(sys.version_info[:2])
