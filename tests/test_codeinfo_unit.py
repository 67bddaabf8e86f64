"""Unit tests of where a line breakpoint arms (CodeInfo.line_entries), with
CPython's own 'line' trace events as the oracle: every offset at which the
interpreter reports entering a line is an entry, and a forward jump inside
one line's run (torch 2.15's profiler template around a graph call) is not;
and of which instructions can never stop (CodeInfo's `silent`), with its
'opcode' events as the oracle."""
from __future__ import annotations

import sys
import types
from typing import NamedTuple

from dyndbg.cpython.tracing import prepare_settrace
from dyndbg.engine.codeinfo import CodeInfo
from dyndbg.engine.targets import entry_offset


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


def closure_maker():
    k = 1

    def middle(a):               # a free variable (k) and a cell (a): COPY_FREE_VARS, MAKE_CELL
        def inner():
            return a + k
        return inner()
    return middle


class Counts(NamedTuple):
    line_events: dict[int, int]   # line -> times CPython reported entering it
    runs: dict[int, int]          # offset -> times its instruction ran


def counts(function: types.FunctionType, *args: object) -> Counts:
    """Line and opcode events of one call. (Where a line event is reported
    differs between versions: 3.14 reports a one-line loop's at its
    JUMP_BACKWARD, earlier versions at the jump's target; so counts, not
    offsets, are compared.)"""
    found = Counts({}, {})

    def trace(frame, event, arg):
        if frame.f_code is not function.__code__:
            return None
        if event == "call":
            frame.f_trace = trace              # before f_trace_opcodes (3.13)
            frame.f_trace_opcodes = True
        elif event == "line":
            found.line_events[frame.f_lineno] = found.line_events.get(frame.f_lineno, 0) + 1
        elif event == "opcode":
            found.runs[frame.f_lasti] = found.runs.get(frame.f_lasti, 0) + 1
        return trace

    prepare_settrace()
    sys.settrace(trace)
    try:
        function(*args)
    finally:
        sys.settrace(None)
    return found


def test_no_entry_into_a_line_is_missed() -> None:
    for function, args in ((one_line_if, (True,)), (one_line_if, (False,)),
                           (one_line_loop, (3,)), (two_line_loop, (3,))):
        info = CodeInfo(function.__code__)
        found = counts(function, *args)
        assert found.line_events, function.__name__
        for line, entered in found.line_events.items():
            armed_runs = sum(found.runs.get(o, 0) for o in info.line_entries(line))
            assert armed_runs >= entered, (function.__name__, line, armed_runs, entered)


def test_a_one_line_if_stops_once() -> None:
    for a in (True, False):
        info = CodeInfo(one_line_if.__code__)
        line = one_line_if.__code__.co_firstlineno + 1
        found = counts(one_line_if, a)
        assert found.line_events[line] == 1
        assert sum(found.runs.get(o, 0) for o in info.line_entries(line)) == 1


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


def test_what_runs_before_the_frames_start_never_stops() -> None:
    """A closure's COPY_FREE_VARS and MAKE_CELL run before its 'call' event,
    untraced, and RESUME gets no event: the entry of a function (`b FUNC`)
    is the first instruction CPython reports, else it never stops there."""
    middle = closure_maker()
    info = CodeInfo(middle.__code__)
    ran = counts(middle, 2).runs
    first = min(ran)
    assert {i.opname for i in info.instructions if i.offset < first} >= \
        {"COPY_FREE_VARS", "MAKE_CELL"}
    assert entry_offset(info) == first
    # Straight-line code: every instruction that is not silent runs once.
    assert {i.offset for i in info.instructions if not i.silent} == set(ran)
