"""pdb's and gdb's habits that torch's bytecode-debugger users and pdb users
expect (issue 13): next/return/until act on the selected frame, list forms,
up/down at the ends, breakpoint locations N.M, gdb's `if`, `trace`, `?`."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import ROOT, SAMPLES, GraphBreakCode, run_dyndbg, run_plain
from transcript import no_traceback, stops_in

PROGRAMS = ROOT / "tests" / "programs"
RESUME = "torch_dynamo_resume_in_f_at_10"


def _labels(transcript: str) -> list[str]:
    return [stop["label"] for stop in stops_in(transcript.splitlines())]


@pytest.mark.parametrize("command", ["n", "r", "until"])
def test_next_return_until_act_on_the_selected_frame(command: str, tmp_path: Path) -> None:
    # As pdb's set_next(self.curframe): after `up` from the resume function
    # into f, the command runs the resume function to its end and stops in f.
    script = SAMPLES / "graph_break.py"
    run = run_dyndbg(script, ["b torch_dynamo_resume_in_*", "c", "up", command, "c", "c"],
                     tmp_path)
    no_traceback(run)
    assert run.stdout == run_plain(script).stdout
    stops = stops_in(run.transcript.splitlines())
    assert [s["label"] for s in stops[:3]] == ["f [0/0]", f"{RESUME} [1/0]", "f [0/0]"], stops
    # f's next instruction after its call of the resume function: its return
    assert "RETURN_VALUE" in stops[2]["line"], stops[2]
    assert "*** " not in run.transcript


def test_next_in_a_frame_that_is_not_generated_is_refused(tmp_path: Path) -> None:
    run = run_dyndbg(SAMPLES / "graph_break.py", ["up 10", "n", "c"], tmp_path)
    assert "*** next: the selected frame (<module>) is not dynamo-generated code and " \
        "cannot stop; select a generated frame, or use s or c" in run.transcript


def test_up_and_down_clamp_at_the_ends(tmp_path: Path) -> None:
    run = run_dyndbg(SAMPLES / "graph_break.py", ["b torch_dynamo_resume_in_*", "c", "where",
                                                  "up 10", "up", "down 10", "down", "c", "c"],
                     tmp_path)
    no_traceback(run)
    lines = run.transcript.splitlines()
    # `where` numbers its frames; up and down show the frame without its number
    frames = [re.sub(r"^[> ] +\d+ ", "", line) for line in lines
              if re.match(r"^[> ] +\d+ ", line)]
    oldest, newest = frames[0], frames[-1]
    i = lines.index("(dyndbg) up 10")
    assert lines[i + 1:i + 3] == ["Oldest frame", oldest], lines[i:i + 3]   # as far as it goes
    assert lines[i + 3:i + 5] == ["(dyndbg) up", "*** Oldest frame"]         # no further
    assert lines[i + 5:i + 7] == ["(dyndbg) down 10", "Newest frame"]
    assert lines[i + 7] == newest
    assert lines[i + 8:i + 10] == ["(dyndbg) down", "*** Newest frame"]


def test_list_dot_and_list_first_count(tmp_path: Path) -> None:
    run = run_dyndbg(SAMPLES / "graph_break.py", ["s", "s", "l 20", "l .", "l 5, 2", "c"],
                     tmp_path)
    no_traceback(run)
    text = run.transcript
    listed = {cmd: re.findall(r"^(?:->)?\s+(\d+) @", part, re.M)
              for cmd, part in zip(["l 20", "l .", "l 5, 2"], re.split(r"\(dyndbg\) l ", text)[1:])}
    assert listed["l 20"] == [str(i) for i in range(15, 26)]
    current = int(stops_in(text.splitlines())[-1]["line"].split("instr ")[1].split("/")[0])
    assert listed["l ."] == [str(i) for i in range(max(0, current - 5), current + 6)]
    assert listed["l 5, 2"] == ["5", "6"]          # pdb: a smaller second number is a count


def test_breakpoint_locations_are_numbered_and_disabled_one_by_one(tmp_path: Path) -> None:
    # Breakpoint 0, torch's markers: one location per marker, in two functions.
    script = PROGRAMS / "two_markers.py"
    run = run_dyndbg(script, ["c", "b", "disable 0.1", "info breakpoints", "c", "b", "c"],
                     tmp_path)
    no_traceback(run)
    # (a plain run would start torch's own debugger at each marker)
    results = [f"[2.0, 2.0] [1.0, 1.0] {float((1 + n) * n * 2)}" for n in (1, 2)]
    assert run.stdout.splitlines() == [line for result in results
                                       for line in ("graph break in the middle", result)]
    text = run.transcript
    listings = re.findall(r"Num  Type   State     Where\n((?:.+\n)+?)\(dyndbg\)", text)
    assert len(listings) == 3, text
    first = listings[0].splitlines()
    assert re.match(r"^0\s+break\s+enabled\s+torch's <BREAKPOINT> markers", first[0])
    assert re.match(r"^0\.1\s+enabled\s+first \[0/0\] instr \d+  hit 1 time$", first[1]), first
    assert re.match(r"^0\.2\s+enabled\s+second \[1/0\] instr \d+  hit 1 time$", first[2]), first
    assert "Disabled location 0.1" in text
    # With 0.1 off, the second call of first() does not stop; second() does.
    assert _labels(text) == ["first [0/0]", "second [1/0]", "second [1/0]"], text
    last = listings[2].splitlines()
    assert re.match(r"^0\.1\s+disabled\s+first \[0/0\] instr \d+  hit 1 time$", last[1]), last
    assert re.match(r"^0\.2\s+enabled\s+second \[1/0\] instr \d+  hit 2 times$", last[2]), last


def test_a_glob_breakpoint_gets_a_new_location_for_code_compiled_later(tmp_path: Path) -> None:
    script = SAMPLES / "graph_break.py"
    run = run_dyndbg(script, ["b __compiled_fn_*", "c", "c", "b", "disable 1.2", "c", "c"],
                     tmp_path)
    no_traceback(run)
    text = run.transcript
    listing = text.split("Num  Type   State     Where\n")[1].split("(dyndbg)")[0].splitlines()
    assert re.match(r"^1\.1\s+enabled\s+f \[0/0\]  hit 1 time$", listing[1]), listing
    assert re.match(rf"^1\.2\s+enabled\s+{RESUME} \[1/0\]  hit 1 time$", listing[2]), listing
    # 1.2 off: the second call stops at graph 2's call in f only.
    after = text.split("Disabled location 1.2")[1]
    assert [label for label in _labels(after)] == ["f [0/0]"], after


def test_gdb_condition_form_and_names_with_spaces(tmp_path: Path) -> None:
    script = SAMPLES / "graph_break.py"
    run = run_dyndbg(script, ["b torch_dynamo_resume_in_* if x.sum() > 100",
                              "b torch_dynamo_resume_in_* x.sum() > 100", "b", "c"], tmp_path)
    no_traceback(run)
    text = run.transcript
    assert "Breakpoint 1 at torch_dynamo_resume_in_* (pending: no matching code compiled yet)" \
        in text
    assert "*** bad breakpoint location 'torch_dynamo_resume_in_* x.sum() > 100': a name has " \
        "no spaces (a condition goes after ',' or 'if')" in text
    assert re.search(r"^1\s+break\s+enabled\s+torch_dynamo_resume_in_\*  \[pending: .*\]  "
                     r"if x\.sum\(\) > 100$", text, re.M), text
    assert _labels(text) == ["f [0/0]"]          # the condition is false: no stop


def test_trace_command_and_set_trace(tmp_path: Path, graph_break_code: GraphBreakCode) -> None:
    script = SAMPLES / "graph_break.py"
    run = run_dyndbg(script, ["trace", "trace on", "set", "b torch_dynamo_resume_in_*", "c",
                              "set trace off", "c"], tmp_path)
    no_traceback(run)
    assert run.stdout == run_plain(script).stdout
    text = run.transcript
    assert "(dyndbg) trace\ntrace off\n" in text and "(dyndbg) trace on\ntrace on\n" in text
    assert re.search(r"^vi off, sticky off, color off, width \d+, trace on$", text, re.M)
    on, off = text.split("(dyndbg) set trace off\n")
    traced = [line for line in on.splitlines() if line.startswith("trace ")
              and "  instr " in line]
    # from the instruction after the stop where it was turned on, to the breakpoint:
    # all that f ran up to its call of the resume function, then the breakpoint's
    assert traced[-1].startswith(f"trace {RESUME} [1/0]  instr 1/"), traced[-1]
    f = graph_break_code.f
    in_f = [int(m.group(1)) for line in traced[:-1]
            if (m := re.match(r"^trace f \[0/0\]  instr (\d+)/", line))]
    assert len(in_f) == len(traced) - 1, traced
    assert in_f[0] == 2 and in_f[-1] == f.find("CALL_FUNCTION_EX").index, (in_f[:3], in_f[-3:])
    assert f.path_problem([1] + in_f) is None, f.path_problem([1] + in_f)
    assert off.startswith("trace off\n") and "\ntrace " not in off


def test_bad_lines_seen_on_real_sessions(tmp_path: Path) -> None:
    # `?` is help, as in pdb; a trailing ';;' once looped forever.
    run = run_dyndbg(SAMPLES / "graph_break.py", ["?", "p 6*7 ;;", "b ²", "c"], tmp_path)
    no_traceback(run)
    text = run.transcript
    assert "(dyndbg) ?\nCommands (type 'help COMMAND' for one):" in text
    # its table: every family's commands start in one column (the longest title decides)
    rows = text.split("(dyndbg) ?\nCommands (type 'help COMMAND' for one):\n", 1)[1]
    rows = rows.split("\nAnything else is Python", 1)[0].splitlines()
    assert len(rows) >= 7 and any(row.startswith("  editing the cache ") for row in rows), rows
    # where each row's first command starts (each row lists several, comma-separated)
    columns = {row.rfind(" ", 0, row.index(",")) + 1 for row in rows}
    assert len(columns) == 1, rows
    assert text.count("\n42\n") == 1
    assert "*** instruction index must be a whole number, not '²'" in text
