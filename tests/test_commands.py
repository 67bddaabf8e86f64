"""The commands at the (dyndbg) prompt, driven through the real CLI.

Each dyndbg subprocess costs a torch import and a real torch.compile, so a few
sessions run many commands each (module-scoped fixtures) and the tests assert
on parts of their transcripts. The transcript is split into segments, one per
prompt: the command echoed after `(dyndbg) ` and the lines it printed.
"""
from __future__ import annotations

import re

import pytest

from conftest import SAMPLES, Run, plain, run_dyndbg
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


def test_bad_input_session_no_traceback_and_program_unchanged(bad_session: Run, plain_runs) -> None:
    no_traceback(bad_session)
    expected = plain(plain_runs, "graph_break.py")
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
# Offsets differ between Python versions: the session breaks at instruction 8's
# offset, read from a first session's listing (OFFSET8 below).

BREAK_SESSION = [
    "b 20",             # 1
    "b @OFFSET8",       # 2 (instr 8)
    "tbreak 30",        # 3: one stop, then deleted
    "b 40, False",      # 4: never, until `condition 4 True`
    "b 50",             # 5: disabled, enabled later
    "disable 5",
    "b 60",             # 6: first crossing ignored
    "ignore 6 1",
    "b 70",             # 7: cleared
    "clear 7",
    "b",
    "c",                # call 0: 8 (bp 2)
    "c",                # call 0: 20 (bp 1)
    "c",                # call 0: 30 (bp 3); 40 false, 50 disabled, 60 ignored, 70 cleared
    "c",                # call 1: 8 (bp 2)
    "b",
    "condition 4 True",
    "enable 5",
    "c",                # call 1: 20 (bp 1); 30 deleted
    "c",                # call 1: 40 (bp 4)
    "c",                # call 1: 50 (bp 5)
    "c",                # call 1: 60 (bp 6)
    "b samples/graph_break.py:11",   # 8: a line after the graph break, in the resume function
    "b",
    "c",                # call 1: the resume function, at line 11 (bp 8)
    "where",
    "c",                # 70 was cleared: the program completes
    "p 12345",          # never read
]


@pytest.fixture(scope="module")
def offset8(tmp_path_factory) -> int:
    """The offset of f [0/0]'s instruction 8, from its `ll` listing."""
    run = run_dyndbg(GRAPH_BREAK, ["ll", "q"], tmp_path=tmp_path_factory.mktemp("ll"))
    for line in run.transcript.splitlines():
        match = re.match(r"^..\s+8 @(\d+)\s", line)
        if match:
            return int(match.group(1))
    raise AssertionError(f"no instruction 8 in the listing:\n{run.transcript}")


@pytest.fixture(scope="module")
def break_session(tmp_path_factory, offset8: int) -> Run:
    commands = [c.replace("OFFSET8", str(offset8)) for c in BREAK_SESSION]
    return run_dyndbg(GRAPH_BREAK, commands, tmp_path=tmp_path_factory.mktemp("break"))


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


def test_breakpoint_set_messages(break_session: Run, offset8: int) -> None:
    segs = segments(break_session.transcript)
    _, b20 = only_segment(segs, "b 20")
    assert b20.output and b20.output[0].startswith("Breakpoint 1 at ") and "instr 20" in b20.output[0]
    _, b8 = only_segment(segs, f"b @{offset8}")
    assert b8.output and b8.output[0].startswith("Breakpoint 2 at ") and f"@{offset8}" in b8.output[0]
    assert "instr 8 " in b8.output[0] + " "
    _, tb = only_segment(segs, "tbreak 30")
    assert tb.output and "breakpoint 3" in tb.output[0].lower() and "instr 30" in tb.output[0]


def test_break_index_and_offset_stop(break_session: Run, offset8: int) -> None:
    stops = _continue_stops(break_session)
    assert len(stops) >= 2 and stops[0] and stops[1], stops
    # bp 2 (instr 8, by its offset) comes first in the code, then bp 1 (instr 20).
    assert (stops[0]["index"], stops[0]["offset"]) == (8, offset8)
    assert stops[0]["breakpoints"] == [(2, 1)]
    assert "[0/0]" in stops[0]["label"]
    assert stops[1]["index"] == 20 and stops[1]["breakpoints"] == [(1, 1)]


def test_tbreak_stops_once_then_deleted(break_session: Run) -> None:
    stops = _continue_stops(break_session)
    assert len(stops) >= 3 and stops[2], stops
    assert stops[2]["index"] == 30 and stops[2]["breakpoints"] == [(3, 1)]
    assert all(s is None or s["index"] != 30 for s in stops[3:]), \
        "the temporary breakpoint stopped a second time"
    assert _row(_listing(break_session, 1), 3) is None, "tbreak 3 still listed after its stop"


def test_condition_false_never_stops_then_true_stops(break_session: Run) -> None:
    stops = _continue_stops(break_session)
    assert len(stops) >= 6, stops
    # In call 0, after bp 3 at 30 the next stop is call 1's instr 8, not 40.
    assert stops[3] is not None and stops[3]["index"] == 8 and stops[3]["breakpoints"] == [(2, 2)], stops[3]
    row = _row(_listing(break_session, 1), 4)
    assert row is not None and "False" in row, row
    segs = segments(break_session.transcript)
    _, cond = only_segment(segs, "condition 4 True")
    assert cond.output and not cond.output[0].startswith("***"), cond.output
    assert stops[5] is not None and stops[5]["index"] == 40 and stops[5]["breakpoints"][0][0] == 4, stops[5]


def test_disable_enable(break_session: Run) -> None:
    segs = segments(break_session.transcript)
    _, dis = only_segment(segs, "disable 5")
    assert dis.output and not dis.output[0].startswith("***"), dis.output
    stops = _continue_stops(break_session)
    assert all(s is None or s["index"] != 50 for s in stops[:4]), "a disabled breakpoint stopped"
    row = _row(_listing(break_session, 0), 5)
    assert row is not None and "disabled" in row, row
    assert len(stops) >= 7 and stops[6] is not None, stops
    assert stops[6]["index"] == 50 and stops[6]["breakpoints"] == [(5, 1)], stops[6]


def test_ignore_skips_one_hit(break_session: Run) -> None:
    segs = segments(break_session.transcript)
    _, ign = only_segment(segs, "ignore 6 1")
    assert ign.output and not ign.output[0].startswith("***"), ign.output
    stops = _continue_stops(break_session)
    assert all(s is None or s["index"] != 60 for s in stops[:4]), "the ignored crossing stopped"
    assert len(stops) >= 8 and stops[7] is not None, stops
    # Hits count the ignored crossing too (pdb's rule): this is the second.
    assert stops[7]["index"] == 60 and stops[7]["breakpoints"] == [(6, 2)], stops[7]


def test_clear_deletes(break_session: Run) -> None:
    segs = segments(break_session.transcript)
    _, cl = only_segment(segs, "clear 7")
    assert cl.output == ["Deleted breakpoint 7"]
    stops = _continue_stops(break_session)
    assert all(s is None or s["index"] != 70 for s in stops), "a cleared breakpoint stopped"
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


def test_break_session_program_unchanged(break_session: Run, plain_runs) -> None:
    no_traceback(break_session)
    expected = plain(plain_runs, "graph_break.py")
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


def test_break_file_line_inside_a_graph_stays_pending(break_session: Run) -> None:
    """graph_break.py:11 is computed inside graph 2: no generated instruction is
    attributed to it, so the breakpoint says it is pending and never stops."""
    segs = segments(break_session.transcript)
    i, setting = only_segment(segs, "b samples/graph_break.py:11")
    assert setting.output and setting.output[0].startswith("Breakpoint 8 at "), setting.output
    assert "pending" in setting.output[0] and "inside a graph" in setting.output[0]
    listing = segs[i + 1]
    assert listing.command == "b"
    row = _row(listing.output, 8)
    assert row and "graph_break.py:11" in row, listing.output
    cont = segs[i + 2]
    assert cont.command == "c"
    assert not stops_in(cont.output), cont.output


# ---------------------------------------------------------------------------------------
# Stepping and looking, then `q`.

STEP_SESSION = [
    "s",
    "",                 # repeats `s`
    "n",
    "step 3",
    "until",
    "until 20",
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
def step_session(tmp_path_factory) -> Run:
    return run_dyndbg(GRAPH_BREAK, STEP_SESSION, tmp_path=tmp_path_factory.mktemp("step"))


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


def test_step_and_empty_line_repeat(step_session: Run) -> None:
    start = _first_stop_index(step_session)
    stops = _step_stops(step_session)
    segs = segments(step_session.transcript)
    assert segs[0].command == "s" and segs[1].command == ""
    assert 0 in stops and 1 in stops, segs[:2]
    assert stops[0]["index"] == start + 1
    assert stops[1]["index"] == start + 2, "an empty line did not repeat `s`"


def test_next_and_step_count(step_session: Run) -> None:
    start = _first_stop_index(step_session)
    stops = _step_stops(step_session)
    assert stops[2]["index"] == start + 3, stops.get(2)
    assert stops[3]["index"] == start + 6, stops.get(3)


def test_until(step_session: Run) -> None:
    stops = _step_stops(step_session)
    before = stops[3]["index"]
    assert 4 in stops and stops[4]["index"] == before + 1, stops.get(4)
    assert 5 in stops and stops[5]["index"] == 20, stops.get(5)


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


def test_list_and_longlist(step_session: Run) -> None:
    segs = segments(step_session.transcript)
    first, again, whole = segs[11], segs[12], segs[13]
    assert first.command == "l" and again.command == "l" and whole.command == "ll"
    indices = [int(m[1]) for line in first.output if (m := re.match(r"^(?:->|  )\s+(\d+) @", line))]
    assert 20 in indices and len(indices) >= 5, first.output
    assert any(re.match(r"^->\s+20 @", line) for line in first.output), first.output
    more = [int(m[1]) for line in again.output if (m := re.match(r"^(?:->|  )\s+(\d+) @", line))]
    assert more and min(more) > max(indices), "a second `l` did not continue the listing"
    all_indices = [int(m[1]) for line in whole.output if (m := re.match(r"^(?:->|  )\s+(\d+) @", line))]
    total = _step_stops(step_session)[0]
    assert all_indices == list(range(int(STOP.match(total["line"])["total"]))), all_indices[:5]
    assert any(line.startswith("->") and " 20 @" in line for line in whole.output)
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


def test_quit_ends_program(step_session: Run, plain_runs) -> None:
    no_traceback(step_session)
    segs = segments(step_session.transcript)
    assert segs[-1].command == "q", [s.command for s in segs[-3:]]
    assert step_session.returncode == 0
    assert "call 0" not in step_session.stdout and "call 1" not in step_session.stdout
    # What the program printed before `q` is the start of a plain run's output.
    assert plain(plain_runs, "graph_break.py").stdout.startswith(step_session.stdout)
