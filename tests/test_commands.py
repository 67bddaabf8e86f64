"""The commands at the (dyndbg) prompt, driven through the real CLI.

Each dyndbg subprocess costs a torch import and a real torch.compile, so a few
sessions run many commands each (module-scoped fixtures) and the tests assert
on parts of their transcripts. The transcript is split into segments, one per
prompt: the command echoed after `(dyndbg) ` and the lines it printed.
"""
from __future__ import annotations

import re

import pytest

from harness import SAMPLES, GraphBreakCode, Run, plain, run_dyndbg
from listing import Instr, Listing
from transcript import PROMPT, STOP, Segment, no_traceback, segments, stops_in

GRAPH_BREAK = SAMPLES / "graph_break.py"


def only_segment(segs: list[Segment], command: str) -> tuple[int, Segment]:
    matches = [(i, s) for i, s in enumerate(segs) if s.command == command]
    assert matches, f"no prompt echoed {command[:80]!r}; prompts: {[s.command[:60] for s in segs]}"
    return matches[0]


# ---------------------------------------------------------------------------------------
# Bad input: one `***` line, the prompt again, never a traceback.

LONG_LINE = "frobnicate " * 10000
BAD_INPUTS = [
    "frobnicate the thing",
    "b not a place",
    "b 99999",
    "until 99999",
    "condition 42 x",
    "ignore",
    "p 1/0",
    "undefined_name",
    LONG_LINE,
]
GARBAGE = b"\xff\xfe\x00\x1b[31m"
BAD_SESSION = BAD_INPUTS + [
    "stack ;; locals",
    "c = 3",
    "p c",
    "!c",
]
# Last, so that whatever it does cannot change what the lines before showed.
BAD_STDIN = "".join(c + "\n" for c in BAD_SESSION).encode() + GARBAGE + b"\np 6*7\n"


@pytest.fixture(scope="module")
def bad_session(tmp_path_factory) -> Run:
    return run_dyndbg(GRAPH_BREAK, tmp_path=tmp_path_factory.mktemp("bad"), stdin_bytes=BAD_STDIN)


@pytest.mark.parametrize("command", BAD_INPUTS,
                         ids=[c if len(c) < 40 else "very-long-line" for c in BAD_INPUTS])
def test_bad_input_one_error_line_and_prompt_again(bad_session: Run, command: str) -> None:
    segs = segments(bad_session.transcript)
    i, seg = only_segment(segs, command)
    assert len(seg.output) == 1 and seg.output[0].startswith("***"), \
        f"{command[:60]!r} printed {[line[:200] for line in seg.output]}"
    assert "Traceback" not in seg.output[0]
    assert i + 1 < len(segs), f"no prompt after {command[:60]!r}"
    # Still at the first stop: bad input must not resume the program.
    assert not stops_in(seg.output)


def test_bad_input_session_no_traceback_and_program_unchanged(bad_session: Run) -> None:
    no_traceback(bad_session)
    expected = plain("graph_break.py")
    assert bad_session.returncode == expected.returncode == 0
    assert bad_session.stdout == expected.stdout


def test_garbage_bytes_on_stdin(bad_session: Run) -> None:
    """Undecodable bytes, a NUL and an escape sequence: one *** line, then the prompt."""
    segs = segments(bad_session.transcript)
    i, _ = only_segment(segs, "!c")
    tail = "\n".join(PROMPT + s.command + "\n" + "\n".join(s.output) for s in segs[i + 1:])
    assert len(segs) >= i + 3, f"no prompt after the garbage line:\n{tail[-2000:]}"
    garbage = segs[i + 1]
    assert len(garbage.output) == 1 and garbage.output[0].startswith("***"), \
        f"the garbage line printed:\n{tail[-2000:]}"
    assert segs[i + 2].command == "p 6*7" and segs[i + 2].output == ["42"], \
        f"the prompt did not come back after the garbage line:\n{tail[-2000:]}"


def test_chained_commands(bad_session: Run) -> None:
    segs = segments(bad_session.transcript)
    i, seg = only_segment(segs, "stack ;; locals")
    assert seg.output and seg.output[0].startswith("value stack"), seg.output
    assert not any(line.lstrip().startswith("x ") for line in seg.output)
    # The second command runs next, at the same stop, echoed as its own prompt.
    assert segs[i + 1].command == "locals", [s.command for s in segs[i:i + 3]]
    names = [line.split()[0] for line in segs[i + 1].output if line.startswith("  ")]
    assert names[:2] == ["x", "y"], segs[i + 1].output


def test_assignment_to_command_name_is_python(bad_session: Run) -> None:
    segs = segments(bad_session.transcript)
    _, assign = only_segment(segs, "c = 3")
    assert assign.output == [], f"`c = 3` printed {assign.output}"  # and did not continue
    _, p = only_segment(segs, "p c")
    assert p.output == ["3"]
    _, forced = only_segment(segs, "!c")
    assert forced.output == ["3"], f"`!c` is Python, printing c: got {forced.output}"


# ---------------------------------------------------------------------------------------
# Breakpoints by index and offset; condition, tbreak, ignore, disable/enable, clear,
# listing. f [0/0] runs twice (call 0 and call 1); the first stop is in call 0.
# The places are seven instructions of f that run once per call, in this order,
# found by what they are in a first run's listing (conftest.graph_break_code):
# what is at an index depends on the torch and Python that compiled f. The
# session breaks at the first by its offset, at the others by their index.

PLACES = {                    # breakpoint number -> (opname, argument as `ll` shows it)
    2: ("LOAD_FAST", "x"),                      # graph 2's first input (its first load)
    1: ("STORE_FAST", "graph_out_0"),           # graph 2's outputs stored
    3: ("LOAD_CONST", "'graph break here'"),    # print()'s argument
    4: ("DELETE_FAST", "graph_out_0"),
    5: ("LOAD_GLOBAL", "torch_dynamo_resume_in_f_at_10"),
    6: ("CALL_FUNCTION_EX", None),              # the resume call (argument 0 to 3.13, none on 3.14)
    7: ("RETURN_VALUE", ""),
}

BREAK_SESSION = [
    "b {1}",            # 1
    "b @{2@}",          # 2 (by offset)
    "tbreak {3}",       # 3: one stop, then deleted
    "b {4}, False",     # 4: never, until `condition 4 True`
    "b {5}",            # 5: disabled, enabled later
    "disable 5",
    "b {6}",            # 6: first crossing ignored
    "ignore 6 1",
    "b {7}",            # 7: cleared
    "clear 7",
    "b",
    "c",                # call 0: place 2
    "c",                # call 0: place 1
    "c",                # call 0: place 3; 4 false, 5 disabled, 6 ignored, 7 cleared
    "c",                # call 1: place 2
    "b",
    "condition 4 True",
    "enable 5",
    "c",                # call 1: place 1; 3 deleted
    "c",                # call 1: place 4
    "c",                # call 1: place 5
    "c",                # call 1: place 6
    "b samples/graph_break.py:11",   # 8: a line after the graph break, in the resume function
    "b",
    "c",                # call 1: the resume function, at line 11 (bp 8)
    "where",
    "c",                # 7 was cleared: the program completes
    "p 12345",          # never read
]


@pytest.fixture(scope="module")
def places(graph_break_code: GraphBreakCode) -> dict[int, Instr]:
    """Breakpoint number -> the instruction of f [0/0] it is set on."""
    f = graph_break_code.f
    found = {number: f.find(opname, arg) for number, (opname, arg) in PLACES.items() if number != 2}
    found[2] = f.first(*PLACES[2])          # x is loaded again later, for the resume function
    in_order = [found[n] for n in (2, 1, 3, 4, 5, 6, 7)]
    assert [i.index for i in in_order] == sorted(i.index for i in in_order), in_order
    # Each runs in every call: none is in the body of an `if` (torch 2.15's profiler
    # template has two around graph 2's call).
    assert all(f.on_every_path(i) for i in in_order), f.text
    return found


def _break_commands(places: dict[int, Instr]) -> list[str]:
    commands = []
    for command in BREAK_SESSION:
        for number, instr in places.items():
            command = command.replace(f"{{{number}@}}", str(instr.offset))
            command = command.replace(f"{{{number}}}", str(instr.index))
        commands.append(command)
    return commands


@pytest.fixture(scope="module")
def break_session(tmp_path_factory, places: dict[int, Instr]) -> Run:
    return run_dyndbg(GRAPH_BREAK, _break_commands(places),
                      tmp_path=tmp_path_factory.mktemp("break"))


def _continue_stops(run: Run) -> list[dict | None]:
    """For each `c` of the session, the stop it reached (None: the program ended)."""
    result = []
    for seg in segments(run.transcript):
        if seg.command == "c":
            stops = stops_in(seg.output)
            result.append(stops[0] if stops else None)
    return result


def _listing(run: Run, nth: int) -> list[str]:
    listings = [s.output for s in segments(run.transcript) if s.command == "b"]
    assert len(listings) > nth, f"only {len(listings)} `b` listings"
    return listings[nth]


def _row(listing: list[str], number: int) -> str | None:
    rows = [line for line in listing if re.match(rf"^{number}\s", line)]
    return rows[0] if rows else None


def _is_at(stop: dict | None, instr: Instr) -> bool:
    """Whether a stop is in f [0/0] at `instr` (its index, offset and opname)."""
    return stop is not None and stop["label"] == "f [0/0]" and \
        (stop["index"], stop["offset"]) == (instr.index, instr.offset) and \
        f"  {instr.opname} " in stop["line"] + " "


def test_breakpoint_set_messages(break_session: Run, places: dict[int, Instr]) -> None:
    segs = segments(break_session.transcript)
    one, two, three = places[1], places[2], places[3]
    _, b1 = only_segment(segs, f"b {one.index}")
    assert b1.output and b1.output[0] == f"Breakpoint 1 at f [0/0] instr {one.index} @{one.offset}", \
        b1.output
    _, b2 = only_segment(segs, f"b @{two.offset}")
    assert b2.output and b2.output[0] == f"Breakpoint 2 at f [0/0] instr {two.index} @{two.offset}", \
        b2.output
    _, tb = only_segment(segs, f"tbreak {three.index}")
    assert tb.output and "breakpoint 3" in tb.output[0].lower() and \
        f"instr {three.index} " in tb.output[0] + " ", tb.output


def test_break_index_and_offset_stop(break_session: Run, places: dict[int, Instr]) -> None:
    stops = _continue_stops(break_session)
    assert len(stops) >= 2, stops
    # bp 2 (by its offset) comes first in the code, then bp 1 (by its index).
    assert _is_at(stops[0], places[2]) and stops[0]["breakpoints"] == [(2, 1)], (stops[0], places[2])
    assert _is_at(stops[1], places[1]) and stops[1]["breakpoints"] == [(1, 1)], (stops[1], places[1])


def test_tbreak_stops_once_then_deleted(break_session: Run, places: dict[int, Instr]) -> None:
    stops = _continue_stops(break_session)
    assert len(stops) >= 3, stops
    assert _is_at(stops[2], places[3]) and stops[2]["breakpoints"] == [(3, 1)], (stops[2], places[3])
    assert all(s is None or s["index"] != places[3].index for s in stops[3:]), \
        "the temporary breakpoint stopped a second time"
    assert _row(_listing(break_session, 1), 3) is None, "tbreak 3 still listed after its stop"
    # As pdb: the stop says the temporary breakpoint is gone; no other stop says so.
    said = [(seg.command, line) for seg in segments(break_session.transcript)
            for line in seg.output if line.startswith("Deleted breakpoint ")]
    three = places[3]
    assert said == [("clear 7", "Deleted breakpoint 7"),
                    ("c", f"Deleted breakpoint 3 at f [0/0] instr {three.index} @{three.offset}")], \
        said


def test_condition_false_never_stops_then_true_stops(break_session: Run,
                                                     places: dict[int, Instr]) -> None:
    stops = _continue_stops(break_session)
    assert len(stops) >= 6, stops
    # In call 0, after bp 3 the next stop is call 1's bp 2, not bp 4 (condition False).
    assert _is_at(stops[3], places[2]) and stops[3]["breakpoints"] == [(2, 2)], stops[3]
    row = _row(_listing(break_session, 1), 4)
    assert row is not None and "False" in row, row
    segs = segments(break_session.transcript)
    _, cond = only_segment(segs, "condition 4 True")
    assert cond.output and not cond.output[0].startswith("***"), cond.output
    assert _is_at(stops[5], places[4]) and stops[5]["breakpoints"][0][0] == 4, (stops[5], places[4])


def test_disable_enable(break_session: Run, places: dict[int, Instr]) -> None:
    segs = segments(break_session.transcript)
    _, dis = only_segment(segs, "disable 5")
    assert dis.output and not dis.output[0].startswith("***"), dis.output
    stops = _continue_stops(break_session)
    assert all(s is None or s["index"] != places[5].index for s in stops[:4]), \
        "a disabled breakpoint stopped"
    row = _row(_listing(break_session, 0), 5)
    assert row is not None and "disabled" in row, row
    assert len(stops) >= 7, stops
    assert _is_at(stops[6], places[5]) and stops[6]["breakpoints"] == [(5, 1)], (stops[6], places[5])


def test_ignore_skips_one_hit(break_session: Run, places: dict[int, Instr]) -> None:
    segs = segments(break_session.transcript)
    _, ign = only_segment(segs, "ignore 6 1")
    assert ign.output and not ign.output[0].startswith("***"), ign.output
    stops = _continue_stops(break_session)
    assert all(s is None or s["index"] != places[6].index for s in stops[:4]), \
        "the ignored crossing stopped"
    assert len(stops) >= 8, stops
    # Hits count the ignored crossing too (pdb's rule): this is the second.
    assert _is_at(stops[7], places[6]) and stops[7]["breakpoints"] == [(6, 2)], (stops[7], places[6])


def test_clear_deletes(break_session: Run, places: dict[int, Instr]) -> None:
    segs = segments(break_session.transcript)
    _, cl = only_segment(segs, "clear 7")
    assert cl.output == ["Deleted breakpoint 7"]
    stops = _continue_stops(break_session)
    assert all(s is None or s["index"] != places[7].index for s in stops), \
        "a cleared breakpoint stopped"
    assert _row(_listing(break_session, 0), 7) is None
    # After the line breakpoint only the cleared one is left: the program completes.
    assert stops[-1] is None, stops[-1]


def test_break_without_argument_lists_with_hit_counts(break_session: Run) -> None:
    first, second = _listing(break_session, 0), _listing(break_session, 1)
    assert [n for n in range(1, 8) if _row(first, n)] == [1, 2, 3, 4, 5, 6], first
    assert not any("hit" in line for line in first), first
    assert [n for n in range(1, 8) if _row(second, n)] == [1, 2, 4, 5, 6], second
    assert re.search(r"\bhit 1 time\b", _row(second, 1) or ""), second
    assert re.search(r"\bhit 2 times\b", _row(second, 2) or ""), second
    assert "hit" not in (_row(second, 5) or "x hit"), "a disabled breakpoint counted a hit"


def test_break_session_program_unchanged(break_session: Run) -> None:
    no_traceback(break_session)
    expected = plain("graph_break.py")
    assert break_session.returncode == 0
    assert break_session.stdout == expected.stdout


def test_bare_c_continues(break_session: Run) -> None:
    segs = segments(break_session.transcript)
    i, seg = only_segment(segs, "c")
    stops = stops_in(seg.output)
    assert stops and stops[0]["index"] != 1, seg.output
    # After the last `c` the program ran to completion: no stop read another line.
    assert segs[-1].command == "c" and not stops_in(segs[-1].output), \
        [s.command for s in segs[-4:]]


def test_break_file_line_inside_a_graph_resolves_to_the_graph(break_session: Run) -> None:
    """graph_break.py:11 is computed inside the second graph (eager): no
    generated instruction is attributed to it, so the breakpoint's location
    is that graph, and it stops there before the line's first node, not in
    generated code (tests/test_graph_line_breakpoints.py checks the node)."""
    segs = segments(break_session.transcript)
    i, setting = only_segment(segs, "b samples/graph_break.py:11")
    assert setting.output and setting.output[0].startswith("Breakpoint 8 at "), setting.output
    assert re.search(r"\(resolved: in graph \d+ eager forward\)$", setting.output[0]), setting.output
    listing = segs[i + 1]
    assert listing.command == "b"
    row = _row(listing.output, 8)
    assert row and "graph_break.py:11" in row, listing.output
    cont = segs[i + 2]
    assert cont.command == "c"
    assert not stops_in(cont.output), cont.output
    assert "Breakpoint 8 at samples/graph_break.py:11, hit 1" in cont.output, cont.output
    assert any(re.match(r"\[graph \d+ eager forward\] node ", line) for line in cont.output)


# ---------------------------------------------------------------------------------------
# Stepping and looking, then `q`. `until {store}`: to the instruction that stores graph
# 2's outputs (found in a first run's listing), past the graph call.

STEP_SESSION = [
    "s",
    "",                 # repeats `s`
    "n",
    "step 3",
    "until",
    "until {store}",
    "where",
    "up",
    "where",
    "down",
    "where",
    "l",
    "l",
    "ll",
    "display x",
    "s",
    "undisplay 1",
    "s",
    "help",
    "help break",
    "return",
    "q",
    "p 12345",          # never read: the program has ended
]


@pytest.fixture(scope="module")
def store(graph_break_code: GraphBreakCode) -> Instr:
    """f [0/0]'s STORE_FAST of graph 2's outputs: where `until {store}` goes."""
    return graph_break_code.f.find("STORE_FAST", "graph_out_0")


@pytest.fixture(scope="module")
def step_session(tmp_path_factory, store: Instr) -> Run:
    commands = [c.replace("{store}", str(store.index)) for c in STEP_SESSION]
    return run_dyndbg(GRAPH_BREAK, commands, tmp_path=tmp_path_factory.mktemp("step"))


def _straight(code: Listing, first: int, count: int) -> None:
    """The steps below count instructions: none of these may jump."""
    for index in range(first, first + count):
        assert code.successors(code.at(index)) == [index + 1], \
            f"instruction {index} can jump: the step counts assume straight-line code\n{code.text}"


def _first_stop_index(run: Run) -> int:
    head = run.transcript.split(PROMPT, 1)[0].splitlines()
    stops = stops_in(head)
    assert stops, f"no first stop:\n{run.transcript[:2000]}"
    return stops[0]["index"]


def _step_stops(run: Run) -> dict[int, dict]:
    """Segment number -> the stop it reached."""
    result = {}
    for i, seg in enumerate(segments(run.transcript)):
        stops = stops_in(seg.output)
        if stops:
            result[i] = stops[-1]
    return result


def test_step_and_empty_line_repeat(step_session: Run, graph_break_code: GraphBreakCode) -> None:
    start = _first_stop_index(step_session)
    _straight(graph_break_code.f, start, 8)
    stops = _step_stops(step_session)
    segs = segments(step_session.transcript)
    assert segs[0].command == "s" and segs[1].command == ""
    assert 0 in stops and 1 in stops, segs[:2]
    assert stops[0]["index"] == start + 1
    assert stops[1]["index"] == start + 2, "an empty line did not repeat `s`"


def test_next_and_step_count(step_session: Run, graph_break_code: GraphBreakCode) -> None:
    start = _first_stop_index(step_session)
    _straight(graph_break_code.f, start, 8)
    stops = _step_stops(step_session)
    assert stops[2]["index"] == start + 3, stops.get(2)
    assert stops[3]["index"] == start + 6, stops.get(3)


def test_until(step_session: Run, store: Instr) -> None:
    stops = _step_stops(step_session)
    before = stops[3]["index"]
    assert 4 in stops and stops[4]["index"] == before + 1, stops.get(4)
    # `until INDEX` runs through the graph call, to the store of its outputs.
    assert store.index > before + 1 + 2, store
    assert 5 in stops and (stops[5]["index"], stops[5]["offset"]) == (store.index, store.offset), \
        (stops.get(5), store)
    assert "STORE_FAST" in stops[5]["line"] and "graph_out_0" in stops[5]["line"], stops[5]


def test_where_up_down(step_session: Run) -> None:
    segs = segments(step_session.transcript)
    where1, where2, where3 = segs[6], segs[8], segs[10]
    assert where1.command == where2.command == where3.command == "where"
    text = "\n".join(where1.output)
    assert "<module>" in text and "graph_break.py" in text, text
    generated = [line for line in where1.output if "[0/0]" in line]
    assert generated, f"no frame with its compile id in:\n{text}"
    assert generated[0].startswith(">"), "the current frame is not the selected one"
    assert where1.output[-1].startswith(">") and " f" in where1.output[-1]
    # up selects the frame above; down comes back.
    assert segs[7].command == "up" and segs[7].output and "[0/0]" not in segs[7].output[0]
    selected = [line for line in where2.output if line.startswith(">")]
    assert len(selected) == 1 and "[0/0]" not in selected[0], where2.output
    assert where2.output.index(selected[0]) == len(where2.output) - 2
    assert segs[9].command == "down" and segs[9].output and "[0/0]" in segs[9].output[0]
    assert where3.output == where1.output


def test_list_and_longlist(step_session: Run, store: Instr) -> None:
    segs = segments(step_session.transcript)
    first, again, whole = segs[11], segs[12], segs[13]
    assert first.command == "l" and again.command == "l" and whole.command == "ll"
    indices = [int(m[1]) for line in first.output if (m := re.match(r"^(?:->|  )\s+(\d+) @", line))]
    assert store.index in indices and len(indices) >= 5, first.output
    assert any(re.match(rf"^->\s+{store.index} @", line) for line in first.output), first.output
    more = [int(m[1]) for line in again.output if (m := re.match(r"^(?:->|  )\s+(\d+) @", line))]
    assert more and min(more) > max(indices), "a second `l` did not continue the listing"
    all_indices = [int(m[1]) for line in whole.output if (m := re.match(r"^(?:->|  )\s+(\d+) @", line))]
    total = _step_stops(step_session)[0]
    assert all_indices == list(range(int(STOP.match(total["line"])["total"]))), all_indices[:5]
    assert any(line.startswith("->") and f" {store.index} @" in line for line in whole.output)
    assert any("RETURN_VALUE" in line for line in whole.output)


def test_display_and_undisplay(step_session: Run) -> None:
    segs = segments(step_session.transcript)
    assert segs[14].command == "display x"
    assert segs[14].output and segs[14].output[0].startswith("1: x = "), segs[14].output
    assert any(line.startswith("1: x = ") for line in segs[15].output), \
        f"display not shown at the next stop: {segs[15].output}"
    assert segs[16].command == "undisplay 1" and not segs[16].output[0].startswith("***")
    assert stops_in(segs[17].output), segs[17].output
    assert not any(line.startswith("1: x") for line in segs[17].output), segs[17].output


def test_help(step_session: Run) -> None:
    segs = segments(step_session.transcript)
    _, general = only_segment(segs, "help")
    # Usages like `s(tep)` and `c(ont(inue))` name the commands in full without the parentheses.
    text = "\n".join(general.output).replace("(", "").replace(")", "")
    for name in ("step", "next", "until", "return", "continue", "quit", "break", "tbreak",
                 "clear", "disable", "enable", "condition", "ignore", "where", "display"):
        assert re.search(rf"\b{name}\b", text), f"{name!r} not in help:\n{text}"
    _, one = only_segment(segs, "help break")
    assert one.output and one.output[0].startswith("b(reak)"), one.output
    assert "FILE:LINE" in "\n".join(one.output)


def test_return_stops_at_return_value(step_session: Run) -> None:
    segs = segments(step_session.transcript)
    i, seg = only_segment(segs, "return")
    stops = stops_in(seg.output)
    assert len(stops) == 1, seg.output
    assert "RETURN_VALUE" in stops[0]["line"] and stops[0]["label"].startswith("f [0/0]"), stops[0]
    total = int(STOP.match(stops[0]["line"])["total"])
    assert stops[0]["index"] == total - 1


def test_quit_ends_program(step_session: Run) -> None:
    no_traceback(step_session)
    segs = segments(step_session.transcript)
    assert segs[-1].command == "q", [s.command for s in segs[-3:]]
    assert step_session.returncode == 0
    assert "call 0" not in step_session.stdout and "call 1" not in step_session.stdout
    # What the program printed before `q` is the start of a plain run's output.
    assert plain("graph_break.py").stdout.startswith(step_session.stdout)
