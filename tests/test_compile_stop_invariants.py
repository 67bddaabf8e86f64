"""The invariants of the stops while dynamo compiles, over every program of
the corpus and the samples (and, slow, a real model): with `--catch-trace '*'`
and `s` through the first STEPS instructions of each compile, at every stop
each command such a stop offers answers in words and raises nothing, `p NAME`
answers for each symbolic local as `locals` shows it, no stop shows a line
as `None`, and the program prints what it prints alone.

The programs run a few to a process (tests/programs/run_each.py): most of a
program's cost here is its interpreter's start."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compile_stops import COMPILE_TAG, RAISED, Dialog, Reply
from harness import ROOT, SAMPLES, run_plain

CORPUS = sorted((ROOT / "tests" / "corpus").glob("*.py"))
# Not run here: the two that start a debugger by themselves (test_stepping says
# why), the one that needs torchrun.
NOT_HERE = {"breakpoint_call.py", "torch_marker.py", "distributed_allreduce.py"}
PROGRAMS = CORPUS + sorted(p for p in SAMPLES.glob("*.py") if p.name not in NOT_HERE)
RUN_EACH = ROOT / "tests" / "programs" / "run_each.py"
GROUPS = 4
GROUPED = [PROGRAMS[i::GROUPS] for i in range(GROUPS)]
LOOK = ["stack", "locals", "graph", "guards", "where", "l"]
STEPS = 10           # `s` this many times in each compile, then `c`
PLACE = re.compile(r"\w+\.py:\d+ .*in \S+")
NO_LINE = re.compile(r":None\b|\bline None\b")


@dataclass
class Walk:
    """What the walk through a program's compiles saw."""

    stops: int = 0                                     # compile stops looked at
    compiles: Counter = field(default_factory=Counter)  # stops per compile id
    printed: int = 0                                   # `p NAME` answered
    problems: list[str] = field(default_factory=list)


def check_stop(walk: Walk, where: str, display: list[str]) -> None:
    for line in display:
        if NO_LINE.search(line) or RAISED.match(line):
            walk.problems.append(f"{where}: the stop shows {line!r}")


def check_answers(walk: Walk, where: str, reply: Reply, commands: list[str]) -> None:
    if [a.command for a in reply.answers] != commands:
        walk.problems.append(f"{where}: asked {commands}, answered {[a.command for a in reply.answers]}")
        return
    for answer in reply.answers:
        if not answer.compile_time:
            walk.problems.append(f"{where}: {answer.command!r} answered at another kind of stop")
        if not any(line.strip() for line in answer.lines):
            walk.problems.append(f"{where}: {answer.command!r} printed nothing")
        for line in answer.lines:
            if RAISED.match(line) or NO_LINE.search(line):
                walk.problems.append(f"{where}: {answer.command!r} printed {line!r}")


def symbolic_locals(lines: list[str]) -> dict[str, str]:
    """`locals`' answer: each name and the value as shown."""
    shown = {}
    for line in lines:
        if line.startswith("  ") and line.strip():
            name, _, value = line.strip().partition(" ")
            shown[name] = value.strip()
    return shown


def walk_compiles(script: Path, args: list[str], steps: int = STEPS) -> tuple[Walk, Dialog]:
    """Every compile stop of the first STEPS `s` of each compile looked
    at; `c` at the others and at the stops in generated code."""
    walk = Walk()
    dialog = Dialog(script, ["--catch-trace", "*"], args=args)
    reply = dialog.ask([])
    while reply is not None:
        display = reply.last_lines()
        if not reply.compile_time:
            reply = dialog.ask(["c"])
            continue
        tag = next((COMPILE_TAG.match(line) for line in display if COMPILE_TAG.match(line)), None)
        compile_id = tag.group(1) if tag else "?"
        walk.stops += 1
        walk.compiles[compile_id] += 1
        place = next((m.group() for line in display if (m := PLACE.search(line))), "?")
        where = f"[compile {compile_id}] stop {walk.compiles[compile_id]} at {place}"
        check_stop(walk, where, display)
        looked = dialog.ask(LOOK)
        if looked is None:
            walk.problems.append(f"{where}: the program ended while looking")
            break
        check_answers(walk, where, looked, LOOK)
        names = symbolic_locals(looked.answers[LOOK.index("locals")].lines) \
            if len(looked.answers) == len(LOOK) else {}
        # `.0`, a comprehension's argument, is no name an expression can use.
        printed = [name for name in names if name.isidentifier()]
        go = "s" if walk.compiles[compile_id] <= steps else "c"
        reply = dialog.ask([f"p {name}" for name in printed] + [go])
        if reply is None:
            break
        check_answers(walk, where, reply._replace(answers=reply.answers[:-1]),
                      [f"p {name}" for name in printed])
        for name, answer in zip(printed, reply.answers):
            walk.printed += 1
            if answer.lines != [names[name]]:
                walk.problems.append(f"{where}: p {name} gives {answer.lines}, locals "
                                     f"{names[name]!r}")
    return walk, dialog


def check_program(script: Path, *args: str, steps: int = STEPS) -> Walk:
    plain = run_plain(script, *args)
    walk, dialog = walk_compiles(script, list(args), steps)
    status, stdout, _ = dialog.finish()
    assert (status, stdout) == (plain.returncode, plain.stdout), \
        "\n".join(dialog.transcript[-40:])
    assert walk.stops > 0, "\n".join(dialog.transcript[-40:])
    assert not walk.problems, "\n".join(walk.problems[:20])
    return walk


@pytest.mark.parametrize("group", range(GROUPS))
def test_every_compile_time_stop_answers_every_command(group: int) -> None:
    programs = [str(p) for p in GROUPED[group]]
    walk = check_program(RUN_EACH, *programs)
    assert len(walk.compiles) >= len(programs)
    print(f"{len(programs)} programs: {walk.stops} stops in {len(walk.compiles)} compiles, "
          f"{walk.printed} locals printed")


def test_the_groups_hold_every_program() -> None:
    assert sorted(p for group in GROUPED for p in group) == sorted(PROGRAMS) and \
        len(PROGRAMS) > 50


@pytest.mark.slow
@pytest.mark.one_core
def test_every_compile_time_stop_of_a_real_model_answers_every_command() -> None:
    """transformers' GPT-2 (tests/programs/tiny_gpt2.py): a code base nobody here wrote."""
    pytest.importorskip("transformers")
    walk = check_program(ROOT / "tests" / "programs" / "tiny_gpt2.py", steps=4)
    assert len(walk.compiles) > 3
