"""`b FILE:LINE` in inductor's compiled backward (issue 50): the backward
of a graph whose kernels compute work of a forward line is a location of
the breakpoint (`backward of graph N inductor`), which stops before the
first step of its output code's `call` computing that work, each time the
backward runs; `s` goes on kernel by kernel; `disable N.M` and `ignore`
work per location. AOT's cache off: the backward is compiled lazily inside
the first backward(), so a breakpoint set before that lists the backward
as not compiled yet, and finds its kernels as its `call` starts. Real CLI
on tests/programs/train_inductor_backward.py (`lines` mode), one run.

Checked against torch's own account, printed by the same program, never
against strings copied from one release: the backward graph AOT traced
(each node's stack trace, and the forward node it was recomputed from,
read before the first backward()), and the backward output code module
inductor loaded with its line map. A kernel computes work of line L where
inductor's `Source Nodes` comment names, as the node it computes (an
extern kernel: its last), a node whose stack trace's user frame is L; a
kernel with no comment (C++), where its line map's traces since the
previous kernel have L (less the last, where an extern kernel follows:
that one's). The program's output is that of a plain run.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from harness import ROOT, TIMEOUT, Run, child_env, program_cache, run_dyndbg
from output_code import call_steps
from transcript import graph_segments, no_traceback

PROGRAM = ROOT / "tests" / "programs" / "train_inductor_backward.py"
SOURCE = PROGRAM.read_text().splitlines()
LINE_RELU = next(i for i, t in enumerate(SOURCE, 1) if t.strip() == "h = torch.relu(z)")
LINE_L1 = next(i for i, t in enumerate(SOURCE, 1) if t.strip() == "z = self.l1(x)")
NAME = PROGRAM.name
# AOT's cache off: the backward compiled at the first backward(); inductor's
# cache this program's own (harness.program_cache), its line map this program's
ENV = {"DYNDBG_TRACER": "settrace", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}
HEAD = re.compile(r"^\[(backward of graph 1 inductor|graph 1 inductor forward)\] "
                  r"step (\d+)/(\d+) (.*)$")
HIT = re.compile(r"^Breakpoint (\d+) at (\S+), hit (\d+)$")
BACKWARD = "backward of graph 1 inductor"

COMMANDS = [f"b {NAME}:{LINE_RELU}",     # 1: the forward compiled, its backward not yet
            f"b {NAME}:{LINE_L1} if buf3.abs().sum() >= 0",     # 2: a buffer written before
            "b",
            "disable 2.1",               # 2 stops in the backward only
            "c",                         # step 0: 1 in the forward
            "c",                         # the first of 1, 2 in the backward
            "s",                         # the next step of the backward's `call`
            "c",                         # the other
            "b",
            "ignore 1 2",                # step 1: 1 passes the forward and the backward
            "c",                         # 2 in step 1's backward
            "c"]


class Kernel(NamedTuple):
    line: int
    statement: str
    comment: tuple[str, ...] | None
    extern: bool


def _user_line(trace: str | None) -> int | None:
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace or "")
    return int(frames[-1][1]) if frames and frames[-1][0].endswith(NAME) else None


class Account:
    """torch's account of the backward, as the program printed it."""

    def __init__(self, run: Run) -> None:
        lines = run.stdout.splitlines()
        data = json.loads(next(t for t in lines if t.startswith("account "))[len("account "):])
        self.nodes: dict = data["nodes"]
        assert self.nodes, "AOT kept no traced backward graph (its cache on?)"
        self.aliases = {n["from"]: name for name, n in self.nodes.items() if n["from"]}
        (module,) = data["modules"]
        self.source = Path(module["file"]).read_text()
        self.linemap = [(at, t) for at, t in module["linemap"]]
        self.kernels: list[Kernel] = []
        self.steps: list[int] = []
        for step in call_steps(self.source):
            self.steps.append(step.line)
            if step.kernel:
                self.kernels.append(Kernel(step.line, step.text, step.comment,
                                           step.name.startswith("extern_kernels.")))

    def trace_of(self, name: str) -> str | None:
        node = self.nodes.get(name) or self.nodes.get(self.aliases.get(name, ""))
        return node["trace"] if node else None

    def computes(self, kernel: Kernel, line: int) -> tuple[str, ...] | None:
        """The nodes of `line` inductor's comment says the kernel computes
        (None: no comment naming a traced node; the line map speaks)."""
        if kernel.comment is None or not any(self.trace_of(n) for n in kernel.comment):
            return None
        computed = kernel.comment[-1:] if kernel.extern else kernel.comment
        return tuple(n for n in computed if _user_line(self.trace_of(n)) == line)

    def linemap_lines(self, kernel: Kernel) -> set[int | None]:
        """The lines of the line map's traces since the previous kernel call;
        a C++ kernel followed by a commented one leaves it its last entry
        (inductor enters the extern kernel's node before it flushes the C++
        kernel waiting, as inductor_backward._regions reads it)."""
        at = self.kernels.index(kernel)
        previous = self.kernels[at - 1].line if at else 0
        traces = [t for line, t in self.linemap if previous < line <= kernel.line]
        following = self.kernels[at + 1] if at + 1 < len(self.kernels) else None
        if kernel.comment is None and following is not None and following.comment \
                and len(traces) > 1:
            traces.pop()
        return {_user_line(t) for t in traces}

    def first(self, line: int) -> tuple[Kernel, tuple[str, ...] | None]:
        """The first kernel computing work of `line`, with the nodes named for it."""
        for kernel in self.kernels:
            named = self.computes(kernel, line)
            if named or (named is None and line in self.linemap_lines(kernel)):
                return kernel, named
        raise AssertionError(f"no backward kernel computes line {line}")



class Stop(NamedTuple):
    command: str
    where: str                  # the graph stopped in, as the head says
    index: int                  # the step, 1-based
    code: str
    hits: list[tuple[str, str, str]]
    lines: list[str]


def _stops(run: Run) -> list[Stop]:
    out = []
    for command, lines in graph_segments(run.transcript):
        head = next((m for m in map(HEAD.match, lines) if m), None)
        if head is None:
            continue
        code = next(t[len("  code: "):] for t in lines if t.startswith("  code: "))
        hits = [m.groups() for m in map(HIT.match, lines) if m]
        out.append(Stop(command, head[1], int(head[2]), code, hits, lines))
    return out


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Account, str]:
    env = {**ENV, "TORCHINDUCTOR_CACHE_DIR": str(program_cache(tmp_path_factory, PROGRAM.stem))}
    run = run_dyndbg([PROGRAM, "lines"], COMMANDS, tmp_path_factory.mktemp("bw_lines"), env=env)
    plain = subprocess.Popen([sys.executable, str(PROGRAM), "lines"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             env=child_env(None, env))
    out, err = plain.communicate(timeout=TIMEOUT)
    assert plain.returncode == 0, err[-3000:]
    no_traceback(run)
    assert run.returncode == 0, run.stderr[-3000:]
    return run, Account(run), out


@pytest.mark.slow
def test_the_backward_is_a_location_found_when_it_compiles(session) -> None:
    """Set before the first backward(), each breakpoint lists the backward as
    a location not compiled yet; once it ran, as `backward of graph 1 inductor`
    with its hits; a condition there sees the buffers written so far (`buf3`,
    read by the kernel stopped at, written by an earlier one); the program prints what a plain
    run prints."""
    run, account, plain = session
    assert run.stdout == plain
    listings = [out for command, out in graph_segments(run.transcript) if command == "b"]
    assert len(listings) == 2, listings
    for number in (1, 2):
        before = next(t for t in listings[0] if t.strip().startswith(f"{number}.2 "))
        assert f"{BACKWARD} (not compiled yet: it stops only if one of its kernels computes " \
               "the line, read at its first backward())" in before, listings[0]
        after = next(t for t in listings[1] if t.strip().startswith(f"{number}.2 "))
        assert re.search(rf"enabled\s+{BACKWARD}  hit 1 time$", after), listings[1]
    kernel, _ = account.first(LINE_L1)
    assert re.search(r"\bbuf3\b", kernel.statement) and any(
        re.search(r"\bbuf3\b", k.statement) for k in account.kernels if k.line < kernel.line), \
        ("the condition's buffer is not written before the kernel it stops at now", kernel)
    assert "*** Error in condition" not in run.transcript, run.transcript
    assert re.search(r"disabled\s+graph 1 inductor forward$",
                     next(t for t in listings[1] if t.strip().startswith("2.1 "))), listings[1]


@pytest.mark.slow
def test_it_stops_before_the_first_kernel_computing_the_line(session) -> None:
    """Each backward stop is before the first kernel inductor's records say
    computes work of its line; it says what of the line: the nodes the
    comment names, or that its line map records the line (no node claimed).
    `s` goes to the next step; `ignore` passes the next hits (forward and
    backward); `disable 2.1` leaves breakpoint 2 its backward location."""
    run, account, _ = session
    stops = _stops(run)
    by_command = [(s.command, s.where, [h[0] for h in s.hits]) for s in stops]
    expected = sorted([(LINE_RELU, "1"), (LINE_L1, "2")],
                      key=lambda lb: account.first(lb[0])[0].line)
    assert by_command == [("c", "graph 1 inductor forward", ["1"]),
                          ("c", BACKWARD, [expected[0][1]]),
                          ("s", BACKWARD, []),
                          ("c", BACKWARD, [expected[1][1]]),
                          ("c", BACKWARD, ["2"])], by_command
    assert stops[4].hits[0][2] == "2"       # 2.1 disabled: its forward passes uncounted
    for stop, (line, number) in zip((stops[1], stops[3], stops[4]), [*expected, (LINE_L1, "2")]):
        kernel, named = account.first(line)
        assert stop.code == kernel.statement.removesuffix(";"), (stop.code, kernel)
        assert stop.index == account.steps.index(kernel.line) + 1
        said = next(t for t in stop.lines if t.startswith(f"  breakpoint {number}'s line "))
        if named:
            assert said.endswith(f"{NAME}:{line}: this kernel computes {', '.join(named)}"), said
        else:
            assert said.endswith(f"{NAME}:{line}: one of the lines its line map records for "
                                 "this kernel (inductor names no node it computes)"), said
    after = account.steps[account.steps.index(account.first(expected[0][0])[0].line) + 1]
    assert stops[2].index == account.steps.index(after) + 1
