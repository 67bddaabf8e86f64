"""Fast, in-process checks of dyndbg.cpython's version facts: the layout
self-check and its refusal, static stack depths, cache offsets, call layouts."""
from __future__ import annotations

import dataclasses
import dis
import sys

import pytest

from dyndbg.cpython import (NULL, StackUnavailable, call_site, depth_before,
                            instruction_start, read_suspended_stack, read_value_stack,
                            returned_value)
from dyndbg.cpython import layouts, valuestack
from dyndbg.cpython.stackdepth import underflow
from dyndbg.cpython.tracing import prepare_settrace


@pytest.fixture
def fresh_check(monkeypatch):
    """stack_support() checks again, and the result does not outlive the test."""
    monkeypatch.setattr(valuestack, "_checked", None)


def test_this_python_has_a_validated_layout(fresh_check) -> None:
    assert valuestack.stack_support() is None


def test_a_version_without_a_table_is_refused_in_one_line(fresh_check, monkeypatch) -> None:
    monkeypatch.setattr(sys, "version_info", (3, 16, 0, "final", 0))
    assert layouts.layout_for_running_python() is None
    reason = valuestack.stack_support()
    assert reason == ("value stack not available on Python 3.16 "
                      "(dyndbg has no validated frame layout for it)")
    with pytest.raises(StackUnavailable, match="not available on Python 3.16"):
        read_value_stack(sys._getframe())


def test_a_free_threaded_build_has_no_table(monkeypatch) -> None:
    monkeypatch.setattr(layouts.sysconfig, "get_config_var",
                        lambda name: 1 if name == "Py_GIL_DISABLED" else None)
    assert layouts.layout_for_running_python() is None


@pytest.mark.parametrize("field", ["f_code", "localsplus", "stacktop"])
def test_a_wrong_table_fails_the_self_check(fresh_check, monkeypatch, field: str) -> None:
    right = layouts.layout_for_running_python()
    assert right is not None
    wrong = dataclasses.replace(right, **{field: getattr(right, field) + 8})
    monkeypatch.setattr(valuestack, "layout_for_running_python", lambda: wrong)
    reason = valuestack.stack_support()
    assert reason is not None and "frame layout check failed" in reason


def test_stackref_tags_are_decoded() -> None:
    """3.14+ slots: NULL is 1, a borrowed or deferred reference has bit 0 set, a
    tagged int is (value << 2) | 3, and tag 2 is no object."""
    decode, obj = valuestack._from_stackref, object()
    assert decode(1) is NULL and decode(0) is NULL and decode(None) is NULL
    assert decode(id(obj)) is obj and decode(id(obj) | 1) is obj
    assert decode((23 << 2) | 3) == 23
    assert decode(((-7 << 2) | 3) & (2 ** 64 - 1)) == -7
    with pytest.raises(StackUnavailable, match="no Python object"):
        decode(id(obj) | 2)


def test_the_stack_at_an_opcode_event_matches_the_static_depth() -> None:
    """Read at every opcode event of a function with a call, a loop, a `with`, a
    handler and keyword arguments: as deep as the bytecode says, and each load's
    value on top after it (3.14: LOAD_FAST_BORROW, LOAD_SMALL_INT)."""
    seen: list[tuple[int, list[object], dict]] = []

    def tracer(frame, event, arg):  # noqa: ANN001, ANN202
        if frame.f_code is _shapes.__code__:
            frame.f_trace_opcodes = True
            if event == "opcode":
                seen.append((frame.f_lasti, read_value_stack(frame), dict(frame.f_locals)))
            return tracer
        return None

    prepare_settrace()
    sys.settrace(tracer)
    try:
        result = _shapes([3, 4], 5)
    finally:
        sys.settrace(None)
    assert result == ([3, 4], 7, 0, "34")
    listed = [i for i in dis.get_instructions(_shapes)]
    instrs = {i.offset: i for i in listed}
    after = {a.offset: b.offset for a, b in zip(listed, listed[1:])}
    assert len(seen) > 40
    loads = 0
    for k, (offset, stack, local) in enumerate(seen):
        assert len(stack) == depth_before(_shapes.__code__, offset), instrs[offset]
        following = seen[k + 1] if k + 1 < len(seen) else None
        if following is None or following[0] != after.get(offset) or not following[1]:
            continue
        instr, top = instrs[offset], following[1][-1]
        if instr.opname in ("LOAD_FAST", "LOAD_FAST_BORROW"):
            assert top is local[instr.argval], instr
            loads += 1
        elif instr.opname in ("LOAD_CONST", "LOAD_SMALL_INT"):
            assert top == instr.argval and type(top) is type(instr.argval), instr
            loads += 1
    assert loads >= 5


def _shapes(a, b):
    x = [*a]
    t = 0
    for i in a:
        t += i + b - 5
    with open(__file__) as fh:
        n = len(fh.read(0))
    try:
        1 / n
    except ZeroDivisionError:
        pass
    return x, t, n, "".join(map(str, a), **{})


class _Exit:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        _Exit.seen = read_suspended_stack(sys._getframe(1))
        return True


def _raises_in_with() -> int:
    with _Exit():
        raise KeyError
    return 1


def test_a_frame_suspended_in_an_exception_handler() -> None:
    """3.14+: any suspended instruction is readable (the stored stack pointer),
    the handler's lasti (a tagged int, no object) read as the int it stands for."""
    if not layouts.layout_for_running_python().stack_pointer:
        with pytest.raises(StackUnavailable):
            _raises_in_with()
        return
    assert _raises_in_with() == 1
    ints = [v for v in _Exit.seen if type(v) is int]
    offsets = {2 * v for v in ints}
    assert ints and offsets & {i.offset for i in dis.get_instructions(_raises_in_with)}
    assert any(isinstance(v, KeyError) for v in _Exit.seen)


def _calls_a_python_function(g, marker):
    return [marker, g(1, 2)]


def test_a_caller_suspended_in_a_python_call_keeps_what_the_callee_did_not_take() -> None:
    """The callee owns its function and arguments once it runs: only the marker
    below them is still the caller's."""
    seen: list[object] = []
    marker = object()
    _calls_a_python_function(lambda a, b: seen.append(read_suspended_stack(sys._getframe(1))),
                             marker)
    assert len(seen) == 1 and seen[0] == [marker]


def _add(a, b):
    return a + b


def test_static_depths_of_a_small_function() -> None:
    code = _add.__code__
    depths = {i.opname: depth_before(code, i.offset) for i in dis.get_instructions(code)
              if i.opname in ("BINARY_OP", "RETURN_VALUE")}
    assert depths == {"BINARY_OP": 2, "RETURN_VALUE": 1}


def _without_first(code, opnames: tuple[str, ...]):
    """`code` with its first instruction named in `opnames` made a NOP (its operand
    not pushed): what a bad patch leaves."""
    # 3.14 borrows where it can: LOAD_FAST_BORROW, LOAD_FAST_BORROW_LOAD_FAST_BORROW.
    opnames += tuple(name.replace("LOAD_FAST", "LOAD_FAST_BORROW") for name in opnames)
    instr = next(i for i in dis.get_instructions(code) if i.opname in opnames)
    raw = bytearray(code.co_code)
    raw[instr.offset:instr.offset + 2] = bytes([dis.opmap["NOP"], 0])
    return code.replace(co_code=bytes(raw)), instr


@pytest.mark.parametrize("source, operand, reader", [
    ("lambda a, b: a + b", ("LOAD_FAST", "LOAD_FAST_LOAD_FAST"), "BINARY_OP"),
    ("lambda a: a.x", ("LOAD_FAST",), "LOAD_ATTR"),
    ("lambda a: a.m()", ("LOAD_FAST",), ("LOAD_METHOD", "LOAD_ATTR")),  # 3.12+: method bit
    ("lambda a: [*a]", ("LOAD_FAST",), "LIST_EXTEND"),
    ("lambda a: next(iter(a))", ("LOAD_FAST",), "CALL"),
])
def test_underflow_finds_an_instruction_that_reads_below_the_stack(source, operand,
                                                                   reader) -> None:
    code = eval(source).__code__  # noqa: S307 - a literal lambda
    assert underflow(code) is None
    broken, _ = _without_first(code, operand)
    offset = underflow(broken)
    assert offset is not None
    readers = reader if isinstance(reader, tuple) else (reader,)
    assert next(i for i in dis.get_instructions(broken) if i.offset == offset).opname in readers


def test_underflow_accepts_real_code() -> None:
    import asyncio.tasks
    import contextlib
    import json.decoder
    codes = [obj.__code__ for module in (json.decoder, contextlib, asyncio.tasks, dis)
             for obj in vars(module).values() if hasattr(obj, "__code__")]  # generators too
    assert len(codes) > 50
    assert [c.co_name for c in codes if underflow(c) is not None] == []


def _calls(f, x):
    return f(x, 1)


def test_offsets_inside_a_call_map_to_the_call() -> None:
    code = _calls.__code__
    call = next(i for i in dis.get_instructions(code) if i.opname == "CALL")
    after = next(i for i in dis.get_instructions(code) if i.offset > call.offset)
    assert instruction_start(code, call.offset) == call.offset
    for offset in range(call.offset, after.offset, 2):   # the CALL and its inline cache
        assert instruction_start(code, offset) == call.offset


def test_call_site_reads_this_version_s_layout() -> None:
    def g(a, b):
        return a
    args = [10, 20]
    if sys.version_info >= (3, 13):
        plain, method = [g, NULL, *args], [g, "self", *args]
    else:
        plain, method = [NULL, g, *args], [g, "self", *args]
    site = call_site("CALL", 2, ["below", *plain])
    assert site is not None and site.function is g and site.args == args
    site = call_site("CALL", 2, method)
    assert site is not None and site.function is g and site.args == ["self", *args]
    assert call_site("CALL", 5, plain) is None        # the stack does not fit
    assert call_site("LOAD_FAST", 0, plain) is None


def test_return_values() -> None:
    assert returned_value("RETURN_VALUE", None, [1, 2]) == (True, 2)
    assert returned_value("RETURN_CONST", None, []) == (True, None)
    assert returned_value("POP_TOP", None, [1]) == (False, None)
