"""What differs between torch 2.13, 2.14 and 2.15 (dyndbg/dynamo/versions.py), seen
through the CLI: the same commands must give the same kind of answer on each."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import ROOT, run_dyndbg, run_plain
from transcript import no_traceback, segments

PROGRAMS = ROOT / "tests" / "programs"


def _output(run, command: str) -> list[str]:  # type: ignore[no-untyped-def]
    found = [s.output for s in segments(run.transcript) if s.command == command]
    assert found, f"no {command!r} in the transcript:\n{run.transcript[-3000:]}"
    return found[0]


@pytest.mark.slow   # inductor compiles
def test_graph_output_code_of_an_inductor_training_call(tmp_path: Path) -> None:
    # SLOW: the one inductor test of this file (~30 s here). An input that requires
    # grad puts the graphs behind AOT's autograd Function, whose `apply` is a C
    # builtin from torch 2.14.
    script = PROGRAMS / "training.py"
    run = run_dyndbg([script, "inductor"], ["b graph 1", "c", "graph", "graph --output-code",
                                            "c"], tmp_path)
    no_traceback(run)
    assert run.stdout == run_plain(script, "inductor").stdout
    header = _output(run, "graph")[0]
    assert re.match(r"graph 1 \(__compiled_fn_1_\w+\), backend inductor, 2 inputs", header), header
    code = "\n".join(_output(run, "graph --output-code"))
    assert not code.startswith("***"), code[:500]
    assert re.search(r"^\s*def call\(self, args\):", code, re.M) or \
        re.search(r"^def call\(args\):", code, re.M), code[-3000:]


def _guards_of_0_0(run) -> list[str]:  # type: ignore[no-untyped-def]
    lines = _output(run, "guards all")
    return lines[lines.index("guards of [0/0], against this call's inputs:") + 1:]


def test_aliasing_relation_in_guards_and_guard_drop(tmp_path: Path) -> None:
    # f [0/0] was compiled for f(one, one, x); the stop is in [0/1], for f(one, other, x).
    script = PROGRAMS / "aliasing.py"
    plain = run_plain(script).stdout
    session = ["b f", "c", "guards all"]
    listing = _guards_of_0_0(run_dyndbg(script, session + ["c", "c"], tmp_path))
    guards = [line for line in listing if not line.strip().startswith("^")]
    # On every release: the relation's lines are evaluated (FAIL), with torch's reason
    # under the first. 2.13 lists one root lambda; 2.14+ a guard under each source.
    sides = [line for line in guards if "L['a'] is L['b']" in line or "(see above)" in line]
    assert sides and all(line.split()[0] == "FAIL" for line in sides), listing
    reason = listing.index(sides[0]) + 1
    assert listing[reason].strip() == "^ L['a'] is L['b']", listing

    relation = sides[0]
    number = relation.split()[1]
    run = run_dyndbg(script, session + [f"guard drop 0/0 {number}", "c", "c"], tmp_path)
    no_traceback(run)
    answer = _output(run, f"guard drop 0/0 {number}")
    if "LAMBDA_GUARD" in relation:
        # torch 2.13: the lambda sits on the root, which a copy of the tree cannot leave out.
        assert len(answer) == 1 and "checked on the root of the tree" in answer[0], answer
        assert run.stdout == plain
    else:
        assert answer[0].startswith(f"edit 1: guard drop 0/0 {number} (OBJECT_ALIASING"), answer
        assert not any("relation" in line for line in answer), answer
        # [0/0] now runs for different objects too: its x + 1.
        assert run.stdout == plain.replace("different again: [-1.0, -1.0]",
                                           "different again: [1.0, 1.0]"), run.stdout
