"""The exact value stack of a frame stopped at a `sys.settrace` opcode event.

During an opcode event CPython (3.11, 3.12) has stored the stack pointer in the
interpreter frame, so the live stack is `localsplus[nlocalsplus:stacktop]`.
A NULL slot is a real state (method calls push NULL); it is returned as `NULL`.
"""
from __future__ import annotations

import ctypes
import sys
import types

from dyndbg.cpython.layouts import FrameLayout, layout_for_running_python


class _Null:
    """Stands for a NULL slot of the value stack (never dereferenced)."""

    _instance: "_Null | None" = None

    def __new__(cls) -> "_Null":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<NULL>"

    def __reduce__(self) -> str:
        return "NULL"


NULL = _Null()


class StackUnavailable(Exception):
    """The value stack cannot be read here; the message says why."""


def nlocalsplus(code: types.CodeType) -> int:
    """Number of fast-local, cell and free slots before the value stack."""
    varnames = code.co_varnames
    cells = [c for c in code.co_cellvars if c not in varnames]
    return len(varnames) + len(cells) + len(code.co_freevars)


def _read_pointer(address: int) -> int:
    return ctypes.c_void_p.from_address(address).value or 0


def _read_stack_with(layout: FrameLayout, frame: types.FrameType,
                     depth: int | None = None) -> list[object]:
    code = frame.f_code
    iframe = _read_pointer(id(frame) + layout.f_frame)
    if not iframe:
        raise StackUnavailable("frame has no interpreter frame")
    if _read_pointer(iframe + layout.f_code) != id(code):
        raise StackUnavailable("frame layout does not match (code pointer differs)")
    base = nlocalsplus(code)
    top = ctypes.c_int.from_address(iframe + layout.stacktop).value
    if (top < base or top > base + code.co_stacksize) and depth is not None \
            and 0 <= depth <= code.co_stacksize:
        # Not stored (-1 while the frame runs): the static depth tells where
        # the live stack of a frame suspended in a call ends.
        top = base + depth
    if top < base or top > base + code.co_stacksize:
        # stacktop is only stored during an opcode event.
        raise StackUnavailable("value stack not readable in this frame state")
    values: list[object] = []
    for slot in range(base, top):
        pointer = _read_pointer(iframe + layout.localsplus + 8 * slot)
        values.append(NULL if not pointer else ctypes.cast(pointer, ctypes.py_object).value)
    return values


_checked: tuple[FrameLayout | None, str | None] | None = None


def _self_check(layout: FrameLayout) -> str | None:
    """Read a known stack once; None if the layout is right, else why not."""
    sentinel = object()
    seen: list[object] = []

    def probe(marker: object) -> object:
        return [marker, marker]  # BUILD_LIST 2 runs with two copies of marker on the stack

    def tracer(frame: types.FrameType, event: str, arg: object):  # type: ignore[no-untyped-def]
        if frame.f_code is not probe.__code__:
            return None
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode" and not seen:
            try:
                stack = _read_stack_with(layout, frame)
            except StackUnavailable:
                return tracer
            if len(stack) == 2 and stack[0] is sentinel and stack[1] is sentinel:
                seen.append(True)
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        probe(sentinel)
    finally:
        sys.settrace(old)
    return None if seen else "frame layout check failed"


def stack_support() -> str | None:
    """None when the value stack can be read on this Python, else the reason."""
    global _checked
    if _checked is None:
        layout = layout_for_running_python()
        version = "%d.%d" % sys.version_info[:2]
        if layout is None:
            _checked = (None, f"value stack not available on Python {version}")
        else:
            problem = _self_check(layout)
            _checked = (layout, None) if problem is None else (
                None, f"value stack not available on Python {version} ({problem})")
    return _checked[1]


def read_value_stack(frame: types.FrameType) -> list[object]:
    """Bottom-to-top value stack of `frame`, valid during an opcode event.

    Raises StackUnavailable (with a user-facing message) instead of reading
    memory that failed validation.
    """
    reason = stack_support()
    if reason is not None:
        raise StackUnavailable(reason)
    assert _checked is not None and _checked[0] is not None
    return _read_stack_with(_checked[0], frame)


def read_suspended_stack(frame: types.FrameType, depth: int) -> list[object]:
    """Bottom-to-top value stack of `frame` while it is suspended in a call made
    by its current instruction; `depth`: how much of the stack is still the
    frame's own then (stackdepth.suspended_depth)."""
    reason = stack_support()
    if reason is not None:
        raise StackUnavailable(reason)
    assert _checked is not None and _checked[0] is not None
    return _read_stack_with(_checked[0], frame, depth)
