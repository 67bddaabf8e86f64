"""Stepping by the user's source line (issue 24): `nextline`/`nl` and
`stepline`/`sl`, what an editor's F10/F11 send, and gdb's `ni`/`nexti`,
`si`/`stepi` for the instruction steps `n` and `s`.

Dynamo keeps the user's line numbers in the code it generates, but only
where it emits code: samples/graph_break.py's f [0/0] holds line 7 (the
decorator: the graph call) and line 10 (the print, the graph break and the
call of the resume function), its resume function line 10 alone. A resume
function that dynamo leaves as it is (tests/programs/line_step_loop.py)
keeps every line of the original code.
"""
from __future__ import annotations

import re
import types
from pathlib import Path
from typing import cast

from harness import ROOT, SAMPLES, GraphBreakCode, run_dyndbg, run_plain
from listing import Instr, Listing, parse_listing
from transcript import no_traceback, segments, stops_in

from dyndbg.engine.codeinfo import Instr as CodeInstr
from dyndbg.engine.modes import Mode, StepKind

GRAPH_BREAK = SAMPLES / "graph_break.py"
LOOP = ROOT / "tests" / "programs" / "line_step_loop.py"
RESUME = "torch_dynamo_resume_in_f_at_10 [1/0]"
# g's first stop, line 13 (the graph break) in g, then into the resume function
INTO_LOOP = ["nl", "sl", "ll"]
SOURCE = re.compile(r" (?P<file>[\w.]+\.py):(?P<line>\d+)  ")


def _source_line(stop: dict) -> int:
    match = SOURCE.search(stop["line"])
    assert match, f"no FILE:LINE in the stop line {stop['line']!r}"
    return int(match["line"])


def _line_start(code: Listing, line: int) -> Instr:
    """Where execution enters `line` in straight-line code: its first
    instruction that can stop (RESUME never does)."""
    return [i for i in code.find_all(line=line) if i.opname != "RESUME"][0]


def _first(code: Listing) -> Instr:
    return [i for i in code if i.opname != "RESUME"][0]


def _session(target: Path, commands: list[str], tmp_path: Path) -> tuple[list[dict], str]:
    run = run_dyndbg(target, commands, tmp_path)
    no_traceback(run)
    assert "***" not in run.transcript, run.transcript[-3000:]
    assert run.returncode == 0 and run.stdout == run_plain(target).stdout, run.stdout
    return stops_in(run.transcript.splitlines()), run.transcript


def test_nextline_stops_at_the_first_instruction_of_the_next_line(
        tmp_path: Path, graph_break_code: GraphBreakCode) -> None:
    stops, _ = _session(GRAPH_BREAK, ["nextline", "c"], tmp_path)
    first, after = stops[0], stops[1]
    f = graph_break_code.f
    assert first["label"] == after["label"] == "f [0/0]", stops
    assert _source_line(first) == 7
    # past every other instruction of line 7 (the graph call among them), in f
    assert _source_line(after) == 10 and 'print("graph break here")' in after["line"]
    assert after["index"] == _line_start(f, 10).index, (after, _line_start(f, 10))
    assert len(f.find_all(line=7)) > 10   # a step of many instructions, not one


def test_nextline_goes_on_in_the_resume_function_then_stops_after_it(
        tmp_path: Path, graph_break_code: GraphBreakCode) -> None:
    # 7 -> 10 in f [0/0]. At 10, f calls its resume function: the rest of f, so
    # the line step goes on in it; it holds no line after 10 (11 and 12 are in
    # its graph) and returns, f returns its result, and the stop is at the next
    # generated instruction: f's second call (7 again).
    stops, transcript = _session(GRAPH_BREAK, ["nl", "nl", "nl", "c"], tmp_path)
    f = graph_break_code.f
    assert [(s["label"], _source_line(s)) for s in stops] == [("f [0/0]", 7), ("f [0/0]", 10),
                                                             ("f [0/0]", 7), ("f [0/0]", 10)]
    assert [s["index"] for s in stops] == [_first(f).index, _line_start(f, 10).index,
                                           _first(f).index, _line_start(f, 10).index]
    assert RESUME not in transcript   # no line of its own to stop at


def test_stepline_stops_at_the_resume_function_start(
        tmp_path: Path, graph_break_code: GraphBreakCode) -> None:
    # From line 10 of f, where nextline goes on in the resume function to a new line (above):
    # stepline stops at its first instruction; there, stepline finds no other
    # line, the resume function returns, and the stop is in f, after its call.
    stops, _ = _session(GRAPH_BREAK, ["nl", "stepline", "sl", "c", "c"], tmp_path)
    f, resume = graph_break_code.f, graph_break_code.resume
    assert [(s["label"], _source_line(s)) for s in stops[:4]] == [
        ("f [0/0]", 7), ("f [0/0]", 10), (RESUME, 10), ("f [0/0]", 10)]
    assert stops[2]["index"] == _first(resume).index
    assert stops[3]["index"] == f.find("RETURN_VALUE").index


def test_after_up_the_line_steps_act_on_the_selected_frame(
        tmp_path: Path, graph_break_code: GraphBreakCode) -> None:
    # Up from the resume function into f, at its line 10: nextline goes on in
    # the resume function (the rest of f), which has no line after 10; f
    # returns its result, and the stop is at f's second call; stepline stops in the frame
    # below, at its next instruction, as pdb's step.
    commands = ["b torch_dynamo_resume_in_*", "c", "up", "nextline", "c", "up", "stepline", "c",
                "c"]
    stops, _ = _session(GRAPH_BREAK, commands, tmp_path)
    f, resume = graph_break_code.f, graph_break_code.resume
    assert [(s["label"], s["index"]) for s in stops] == [
        ("f [0/0]", _first(f).index), (RESUME, _first(resume).index),
        ("f [0/0]", _first(f).index), (RESUME, _first(resume).index),
        (RESUME, resume.successors(_first(resume))[0])], stops


def test_a_count_counts_lines_and_stepline_counts_across_frames(
        tmp_path: Path, graph_break_code: GraphBreakCode) -> None:
    # sl 2 from f's first stop: line 10 of f (1), then the resume function's start (2)
    stops, _ = _session(GRAPH_BREAK, ["sl 2", "c"], tmp_path)
    assert [(s["label"], s["index"]) for s in stops] == [
        ("f [0/0]", _first(graph_break_code.f).index),
        (RESUME, _first(graph_break_code.resume).index)], stops
    # nl 3 from the loop's resume function's start: line 14 (1), back at the
    # loop's head after one time round (2), and after a second (3)
    stops, transcript = _session(LOOP, [*INTO_LOOP, "nl 3", "p i", "c"], tmp_path)
    code = parse_listing([s for s in segments(transcript) if s.command == "ll"][0].output)
    assert stops[-1]["index"] == code.find("FOR_ITER").index and len(stops) == 4, stops
    assert [s.output for s in segments(transcript) if s.command == "p i"] == [["1"]]


def test_nextline_walks_the_lines_of_a_loop_stopping_each_time_round(tmp_path: Path) -> None:
    # The resume function dynamo left as it is holds lines 13, 14 (a whole
    # loop on one line) and 15: each jump back to line 14 is a new entry.
    commands = [*INTO_LOOP, "nl", "nl", "p i", "nl", "p i", "nl", "p i", "nl", "nl", "c"]
    stops, transcript = _session(LOOP, commands, tmp_path)
    listing = [s for s in segments(transcript) if s.command == "ll"][0]
    code = parse_listing(listing.output)
    loop = code.find("FOR_ITER")
    resume = "torch_dynamo_resume_in_g_at_13 [not compiled]"
    assert [(s["label"], _source_line(s)) for s in stops[:2]] == [("g [0/0]", 10), ("g [0/0]", 13)]
    walked = [(s["label"], _source_line(s), s["index"]) for s in stops[2:]]
    assert walked == [(resume, 13, _first(code).index), (resume, 14, _line_start(code, 14).index),
                      (resume, 14, loop.index), (resume, 14, loop.index),
                      (resume, 14, loop.index), (resume, 15, _line_start(code, 15).index),
                      ("g [0/0]", 13, walked[-1][2])], walked
    assert "RETURN_VALUE" in stops[-1]["line"]   # stepped off the resume function's return
    # each stop at the loop's head comes after one more time round
    printed = [s.output for s in segments(transcript) if s.command == "p i"]
    assert printed == [["0"], ["1"], ["2"]], printed


def test_line_and_instruction_step_spellings(tmp_path: Path,
                                              graph_break_code: GraphBreakCode) -> None:
    run = run_dyndbg(GRAPH_BREAK, ["help ni", "help stepi", "help s", "help nl", "help sl",
                                   "ni", "nexti", "si", "stepi", "c"], tmp_path)
    no_traceback(run)
    help_of = {s.command: s.output for s in segments(run.transcript)}
    assert help_of["help ni"][0] == "n(ext) | ni | nexti [N]"
    # si is no longer an alias of s: s enters a compiled graph at its call (issue 50)
    assert help_of["help stepi"][0] == "si | stepi [N]"
    assert help_of["help s"][0] == "s(tep) [N]"
    assert help_of["help nl"][0] == "nextline | nl [N]"
    assert help_of["help sl"][0] == "stepline | sl [N]"
    # one instruction each, in f
    stops = stops_in(run.transcript.splitlines())
    assert [s["label"] for s in stops] == ["f [0/0]"] * 5, stops
    indexes = [s["index"] for s in stops]
    assert indexes[0] == _first(graph_break_code.f).index
    assert graph_break_code.f.path_problem(indexes) is None, indexes


def test_nextline_and_stepline_refuse_a_frame_that_is_not_generated(tmp_path: Path) -> None:
    run = run_dyndbg(GRAPH_BREAK, ["up 10", "nextline", "stepline", "nl 0", "c"], tmp_path)
    no_traceback(run)
    for command in ("nextline", "stepline"):
        assert f"*** {command}: the selected frame (<module>) is not dynamo-generated code " \
            "and cannot stop; select a generated frame, or use s or c" in run.transcript
    assert "*** line count must be at least 1" in run.transcript
    assert len(stops_in(run.transcript.splitlines())) == 1   # nothing ran until c


# -- Mode.stops_at for LINE, pure ---------------------------------------------------------------
def _frame() -> types.FrameType:
    return cast(types.FrameType, object())   # compared by identity only


def _instr(index: int, line: int | None) -> CodeInstr:
    return CodeInstr(index, 2 * index, "NOP", None, None, "", line, False, None)


def _stops(mode: Mode, events: list[tuple[types.FrameType, CodeInstr]]) -> list[int]:
    """The indexes of `events` (frame, instruction) where the mode stops."""
    return [instr.index for frame, instr in events if mode.stops_at(frame, instr)]


def test_line_mode_stops_at_a_new_line_of_its_frame_only() -> None:
    frame, other = _frame(), _frame()
    events = [(frame, _instr(3, 5)), (other, _instr(0, 40)), (frame, _instr(4, None)),
              (frame, _instr(5, 6)), (frame, _instr(6, 6)), (frame, _instr(7, 5))]
    mode = Mode.lines(frame, _instr(2, 5))
    assert mode.kind is StepKind.LINE
    assert _stops(mode, events[:4]) == [5]
    # count 2: the line stopped at becomes the one stepped off
    assert _stops(Mode.lines(frame, _instr(2, 5), count=2), events) == [7]
    # into: another generated frame's first instruction stops, and is then followed
    assert _stops(Mode.lines(frame, _instr(2, 5), into=True), events[:2]) == [0]
    followed = Mode.lines(frame, _instr(2, 5), count=2, into=True)
    assert _stops(followed, [(other, _instr(0, 40)), (other, _instr(1, 40)),
                             (other, _instr(2, 41))]) == [2]
    # the current instruction unknown: any line is a new one
    assert _stops(Mode.lines(frame, None), events[:1]) == [3]


def test_line_mode_counts_a_jump_back_as_a_new_entry() -> None:
    frame = _frame()
    loop = [(frame, _instr(11, 14)), (frame, _instr(12, 14)), (frame, _instr(8, None)),
            (frame, _instr(9, 14)), (frame, _instr(10, 14))]
    assert _stops(Mode.lines(frame, _instr(10, 14)), loop) == [9]
    # a jump back onto the current instruction (a JUMP_BACKWARD to itself) too
    assert _stops(Mode.lines(frame, _instr(10, 14)), [(frame, _instr(10, 14))]) == [10]


def test_line_mode_goes_on_in_a_resume_function_and_back_out_to_its_caller() -> None:
    caller = _frame()
    def called(name: str) -> types.FrameType:
        code = types.SimpleNamespace(co_name=name)
        return cast(types.FrameType, types.SimpleNamespace(f_back=caller, f_code=code))
    resume, other = called("torch_dynamo_resume_in_f_at_10"), called("helper")
    mode = Mode.lines(caller, _instr(50, 10))
    # a generated function the caller calls runs through; its resume function is followed
    assert _stops(mode, [(other, _instr(0, 3)), (resume, _instr(0, 10)),
                         (resume, _instr(5, 11))]) == [5]
    mode = Mode.lines(caller, _instr(50, 10))
    assert _stops(mode, [(resume, _instr(0, 10))]) == []
    assert mode.goes_on_after(resume) and mode.frame is caller
    # back in the caller, what is left only returns the resume function's result
    assert _stops(mode, [(caller, _instr(60, 12))]) == []
    assert not mode.goes_on_after(caller)   # its return: the next generated instruction stops
    # a frame the step did not go on in from a caller ends it as before
    assert not Mode.lines(caller, _instr(50, 10)).goes_on_after(caller)
    assert not Mode(StepKind.NEXT, caller).goes_on_after(caller)


def test_nextline_at_a_graph_break_goes_on_to_the_next_line_in_the_resume_function(
        tmp_path: Path) -> None:
    # g's line 13 calls the resume function that holds lines 13, 14 and 15: an
    # editor's F10 there reaches line 14, in the resume function (the rest of g).
    stops, _ = _session(LOOP, ["nl", "nl", "c"], tmp_path)
    resume = "torch_dynamo_resume_in_g_at_13 [not compiled]"
    assert [(s["label"], _source_line(s)) for s in stops] == [
        ("g [0/0]", 10), ("g [0/0]", 13), (resume, 14)], stops
