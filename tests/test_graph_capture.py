"""`graph capture N` (issue 23, item 5): the wrapper it puts in place of the graph
is never compiled by dynamo (the program's output, stderr and torch's counters are
those of a plain run, however often it is put in), and at a stop on the graph's
own call it keeps that call's inputs, for `graph run N`."""
from __future__ import annotations

import re
from pathlib import Path

from harness import Run, run_dyndbg, run_plain
from transcript import no_traceback, segments

CALLS = 10      # more than dynamo's recompile_limit (8): a wrapper compiled per capture hits it

PROGRAM = f'''
import torch
from torch._dynamo.utils import counters


@torch.compile(backend="eager")
def f(x, y):
    a = x.sin() + y
    print("graph break here")
    b = a * 2 + x.cos()
    return b.sum()


x = torch.arange(4, dtype=torch.float32)
y = torch.ones(4)
for i in range({CALLS}):
    print(f"call {{i}}: {{round(f(x, y).item(), 4)}}")
print("frames:", dict(counters["frames"]))
print("graph breaks:", sum(counters["graph_break"].values()))
print("recompiles:", dict(counters["recompiles"]))
print("unique graphs:", counters["stats"]["unique_graphs"])
print("graphs:", sorted(int(n.split("_")[4]) for n in globals() if n.startswith("__compiled_fn_")))
'''


def _program(tmp_path: Path) -> tuple[Path, Run, list[int]]:
    """The program, its plain run and its graphs' numbers (f's, then the resume
    function's: dyndbg's run prints the same list, its stdout is compared)."""
    program = tmp_path / "capture_program.py"
    program.write_text(PROGRAM)
    plain = run_plain(program)
    assert plain.returncode == 0, plain.stderr[-3000:]
    last = plain.stdout.splitlines()[-1]
    assert last.startswith("graphs: "), plain.stdout
    graphs = [int(n) for n in re.findall(r"\d+", last)]
    assert len(graphs) == 2, plain.stdout
    return program, plain, graphs


def _counted(stdout: str) -> list[str]:
    """The program's lines of torch's counters."""
    return [line for line in stdout.splitlines()
            if line.startswith(("frames:", "graph breaks:", "recompiles:", "unique graphs:"))]


def _reply(transcript: str, command: str, nth: int = 0) -> str:
    """What the `nth` run of `command` printed."""
    replies = [s.output for s in segments(transcript) if s.command == command]
    assert len(replies) > nth, (command, transcript[-3000:])
    return "\n".join(replies[nth])


def test_capture_is_never_compiled_by_dynamo(tmp_path: Path) -> None:
    """A capture put in before every call of f: each call's graph goes through the
    wrapper, and dynamo compiles nothing more than in a plain run."""
    program, plain, (graph, _) = _program(tmp_path)
    commands = ["b f"]
    for call in range(CALLS):
        if call == CALLS - 1:
            commands.append(f"graph run {graph}")         # the inputs the last capture kept
        commands += [f"graph capture {graph}", "c"]
    run = run_dyndbg(program, commands, tmp_path)
    no_traceback(run)
    assert _reply(run.transcript, f"graph capture {graph}", CALLS - 1).startswith(
        f"graph {graph}: the inputs of its next call will be kept"), run.transcript[-3000:]
    assert "same: every output agrees" in _reply(run.transcript, f"graph run {graph}")
    # Nothing more compiled, no graph break, no recompile, no warning: a plain run's.
    assert _counted(run.stdout) == _counted(plain.stdout)
    assert run.stdout == plain.stdout
    assert run.stderr == plain.stderr


def test_capture_at_the_graphs_own_call(tmp_path: Path) -> None:
    """Stopped at the CALL of graph N (already on the value stack), `graph capture N`
    keeps that call's inputs: `graph run N` after `n` compares outputs."""
    program, plain, (_, graph) = _program(tmp_path)
    run = run_dyndbg(program, [f"b __compiled_fn_{graph}", "c", f"graph capture {graph}", "n",
                               f"graph run {graph}"], tmp_path)
    no_traceback(run)
    at_call = _reply(run.transcript, "c")
    assert f"graph {graph} (__compiled_fn_{graph}_" in at_call and "with 2 inputs" in at_call
    assert _reply(run.transcript, f"graph capture {graph}") == (
        f"graph {graph}: kept the 2 inputs of the call at hand (then: graph run {graph}); "
        "its next call's will replace them")
    assert f"graph {graph} returned 1 output" in _reply(run.transcript, "n")
    ran = _reply(run.transcript, f"graph run {graph}").splitlines()
    assert ran[0].startswith(f"compiled graph {graph}: (tensor(")
    assert ran[-1].startswith("same: every output agrees with dynamo's graph"), ran
    assert run.stdout == plain.stdout
