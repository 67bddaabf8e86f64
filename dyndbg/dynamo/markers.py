"""torch's own breakpoint marker: `torch._dynamo.bytecode_debugger.breakpoint()`
in user code (or `create_breakpoint()` in dynamo's codegen) puts a
`LOAD_CONST <BREAKPOINT>; POP_TOP` pair into the generated code. Where torch
has no marker (before 2.12) nothing here matches.
"""
from __future__ import annotations

import types

_MISSING = object()
_marker: object = None  # resolved on first use


def breakpoint_marker() -> object:
    """torch's marker constant, or a private object matching nothing."""
    global _marker
    if _marker is None:
        try:
            from torch._dynamo.bytecode_debugger import BREAKPOINT_MARKER
            _marker = BREAKPOINT_MARKER
        except ImportError:
            _marker = _MISSING
    return _marker


def torch_has_marker() -> bool:
    return breakpoint_marker() is not _MISSING


def has_marker(code: types.CodeType) -> bool:
    marker = breakpoint_marker()
    return any(const is marker for const in code.co_consts)
