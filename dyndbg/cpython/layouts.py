"""Byte offsets into CPython's private frame structs, one table per version.

Checked against each version's Include/internal/pycore_frame.h (3.14 and
3.15: pycore_interpframe_structs.h), 64-bit, default (GIL, release) build:

PyFrameObject:        ob_refcnt, ob_type, f_back, f_frame (pointer to the
                      _PyInterpreterFrame) at byte 24 on 3.11 to 3.15.
_PyInterpreterFrame:  3.11: f_func, f_globals, f_builtins, f_locals, f_code,
                            frame_obj, previous, prev_instr (8 pointers),
                            int stacktop, bool is_entry, char owner, localsplus[] at 72
                      3.12: f_code, previous, f_funcobj, f_globals, f_builtins,
                            f_locals, frame_obj, prev_instr, int stacktop,
                            uint16 return_offset, char owner, localsplus[] at 72
                      3.13: as 3.12, f_code renamed f_executable, prev_instr
                            renamed instr_ptr
                      3.14, 3.15: f_executable, previous, f_funcobj (both
                            _PyStackRef), f_globals, f_builtins, f_locals, frame_obj,
                            instr_ptr, _PyStackRef *stackpointer (at 64),
                            uint16 return_offset, char owner, uint8 visited,
                            localsplus[] (of _PyStackRef) at 80
3.11 stores the stack pointer (stacktop) at every trace event; 3.12 and 3.13
store it only across some events (a line event, an inlined call) and leave
-1 at opcode and INSTRUCTION events, where the depth comes from the bytecode
(stackdepth.py). 3.14 and 3.15 keep a pointer (NULL while the frame runs) and
store it before every call out of the interpreter loop, instrumentation
events included (measured at every INSTRUCTION and opcode event), and while
the frame is suspended in a call: the garbage collector reads the frame's
stack up to it. Each table is validated at run time (valuestack.stack_support).
"""
from __future__ import annotations

import struct
import sys
import sysconfig
from dataclasses import dataclass


@dataclass(frozen=True)
class FrameLayout:
    f_frame: int      # PyFrameObject -> _PyInterpreterFrame*
    f_code: int       # _PyInterpreterFrame -> PyCodeObject* (f_executable on 3.13+)
    stacktop: int     # _PyInterpreterFrame -> int stacktop, or the stackpointer (3.14+)
    localsplus: int   # _PyInterpreterFrame -> PyObject *localsplus[] (_PyStackRef on 3.14+)
    stacktop_at_events: bool  # the stack top is stored during an instruction event
    # 3.14+: `stacktop` is a _PyStackRef* into localsplus (NULL: not stored), and
    # f_executable and the slots are tagged references (valuestack decodes them).
    stack_pointer: bool = False


_LAYOUTS_64BIT = {
    (3, 11): FrameLayout(f_frame=24, f_code=32, stacktop=64, localsplus=72,
                         stacktop_at_events=True),
    (3, 12): FrameLayout(f_frame=24, f_code=0, stacktop=64, localsplus=72,
                         stacktop_at_events=False),
    (3, 13): FrameLayout(f_frame=24, f_code=0, stacktop=64, localsplus=72,
                         stacktop_at_events=False),
    (3, 14): FrameLayout(f_frame=24, f_code=0, stacktop=64, localsplus=80,
                         stacktop_at_events=True, stack_pointer=True),
    (3, 15): FrameLayout(f_frame=24, f_code=0, stacktop=64, localsplus=80,
                         stacktop_at_events=True, stack_pointer=True),
}


def layout_for_running_python() -> FrameLayout | None:
    """The layout table for this interpreter, or None where dyndbg has none
    (another implementation, 32-bit, a free-threaded build: its object
    header, frame and _PyStackRef tags differ)."""
    if struct.calcsize("P") != 8 or sys.implementation.name != "cpython" \
            or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    return _LAYOUTS_64BIT.get(sys.version_info[:2])
