"""Reading CPython frames and instructions: everything that differs between
Python versions lives in this package.

Callers get `read_value_stack(frame)` and `NULL`; on an unknown Python
version or a layout that fails validation they get `StackUnavailable` with a
message for the user, and nothing unvalidated is ever read. `opcodes` answers
questions about instructions (is it a return, a call), `calls` reads a call's
operands, `tracing` holds the tracing mechanisms' version quirks.
"""
from __future__ import annotations

from dyndbg.cpython.calls import CallSite, call_site
from dyndbg.cpython.opcodes import (CALL_OPNAMES, MARKER_LOAD, NO_FALL_THROUGH, SILENT_OPNAMES,
                                    argument_names, entry_names, entry_names_may_change,
                                    first_traced, is_return, returned_value)
from dyndbg.cpython.stackdepth import depth_before, instruction_start, suspended_depth
from dyndbg.cpython.valuestack import (NULL, StackUnavailable, event_depths, read_frame_slots,
                                       read_suspended_stack, read_value_stack, slot_names,
                                       stack_support)

__all__ = ["NULL", "StackUnavailable", "event_depths", "read_frame_slots", "read_suspended_stack",
           "read_value_stack", "slot_names",
           "depth_before", "instruction_start", "suspended_depth", "stack_support",
           "CALL_OPNAMES", "MARKER_LOAD", "NO_FALL_THROUGH", "SILENT_OPNAMES", "argument_names", "is_return",
           "entry_names", "entry_names_may_change", "first_traced", "returned_value",
           "CallSite", "call_site"]
