"""Unit tests of where a line breakpoint arms (CodeInfo.line_entries), with
CPython's own 'line' trace events as the oracle: every offset at which the
interpreter reports entering a line is an entry, and a forward jump inside
one line's run (torch 2.15's profiler template around a graph call) is not."""
from __future__ import annotations

import sys
import types

from dyndbg.engine.codeinfo import CodeInfo


def one_line_if(a):
    x = (1 if a else 2) + (3 if not a else 4)
    return x


def one_line_loop(n):
    total = 0
    for i in range(n): total += i  # noqa: E701  (one line, entered again by the jump back)
    return total


def two_line_loop(n):
    i = 0
    while i < n:
        i += 1
    return i


def line_events(function: types.FunctionType, *args: object) -> dict[int, set[int]]:
    """{line: offsets where CPython reported entering it} for one call."""
    seen: dict[int, set[int]] = {}

    def trace(frame, event, arg):
        if frame.f_code is function.__code__ and event == "line":
            seen.setdefault(frame.f_lineno, set()).add(frame.f_lasti)
        return trace

    sys.settrace(trace)
    try:
        function(*args)
    finally:
        sys.settrace(None)
    return seen


def test_every_line_event_is_an_entry() -> None:
    for function, args in ((one_line_if, (True,)), (one_line_if, (False,)),
                           (one_line_loop, (3,)), (two_line_loop, (3,))):
        info = CodeInfo(function.__code__)
        for line, offsets in line_events(function, *args).items():
            assert offsets <= set(info.line_entries(line)), (function.__name__, line)


def test_forward_jumps_inside_one_line_do_not_enter_it_again() -> None:
    info = CodeInfo(one_line_if.__code__)
    line = one_line_if.__code__.co_firstlineno + 1
    joins = [i for i in info.instructions if i.line == line and i.is_jump_target]
    assert joins, "the conditional expressions should have jump joins on their line"
    assert info.line_entries(line) == [min(i.offset for i in info.instructions
                                           if i.line == line)]


def test_a_jump_back_enters_the_line_again() -> None:
    info = CodeInfo(one_line_loop.__code__)
    line = one_line_loop.__code__.co_firstlineno + 2
    assert len(info.line_entries(line)) >= 2
