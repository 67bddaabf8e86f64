"""Fast, in-process checks of dyndbg.cpython's version facts: the layout
self-check and its refusal, static stack depths, cache offsets, call layouts."""
from __future__ import annotations

import dis
import sys

import pytest

from dyndbg.cpython import (NULL, StackUnavailable, call_site, depth_before,
                            instruction_start, read_value_stack, returned_value)
from dyndbg.cpython import layouts, valuestack
from dyndbg.cpython.layouts import FrameLayout
from dyndbg.cpython.stackdepth import underflow


@pytest.fixture
def fresh_check(monkeypatch):
    """stack_support() checks again, and the result does not outlive the test."""
    monkeypatch.setattr(valuestack, "_checked", None)


def test_this_python_has_a_validated_layout(fresh_check) -> None:
    assert valuestack.stack_support() is None


def test_a_version_without_a_table_is_refused_in_one_line(fresh_check, monkeypatch) -> None:
    monkeypatch.setattr(sys, "version_info", (3, 14, 0, "final", 0))
    assert layouts.layout_for_running_python() is None
    reason = valuestack.stack_support()
    assert reason == ("value stack not available on Python 3.14 "
                      "(dyndbg has no validated frame layout for it)")
    with pytest.raises(StackUnavailable, match="not available on Python 3.14"):
        read_value_stack(sys._getframe())


def test_a_wrong_table_fails_the_self_check(fresh_check, monkeypatch) -> None:
    right = layouts.layout_for_running_python()
    assert right is not None
    wrong = FrameLayout(right.f_frame, right.f_code + 8, right.stacktop, right.localsplus,
                        right.stacktop_at_events)
    monkeypatch.setattr(valuestack, "layout_for_running_python", lambda: wrong)
    reason = valuestack.stack_support()
    assert reason is not None and "frame layout check failed" in reason


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
