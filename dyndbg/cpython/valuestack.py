"""The exact value stack of a frame stopped at an instruction event (a
`sys.settrace` opcode event or a `sys.monitoring` INSTRUCTION event).

The live stack is `localsplus[nlocalsplus:top]`. On 3.11 the interpreter has
stored `top` (stacktop) in the frame during the event; on 3.12 and 3.13 it has
not, and `top` is the static depth before the instruction (stackdepth.py).
A NULL slot is a real state (method calls push NULL); it is returned as `NULL`.
"""
from __future__ import annotations

import _ctypes
import ctypes
import sys
import types

from dyndbg.cpython.layouts import FrameLayout, layout_for_running_python
from dyndbg.cpython.stackdepth import depth_before, suspended_depth


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


_nlocalsplus: dict[int, tuple[types.CodeType, int]] = {}   # id(code) -> (code, count)


def nlocalsplus(code: types.CodeType) -> int:
    """Number of fast-local, cell and free slots before the value stack
    (remembered per code object: recording asks at every instruction)."""
    known = _nlocalsplus.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    varnames = code.co_varnames
    cells = [c for c in code.co_cellvars if c not in varnames]
    count = len(varnames) + len(cells) + len(code.co_freevars)
    if len(_nlocalsplus) > 4096:
        _nlocalsplus.clear()
    _nlocalsplus[id(code)] = (code, count)
    return count


def _read_pointer(address: int) -> int:
    return ctypes.c_void_p.from_address(address).value or 0


_from_pointer = _ctypes.PyObj_FromPtr   # the object at an address (a new reference)


def _read_stack_with(layout: FrameLayout, frame: types.FrameType,
                     depth: int | None = None, stored: bool = True,
                     with_locals: bool = False) -> list[object]:
    """`depth`: the static depth, used where no stack pointer is stored;
    `stored`: False where a stored one cannot be current (3.12+ at events);
    `with_locals`: the local, cell and free slots first, then the stack."""
    code = frame.f_code
    iframe = _read_pointer(id(frame) + layout.f_frame)
    if not iframe:
        raise StackUnavailable("frame has no interpreter frame")
    if _read_pointer(iframe + layout.f_code) != id(code):
        raise StackUnavailable("frame layout does not match (code pointer differs)")
    base = nlocalsplus(code)
    top = ctypes.c_int.from_address(iframe + layout.stacktop).value if stored else -1
    if (top < base or top > base + code.co_stacksize) and depth is not None \
            and 0 <= depth <= code.co_stacksize:
        # Not stored (-1 while the frame runs): the static depth tells where
        # the live stack ends.
        top = base + depth
    if top < base or top > base + code.co_stacksize:
        raise StackUnavailable("value stack not readable in this frame state")
    first = 0 if with_locals else base
    if top == first:
        return []
    # One read of the slots' pointers, then one object per non-NULL pointer
    # (recording reads every instruction's slots: this is its hot path).
    pointers = (ctypes.c_void_p * (top - first)).from_address(
        iframe + layout.localsplus + 8 * first)[:]
    return [_from_pointer(p) if p else NULL for p in pointers]


_checked: tuple[FrameLayout | None, str | None] | None = None


def _self_check(layout: FrameLayout) -> str | None:
    """Read a known stack once; None if the layout is right, else why not.

    The probe is suspended in a call with two copies of a sentinel below it on
    its stack: this needs no tracing, so it runs anywhere (inside a trace
    callback too) and checks the frame pointer, the code pointer, where
    localsplus starts and how many slots precede the stack."""
    sentinel = object()
    seen: list[bool] = []

    def look() -> None:
        caller = sys._getframe(1)
        depth = suspended_depth(caller.f_code, caller.f_lasti)
        try:
            stack = _read_stack_with(layout, caller, depth)
        except StackUnavailable:
            stack = []
        seen.append(len(stack) >= 2 and stack[0] is sentinel and stack[1] is sentinel)

    def probe(marker: object) -> list[object]:
        return [marker, marker, look()]  # `look` runs with both copies on the stack

    probe(sentinel)
    return None if seen == [True] else "frame layout check failed"


def stack_support() -> str | None:
    """None when the value stack can be read on this Python, else the reason."""
    global _checked
    if _checked is None:
        layout = layout_for_running_python()
        version = "%d.%d" % sys.version_info[:2]
        if layout is None:
            _checked = (None, f"value stack not available on Python {version} "
                              "(dyndbg has no validated frame layout for it)")
        else:
            problem = _self_check(layout)
            _checked = (layout, None) if problem is None else (
                None, f"value stack not available on Python {version} ({problem})")
    return _checked[1]


def _layout() -> FrameLayout:
    reason = stack_support()
    if reason is not None:
        raise StackUnavailable(reason)
    assert _checked is not None and _checked[0] is not None
    return _checked[0]


def read_value_stack(frame: types.FrameType) -> list[object]:
    """Bottom-to-top value stack of `frame`, at an instruction event (opcode
    or INSTRUCTION) before the instruction at `frame.f_lasti` runs.

    Raises StackUnavailable (with a user-facing message) instead of reading
    memory that failed validation.
    """
    layout = _layout()
    if layout.stacktop_at_events:
        return _read_stack_with(layout, frame)
    depth = depth_before(frame.f_code, frame.f_lasti)
    if depth is None:
        raise StackUnavailable("no instruction starts at this frame's offset")
    return _read_stack_with(layout, frame, depth, stored=False)


def read_frame_slots(frame: types.FrameType) -> list[object]:
    """As read_value_stack, with the frame's local, cell and free slots
    first (slot_names says which is which; an unbound one is NULL)."""
    layout = _layout()
    if layout.stacktop_at_events:
        return _read_stack_with(layout, frame, with_locals=True)
    depth = depth_before(frame.f_code, frame.f_lasti)
    if depth is None:
        raise StackUnavailable("no instruction starts at this frame's offset")
    return _read_stack_with(layout, frame, depth, stored=False, with_locals=True)


def slot_names(code: types.CodeType) -> tuple[tuple[str, ...], frozenset[int]]:
    """The names of the slots before the value stack, and which of them hold
    a cell (a cell or free variable: its value is the cell's contents)."""
    names = tuple(code._varname_from_oparg(i)  # type: ignore[attr-defined]
                  for i in range(nlocalsplus(code)))
    celled = set(code.co_cellvars) | set(code.co_freevars)
    return names, frozenset(i for i, name in enumerate(names) if name in celled)


def read_suspended_stack(frame: types.FrameType) -> list[object]:
    """Bottom-to-top value stack of `frame` while it is suspended in a call made
    by its current instruction: only what is still the frame's own then
    (stackdepth.suspended_depth). StackUnavailable where nothing can be read
    safely (the instruction is not a call)."""
    layout = _layout()
    depth = suspended_depth(frame.f_code, frame.f_lasti)
    if depth is None:
        raise StackUnavailable("not readable while this instruction runs")
    return _read_stack_with(layout, frame, depth)
