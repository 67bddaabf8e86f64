"""Reading CPython frames: the value stack, per Python version.

Everything that depends on the interpreter's private frame layout lives in this
package. Callers get `read_value_stack(frame)` and `NULL`; on an unknown Python
version or a layout that fails validation they get `StackUnavailable` with a
message for the user, and nothing unvalidated is ever read.
"""
from __future__ import annotations

from dyndbg.cpython.stackdepth import depth_before, suspended_depth
from dyndbg.cpython.valuestack import (NULL, StackUnavailable, read_suspended_stack,
                                       read_value_stack, stack_support)

__all__ = ["NULL", "StackUnavailable", "read_suspended_stack", "read_value_stack",
           "depth_before", "suspended_depth", "stack_support"]

from dyndbg.cpython.calls import CALL_OPNAMES, CallSite, call_site  # noqa: E402
from dyndbg.cpython.events import SILENT_OPNAMES  # noqa: E402

__all__ += ["CALL_OPNAMES", "CallSite", "call_site", "SILENT_OPNAMES"]
