"""The exact value stack of a frame stopped at an instruction event (a
`sys.settrace` opcode event or a `sys.monitoring` INSTRUCTION event).

The live stack is `localsplus[nlocalsplus:top]`. On 3.11 the interpreter has
stored `top` (stacktop) in the frame during the event; on 3.12 and 3.13 it has
not, and `top` is the static depth before the instruction (stackdepth.py); 3.14
and 3.15 store a stack pointer, checked against that depth, and their slots
are tagged references (decoded here).
A NULL slot is a real state (method calls push NULL); it is returned as `NULL`.
"""
from __future__ import annotations

import _ctypes
import ctypes
import enum
import sys
import types
from typing import Any

from dyndbg import cores
from dyndbg.cpython.layouts import FrameLayout, layout_for_running_python
from dyndbg.cpython.stackdepth import depth_before, depth_table, suspended_depth


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

# 3.14+ _PyStackRef (pycore_stackref.h, GIL build): the low two bits tag a
# pointer: 0 a strong reference, 1 a deferred or borrowed one (LOAD_FAST_BORROW,
# immortals), 3 a tagged int (the lasti an exception handler pushes), not an
# object; 2 is none of these (3.15: an unwrapped C pointer). NULL is 1, not 0.
_TAG_BITS = 3
_STACKREF_NULL = 1
_INT_TAG = 3


def _from_stackref(bits: int | None) -> object:
    if not bits or bits == _STACKREF_NULL:
        return NULL
    tag = bits & _TAG_BITS
    if tag == _INT_TAG:    # the int it stands for, as 3.11 to 3.13 kept a PyLong there
        return (bits - (1 << 64) if bits >> 63 else bits) >> 2
    if tag == 2:
        raise StackUnavailable("a stack slot holds no Python object here")
    return _from_pointer(bits & ~_TAG_BITS)


def _untagged(layout: FrameLayout, pointer: int) -> int:
    return pointer & ~_TAG_BITS if layout.stack_pointer else pointer


def _stored_top(layout: FrameLayout, iframe: int) -> int:
    """The stored stack top as an index into localsplus; -1 where none is stored."""
    if not layout.stack_pointer:
        return ctypes.c_int.from_address(iframe + layout.stacktop).value
    pointer = _read_pointer(iframe + layout.stacktop)
    offset = pointer - (iframe + layout.localsplus)
    return offset // 8 if pointer and offset >= 0 and offset % 8 == 0 else -1


def _read_stack_with(layout: FrameLayout, frame: types.FrameType,
                     depth: int | None = None, stored: bool = True,
                     with_locals: bool = False, at_most: int | None = None,
                     expected: int | None = None) -> list[object]:
    """The frame's slots, read by the core this process runs on (core.py)."""
    return _reader(layout, frame, depth, stored, with_locals, at_most, expected)


def _read_compiled(layout: FrameLayout, frame: types.FrameType, depth: int | None,
                   stored: bool, with_locals: bool, at_most: int | None,
                   expected: int | None) -> list[object]:
    """_read_python's work in C (cpython/_frames.c, configured with `layout`)."""
    return _frames.read(frame, -1 if depth is None else depth, stored, with_locals,
                        -1 if at_most is None else at_most, -1 if expected is None else expected)


def _read_python(layout: FrameLayout, frame: types.FrameType, depth: int | None,
                 stored: bool, with_locals: bool, at_most: int | None,
                 expected: int | None) -> list[object]:
    """`depth`: the static depth, used where no stack pointer is stored;
    `stored`: False where a stored one cannot be current (3.12+ at events);
    `at_most`: a depth the stored one may not exceed (a suspended frame's);
    `expected`: the depth the stored one must give (3.14+ at events);
    `with_locals`: the local, cell and free slots first, then the stack."""
    code = frame.f_code
    iframe = _read_pointer(id(frame) + layout.f_frame)
    if not iframe:
        raise StackUnavailable("frame has no interpreter frame")
    if _untagged(layout, _read_pointer(iframe + layout.f_code)) != id(code):
        raise StackUnavailable("frame layout does not match (code pointer differs)")
    base = nlocalsplus(code)
    top = _stored_top(layout, iframe) if stored else -1
    if top < base or top > base + code.co_stacksize:
        if depth is not None and 0 <= depth <= code.co_stacksize:
            # Not stored (-1 while the frame runs): the static depth tells where
            # the live stack ends.
            top = base + depth
    elif at_most is not None:
        top = min(top, base + at_most)
    if expected is not None and top != base + expected:
        raise StackUnavailable("the stored stack pointer disagrees with the bytecode")
    if top < base or top > base + code.co_stacksize:
        raise StackUnavailable("value stack not readable in this frame state")
    first = 0 if with_locals else base
    if top == first:
        return []
    # One read of the slots' pointers, then one object per non-NULL pointer
    # (recording reads every instruction's slots: this is its hot path).
    pointers = (ctypes.c_void_p * (top - first)).from_address(
        iframe + layout.localsplus + 8 * first)[:]
    if layout.stack_pointer:
        return [_from_stackref(p) for p in pointers]
    return [_from_pointer(p) if p else NULL for p in pointers]


_checked: tuple[FrameLayout | None, str | None] | None = None
_frames: Any = None         # the compiled reader module (_frames.c, no stub yet), where it runs
_reader = _read_python      # _read_compiled once the compiled reader passes the check


def _take(*args: object) -> None:
    return None


def _self_check(layout: FrameLayout, reader=_read_python) -> str | None:  # noqa: ANN001
    """Read a known stack once; None if the layout is right, else why not.

    The probe is suspended in a call with a call's callable and NULL and two
    copies of a sentinel below it on its stack: this needs no tracing, so it
    runs anywhere (inside a trace callback too) and checks the frame pointer,
    the code pointer, where localsplus starts, how many slots precede the
    stack, the stored stack pointer (3.11, 3.14+) and how a NULL slot and a
    borrowed reference (3.14's LOAD_FAST_BORROW) are read."""
    sentinel = object()
    seen: list[bool] = []

    def look() -> object:
        caller = sys._getframe(1)
        depth = suspended_depth(caller.f_code, caller.f_lasti)
        try:
            stack = reader(layout, caller, depth, True, False, depth, None)
        except StackUnavailable:
            stack = []
        seen.append(len(stack) == 4 and {id(stack[0]), id(stack[1])} == {id(_take), id(NULL)}
                    and stack[2] is sentinel and stack[3] is sentinel)
        return None   # an argument of `take`: the call is what keeps the stack

    def probe(marker: object, take=_take) -> None:  # noqa: ANN001
        take(marker, marker, look())  # `look` runs with [take, NULL, marker, marker] below it

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
            if problem is None and cores.frames() is not None:
                _use_compiled_reader(layout)
    return _checked[1]


def _use_compiled_reader(layout: FrameLayout) -> None:
    """The compiled reader, once it reads the probe as the Python one did."""
    global _reader, _frames
    _frames = cores.frames()
    _frames.configure(layout.f_frame, layout.f_code, layout.stacktop, layout.localsplus,
                      layout.stack_pointer, _event_mode(layout).value, NULL, StackUnavailable)
    problem = _self_check(layout, _read_compiled)
    if problem is None:
        _frames.mark_checked()
        _reader = _read_compiled
    else:
        cores.refuse(f"the compiled slot reader: {problem}")


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
    return _at_event(frame, with_locals=False)


def read_frame_slots(frame: types.FrameType) -> list[object]:
    """As read_value_stack, with the frame's local, cell and free slots
    first (slot_names says which is which; an unbound one is NULL)."""
    return _at_event(frame, with_locals=True)


class EventMode(enum.Enum):
    """How the stack's top is known at an instruction event."""

    STORED_TOP = 0     # 3.11: stored for the event
    STATIC_DEPTH = 1   # 3.12, 3.13: not stored; the depth the bytecode gives
    # 3.14+: the pointer stored for the event. A release build never clears it,
    # so it must also agree with the bytecode: a stale one is never read.
    CHECKED_TOP = 2


def _event_mode(layout: FrameLayout) -> EventMode:
    if layout.stack_pointer:
        return EventMode.CHECKED_TOP
    return EventMode.STORED_TOP if layout.stacktop_at_events else EventMode.STATIC_DEPTH


def event_depths(code: types.CodeType) -> dict[int, int] | None:
    """What the compiled reader needs of `code` at events (cpython/_frames.c's
    read_at_event): its stack depths by offset, None where the top is stored
    (or the stack cannot be read at all: every read then says why)."""
    if stack_support() is not None:
        return None
    return _depths(_event_mode(_layout()), code)


def _depths(mode: EventMode, code: types.CodeType) -> dict[int, int] | None:
    return None if mode is EventMode.STORED_TOP else depth_table(code)


def _at_event(frame: types.FrameType, with_locals: bool) -> list[object]:
    layout = _layout()
    mode = _event_mode(layout)
    if _reader is _read_compiled:
        return _frames.read_at_event(frame, _depths(mode, frame.f_code), with_locals)
    if mode is EventMode.STORED_TOP:
        return _read_stack_with(layout, frame, with_locals=with_locals)
    depth = depth_before(frame.f_code, frame.f_lasti)
    if depth is None:
        raise StackUnavailable("no instruction starts at this frame's offset")
    if mode is EventMode.STATIC_DEPTH:
        return _read_stack_with(layout, frame, depth, stored=False, with_locals=with_locals)
    return _read_stack_with(layout, frame, with_locals=with_locals, expected=depth)


def slot_names(code: types.CodeType) -> tuple[tuple[str, ...], frozenset[int]]:
    """The names of the slots before the value stack, and which of them hold
    a cell (a cell or free variable: its value is the cell's contents)."""
    names = tuple(code._varname_from_oparg(i)  # type: ignore[attr-defined]  # CPython's own, no stub
                  for i in range(nlocalsplus(code)))
    celled = set(code.co_cellvars) | set(code.co_freevars)
    return names, frozenset(i for i, name in enumerate(names) if name in celled)


def read_suspended_stack(frame: types.FrameType) -> list[object]:
    """Bottom-to-top value stack of `frame` while it is suspended in a call made
    by its current instruction: only what is still the frame's own then
    (stackdepth.suspended_depth). StackUnavailable where nothing can be read
    safely (3.11-3.13: the instruction is not a call)."""
    layout = _layout()
    depth = suspended_depth(frame.f_code, frame.f_lasti)
    if layout.stack_pointer:
        # 3.14+ stores the pointer before any call out of the frame, below which
        # every slot is live (the garbage collector reads them): any instruction,
        # and no more of a call's operands than the callee left the frame.
        return _read_stack_with(layout, frame, at_most=depth)
    if depth is None:
        raise StackUnavailable("not readable while this instruction runs")
    return _read_stack_with(layout, frame, depth)
