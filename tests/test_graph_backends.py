"""`graph` with custom backends (issue 48, items 4 and 6), on
tests/programs/rewriting_backends.py: a backend that rewrites dynamo's graph in
place (tanh becomes sigmoid) and one that returns a function of its own.

Checked against the program's own account: the names of the backend objects
it passed (their `__name__`, which torch.compile takes as the backend's name),
and torch's listing (`print_readable`) of the graph each backend was given and
of the graph it left, printed by the backends themselves. And `graph run`'s
inputs: the forms its usage shows, and one line for wrong ones.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import ROOT, Run, run_dyndbg, run_plain
from transcript import no_traceback, segments

PROGRAM = ROOT / "tests" / "programs" / "rewriting_backends.py"


class Plain:
    """What the program printed alone: its backends' names, the listings its
    backends printed, its graphs' numbers."""

    def __init__(self, run: Run) -> None:
        assert run.returncode == 0, run.stderr[-3000:]
        self.run = run
        lines = run.stdout.splitlines()
        self.backends = next(line for line in lines if line.startswith("backends: ")).split()[1:]
        last = lines[-1]
        assert last.startswith("graphs: "), run.stdout
        self.graphs = [int(n) for n in re.findall(r"\d+", last)]

    def listing(self, backend: str, when: str) -> list[str]:
        lines = self.run.stdout.splitlines()
        start = lines.index(f"--- {backend} {when} ---")
        return lines[start + 1:lines.index(f"--- end {backend} {when} ---")]


@pytest.fixture(scope="module")
def plain() -> Plain:
    return Plain(run_plain(PROGRAM))


COMMANDS = ["b __compiled_fn_*", "c",
            "graph", "graph --compiled", "graph --traced", "cache f", "graph bisect",
            "graph run 1 x y", "graph run 1 torch.ones(4) x*2", "graph run 1 x, (y + 1)",
            "graph run x y", "graph run 1 x", "graph run 1 x y x", "graph run 1 x (y",
            "graph run 1 x nope", "graph run 1 'a b' y", "graph --traced --compiled",
            "c", "graph", "graph 3 --compiled", "cache g", "graph run 3 y", "c"]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, plain: Plain) -> Run:
    assert plain.graphs == [1, 3], plain.graphs        # the numbers COMMANDS use
    run = run_dyndbg(PROGRAM, COMMANDS, tmp_path_factory.mktemp("graph_backends"))
    no_traceback(run)
    return run


def _replies(run: Run, command: str) -> list[list[str]]:
    found = [s.output for s in segments(run.transcript) if s.command == command]
    assert found, (command, run.transcript[-3000:])
    return found


def _listed(reply: list[str]) -> list[str]:
    """The graph `graph` listed: after its two header lines, trailing blanks off."""
    lines = reply[2:]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def test_graph_names_the_backend_the_program_passed(session: Run, plain: Plain) -> None:
    rewriting, wrapping = plain.backends
    first, second = _replies(session, "graph")
    assert re.fullmatch(rf"graph 1 \(__compiled_fn_1_\w+\), backend {rewriting}, "
                        r"2 inputs, 1 output", first[0]), first
    assert re.fullmatch(rf"graph 3 \(__compiled_fn_3_\w+\), backend {wrapping}, "
                        r"4 inputs, 1 output", second[0]), second
    # cache and graph bisect name it the same way
    assert f"backend {rewriting}  calls graph 1" in "\n".join(_replies(session, "cache f")[0])
    assert f"backend {wrapping}  calls graph 3" in "\n".join(_replies(session, "cache g")[0])
    assert f"graph 1 compiled by {rewriting}: " in _replies(session, "graph bisect")[0][-1]
    assert session.stdout == plain.run.stdout


def test_graph_lists_the_graph_as_traced_or_as_the_backend_left_it(session: Run,
                                                                   plain: Plain) -> None:
    rewriting, wrapping = plain.backends
    traced, unchanged = _replies(session, "graph")
    assert traced[1] == ("as dynamo traced it, before its backend; the graph the backend "
                         "left differs (graph 1 --compiled lists it)")
    assert _listed(traced) == plain.listing(rewriting, "given")
    assert _replies(session, "graph --traced")[0] == traced
    compiled = _replies(session, "graph --compiled")[0]
    assert compiled[0] == traced[0]
    assert compiled[1] == ("as the backend left it, which differs from dynamo's graph as "
                           "traced (graph 1 lists that)")
    assert _listed(compiled) == plain.listing(rewriting, "left")
    # a backend that left the graph as it was given: said so, and one listing
    assert unchanged[1] == "as dynamo traced it; the backend left it unchanged"
    assert _listed(unchanged) == plain.listing(wrapping, "given")
    also = _replies(session, "graph 3 --compiled")[0]
    assert also[1] == "as the backend left it, unchanged from dynamo's graph as traced"
    assert _listed(also) == _listed(unchanged)
    assert _replies(session, "graph --traced --compiled")[0] == [
        "*** usage: graph [N | NAME] [--traced | --compiled] [--output-code]"]


def _signature(listing: list[str]) -> list[tuple[str, str]]:
    """(name, type) of each input in torch's listing's `def forward(self, ...)`."""
    line = next(line for line in listing if line.strip().startswith("def forward(self"))
    return re.findall(r'(\w+): "([^"]+)"', line)


def test_graph_run_takes_the_inputs_its_usage_shows(session: Run, plain: Plain) -> None:
    value = re.search(r"^f: (\S+)$", plain.run.stdout, re.M)
    assert value is not None
    ran = _replies(session, "graph run 1 x y")[0]
    assert ran[0] == f"compiled graph 1: (tensor({value[1]}),)", ran   # the program's f(x, y)
    assert ran[-1].startswith("DIFFERENT: output 0: max abs difference"), ran
    for command in ("graph run 1 torch.ones(4) x*2", "graph run 1 x, (y + 1)",
                    "graph run x y"):
        reply = _replies(session, command)[0]
        assert reply[0].startswith("compiled graph 1: (tensor("), (command, reply)
        assert reply[-1].startswith("DIFFERENT: output 0: "), (command, reply)

    inputs = _signature(plain.listing(plain.backends[0], "given"))
    assert [n for n, _ in inputs] == ["L_x_", "L_y_"], inputs
    takes = "graph 1 takes 2 inputs: " + ", ".join(f"{n} {t}" for n, t in inputs)
    assert _replies(session, "graph run 1 x")[0] == [f"*** {takes} (1 given)"]
    assert _replies(session, "graph run 1 x y x")[0] == [f"*** {takes} (3 given)"]
    assert _replies(session, "graph run 1 x (y")[0] == ["*** unclosed '(' in 'x (y'"]
    assert _replies(session, "graph run 1 x nope")[0] == [
        "*** input 2 (nope): NameError: name 'nope' is not defined"]
    wrong = _replies(session, "graph run 1 'a b' y")[0]
    assert len(wrong) == 1 and wrong[0].startswith(
        "*** compiled graph 1 failed on these inputs: "), wrong
    names = [n for n, _ in _signature(plain.listing(plain.backends[1], "given"))]
    assert len(names) == 4, names
    assert re.fullmatch(r"\*\*\* graph 3 takes 4 inputs: "
                        + ", ".join(rf"{n} \S+" for n in names) + r" \(1 given\)",
                        _replies(session, "graph run 3 y")[0][0]), \
        _replies(session, "graph run 3 y")
