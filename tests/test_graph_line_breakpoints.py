"""`b FILE:LINE` on a line computed inside a compiled graph (issue 50): each
graph holding nodes of the line (aot_eager's forward and backward, eager's
forward) is a location N.M; it stops before the line's first node each time
the graph runs; conditions (on the graph frame's node values), `ignore`,
`disable N.M` work. Real CLI on tests/programs/graph_lines.py (a training
loop of three steps, then one more forward for torch's account).

Checked against torch's own account, never against strings copied from one
release: the program prints each node of the graphs that ran with the
innermost user frame of its node.meta["stack_trace"]; the node a stop names
must be the first stepped node of that line there. The program's output is
that of a plain run (stopping changes nothing).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import ROOT, Run, run_dyndbg, run_plain
from transcript import graph_segments as _segments, no_traceback

PROGRAM = ROOT / "tests" / "programs" / "graph_lines.py"
ACCOUNT_START, ACCOUNT_END = "--- torch's account ---", "--- end ---"
HEAD = re.compile(r"^\[(graph (\d+) (\S+) forward|backward of graph (\d+) (\S+))\] "
                  r"node (\d+)/(\d+) (\S+): (.*)$")
HIT = re.compile(r"^Breakpoint (\d+) at (\S+), hit (\d+)$")
SOURCE = PROGRAM.read_text().splitlines()
LINE_H = next(i for i, t in enumerate(SOURCE, 1) if t.strip() == "h = torch.relu(self.l1(x))")
LINE_OUT = next(i for i, t in enumerate(SOURCE, 1) if t.strip() == "out = self.l2(h) * 2")


class Account:
    """The nodes of each graph part, as the program read them from torch."""

    def __init__(self, run: Run) -> None:
        assert run.returncode == 0, run.stderr[-3000:]
        lines = run.stdout.splitlines()
        start, end = lines.index(ACCOUNT_START), lines.index(ACCOUNT_END)
        self.output = lines[:start]
        self.parts: dict[str, list[tuple[str, str, str]]] = {}   # part -> (name, op, file:line)
        part = ""
        for line in lines[start + 1:end]:
            kind, *rest = line.split(" ")
            if kind == "graph":
                part = rest[0]
                self.parts.setdefault(part, [])
            elif kind == "node":
                self.parts[part].append((rest[0], rest[1], rest[2]))

    def first_of(self, part: str, line: int) -> str:
        """torch's first stepped node of PROGRAM:line in that part."""
        return next(name for name, op, where in self.parts[part]
                    if op not in ("placeholder", "output") and where == f"{PROGRAM}:{line}")

    def stepped(self, part: str) -> list[str]:
        """The nodes of that part a stop can come before, in graph order."""
        return [n for n, op, _ in self.parts[part] if op != "placeholder"]

    def after(self, part: str, name: str) -> str:
        """The stepped node after `name` in that part."""
        names = self.stepped(part)
        return names[names.index(name) + 1]


def _stops(run: Run) -> list[tuple[str, tuple[str, ...] | None, str, str, list[str]]]:
    """(command, its breakpoint line's (number, where, hit) or None, part, node, lines)."""
    found = []
    for command, lines in _segments(run.transcript):
        head = next((HEAD.match(line) for line in lines if HEAD.match(line)), None)
        if head is None:
            continue
        hit = next((HIT.match(line) for line in lines if HIT.match(line)), None)
        part = "backward" if head[4] else "forward"
        found.append((command, hit.groups() if hit else None, part, head[8], lines))
    return found


def _run(args: list[str], commands: list[str], tmp: Path) -> Run:
    run = run_dyndbg([PROGRAM, *args], commands, tmp, env={"DYNDBG_TRACER": "settrace"})
    no_traceback(run)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def test_line_breakpoint_stops_in_forward_and_backward_graphs(tmp_path: Path) -> None:
    """aot_eager: LINE_OUT's locations are graph 1's forward and its backward.
    Its first hit (step 0's forward) is ignored; then it stops in step 0's
    backward (`s` steps on node by node, `c` goes on), in step 1's forward;
    with its backward location disabled, in step 2's forward and in the
    account's forward, not in their backwards. Breakpoint 2 (LINE_H, a
    condition on a node value that is false) never stops, its hits counted,
    including after a `c` at a stop earlier in the same graph run. `catch
    backward` (3) stops first in each backward; `c` there goes on to the
    line breakpoint's node in the same run."""
    account = Account(run_plain(PROGRAM, "aot_eager"))
    commands = [f"b graph_lines.py:{LINE_OUT}",
                f"b graph_lines.py:{LINE_H}, primals_3.sum() > 1e9",
                "ignore 1 1",
                "catch backward",   # 3: each backward's first node, before any line's
                "c",            # step 0's backward starts (its forward's hit ignored)
                "c",            # step 0's backward at LINE_OUT
                "s", "c",       # the next backward node; then step 1's forward
                "disable 1.2",
                "c", "c",       # step 1's backward starts; step 2's forward
                "b",
                "c", "c",       # step 2's backward starts; the account's forward
                "c"]
    run = _run(["aot_eager"], commands, tmp_path)
    lines = run.transcript.splitlines()
    setting = next(line for line in lines if line.startswith("Breakpoint 1 at "))
    assert re.fullmatch(rf"Breakpoint 1 at graph_lines.py:{LINE_OUT} \(resolved: in graph (\d+) "
                        r"aot_eager forward, backward of graph \1 aot_eager\)", setting), setting

    stops = _stops(run)
    forward, backward = account.first_of("forward", LINE_OUT), account.first_of("backward", LINE_OUT)
    starts = ("c", None, "backward", account.stepped("backward")[0])
    expected = [starts,
                ("c", ("1", f"graph_lines.py:{LINE_OUT}", "2"), "backward", backward),
                ("s", None, "backward", account.after("backward", backward)),
                ("c", ("1", f"graph_lines.py:{LINE_OUT}", "3"), "forward", forward),
                starts,
                ("c", ("1", f"graph_lines.py:{LINE_OUT}", "4"), "forward", forward),
                starts,
                ("c", ("1", f"graph_lines.py:{LINE_OUT}", "5"), "forward", forward)]
    assert [s[:4] for s in stops] == expected, run.transcript[-5000:]
    # each stop's user line is the line's own, as torch recorded it
    text = SOURCE[LINE_OUT - 1].strip()
    for command, hit, part, node, shown in [s for s in stops if s[1] is not None]:
        place = f"grad of graph_lines.py:{LINE_OUT}" if part == "backward" else \
            f"at graph_lines.py:{LINE_OUT}"
        assert any(line.strip().startswith(place) and line.strip().endswith(text)
                   for line in shown), shown
    assert "Error in condition" not in run.transcript

    listing = next(out for command, out in _segments(run.transcript) if command == "b")
    assert re.search(rf"^1\s+break\s+enabled\s+graph_lines.py:{LINE_OUT}\s.*hit 4 times$",
                     listing[1]), listing
    assert re.match(r"^1\.1\s+enabled\s+graph \d+ aot_eager forward\s+hit 3 times$",
                    listing[2]), listing
    assert re.match(r"^1\.2\s+disabled\s+backward of graph \d+ aot_eager\s+hit 1 time$",
                    listing[3]), listing
    # LINE_H: steps 0..2's forwards and the two backwards before the listing
    bp2 = next(line for line in listing if line.startswith("2 "))
    assert re.search(r"if primals_3.sum\(\) > 1e9\s+hit 5 times$", bp2), listing

    out = run.stdout.splitlines()
    assert out[:out.index(ACCOUNT_START)] == account.output


def test_line_breakpoint_pending_until_its_graph_compiles(tmp_path: Path) -> None:
    """eager, two graphs (a graph break between the layers): at the first
    stop only the first is compiled, so a breakpoint on LINE_OUT (in the
    second) is pending; it resolves when the second compiles and stops in
    it before the line's first node, in each of the three steps; `where`
    shows the graph above the generated frame that called it (the resume
    function)."""
    account = Account(run_plain(PROGRAM, "eager", "split"))
    run = _run(["eager", "split"], [f"b graph_lines.py:{LINE_OUT}", "c", "where", "c", "c", "c"],
               tmp_path)
    setting = next(line for line in run.transcript.splitlines()
                   if line.startswith("Breakpoint 1 at "))
    assert "(pending: " in setting, setting
    stops = _stops(run)
    first = account.first_of("forward", LINE_OUT)
    assert [s[:4] for s in stops] == [
        ("c", ("1", f"graph_lines.py:{LINE_OUT}", str(n)), "forward", first)
        for n in (1, 2, 3)], run.transcript[-4000:]
    where = next(out for command, out in _segments(run.transcript) if command == "where")
    assert re.match(r"^> \[graph \d+ eager forward\] node " + first + "$", where[-1]), where
    assert "torch_dynamo_resume_in_forward" in where[-2], where
    out = run.stdout.splitlines()
    assert out[:out.index(ACCOUNT_START)] == account.output


def test_step_after_a_line_breakpoint_goes_node_by_node(tmp_path: Path) -> None:
    """aot_eager's forward: at the stop of `b LINE_H`, `s` twice stops before
    the next two nodes of the graph (it once ran out of the graph, and the
    breakpoint stopped no more); `c` stops at it in the next step's forward
    (its backward location disabled)."""
    account = Account(run_plain(PROGRAM, "aot_eager"))
    run = _run(["aot_eager"], [f"b graph_lines.py:{LINE_H}", "disable 1.2", "c", "s", "s", "c",
                               "clear", "c"], tmp_path)
    first = account.first_of("forward", LINE_H)
    second = account.after("forward", first)
    hit = ("1", f"graph_lines.py:{LINE_H}")
    assert [s[:4] for s in _stops(run)] == [
        ("c", (*hit, "1"), "forward", first),
        ("s", None, "forward", second),
        ("s", None, "forward", account.after("forward", second)),
        ("c", (*hit, "2"), "forward", first)], run.transcript[-4000:]
    out = run.stdout.splitlines()
    assert out[:out.index(ACCOUNT_START)] == account.output
