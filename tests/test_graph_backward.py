"""`catch backward [N]` (issue 50): a stop when AOT autograd's compiled
backward of a graph starts inside `loss.backward()`, stepped node by node,
in the real CLI, on tests/programs/train_backward.py (aot_eager, training).

Checked against torch's own account and eager autograd, never against
strings copied from one release:
- the nodes stopped at, in order, and each one's user line: the program
  prints, after training, each backward node with the innermost frame of
  node.meta["stack_trace"] and its seq_nr, and the forward nodes' seq_nr
  (read by the program itself from the autograd graph);
- the gradients shown (`p NODE` at the backward's output, torch's repr at
  10 decimals): the same model and data run eagerly here, its `.grad`s;
- the program's output: the same as a plain run (stopping changes nothing).
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

from harness import ROOT, Run, run_dyndbg, run_plain
from test_into_graph import _numbers
from transcript import graph_segments as _segments, no_traceback

PROGRAM = ROOT / "tests" / "programs" / "train_backward.py"
CORES = ["python", "c"]
HEAD = re.compile(r"^\[backward of graph (\d+) (\S+)\] node (\d+)/(\d+) (\S+): (.*)$")
CAUGHT = re.compile(r"^Catchpoint (\d+) \(backward\), hit (\d+): backward of graph (\d+) starts$")
ACCOUNT_START, ACCOUNT_END = "--- torch's account ---", "--- end ---"


class Backward:
    """One compiled backward as the program read it from torch."""

    def __init__(self) -> None:
        self.nodes: list[tuple[str, str, str, int, int | None]] = []  # name, op, file, line, seq_nr
        self.outputs: list[str] = []
        self.forward_seq: dict[str, int | None] = {}     # forward node -> seq_nr

    @property
    def stepped(self) -> list[tuple[str, str, str, int, int | None]]:
        return [n for n in self.nodes if n[1] != "placeholder"]


class Account:
    def __init__(self, run: Run) -> None:
        assert run.returncode == 0, run.stderr[-3000:]
        lines = run.stdout.splitlines()
        start, end = lines.index(ACCOUNT_START), lines.index(ACCOUNT_END)
        self.output = lines[:start]          # losses and parameters
        self.backwards: list[Backward] = []
        for line in lines[start + 1:end]:
            kind, *rest = line.split(" ")
            if kind == "backward":
                self.backwards.append(Backward())
            elif kind == "node":
                name, op, where, seq = rest
                path, _, number = where.rpartition(":")
                self.backwards[-1].nodes.append((name, op, path, int(number) if number.isdigit()
                                                 else -1, None if seq == "None" else int(seq)))
            elif kind == "outputs":
                self.backwards[-1].outputs = rest
            elif kind == "forward":
                seq = None if rest[1] == "None" else int(rest[1])
                self.backwards[-1].forward_seq[rest[0]] = seq


def _program():
    spec = importlib.util.spec_from_file_location("train_backward_program", PROGRAM)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _eager_grads() -> list[tuple[str, list[float], tuple[int, ...]]]:
    """The first step's gradients of the same model and data, by eager autograd."""
    model, x, y = _program().make(False)
    loss = model(x, y)
    loss.backward()
    return [(name, p.grad.flatten().tolist(), tuple(p.grad.shape))
            for name, p in model.named_parameters()]


@pytest.fixture(scope="module")
def account() -> Account:
    return Account(run_plain(PROGRAM, "one"))


def _run(args: list[str], commands: list[str], tmp: Path, core: str = "python",
         tracer: str | None = None) -> Run:
    """On this Python's own mechanism (sys.monitoring on 3.12+), or `tracer`."""
    run = run_dyndbg([PROGRAM, *args], commands, tmp,
                     env={"DYNDBG_CORE": core, "DYNDBG_TRACER": tracer})
    no_traceback(run)
    if core == "c" and "compiled core" in run.transcript:
        pytest.skip("the compiled core is not built here")
    assert run.returncode == 0, run.stderr[-3000:]
    return run


@pytest.fixture(scope="module", params=CORES)
def caught(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           account: Account) -> tuple[Run, list]:
    (backward,) = account.backwards
    grads = [name for name in backward.outputs if name != "None"]
    assert grads, backward.outputs
    commands = ["catch backward", "c"]
    commands += ["s"] * (len(backward.stepped) - 1)       # to the output node's stop
    commands += [f"p {name}" for name in grads]
    commands += ["locals", "where", "c", "s", "r"]          # the second step's backward
    run = _run(["one"], commands, tmp_path_factory.mktemp("backward"), request.param)
    return run, _segments(run.transcript)


def test_catch_backward_stops_before_each_node_at_torchs_user_line(caught, account) -> None:
    run, segments = caught
    (backward,) = account.backwards
    caught_lines = [CAUGHT.match(line) for _, lines in segments for line in lines]
    caught_lines = [m for m in caught_lines if m is not None]
    # one stop per training step, each the start of graph 1's backward
    assert [(m[1], m[2], m[3]) for m in caught_lines] == [("1", "1", "1"), ("1", "2", "1")], \
        run.transcript[-4000:]
    heads = [(command, lines) for command, lines in segments
             for line in lines if HEAD.match(line)]
    first = [(c, lines) for c, lines in heads][:len(backward.stepped)]
    assert len(first) == len(backward.stepped), run.transcript[-4000:]
    for (command, lines), (name, op, path, number, seq) in zip(first, backward.stepped):
        head = next(line for line in lines if HEAD.match(line))
        match = HEAD.match(head)
        assert match is not None and match[1] == "1" and match[2] == "aot_eager"
        if op == "output":
            assert match[5] == "output" and match[3] == match[4]
            continue
        assert match[5] == name and match[6].startswith(op), head
        place = lines[lines.index(head) + 1].strip()
        source = Path(path).read_text().splitlines()[number - 1].strip()
        found = re.fullmatch(rf"grad of {re.escape(os.path.basename(path))}:{number}"
                             r"(?: \(forward node (\S+)\))?: (.*)", place)
        assert found is not None and found[2] == source, place
        # the forward node named is one torch links to it (the same seq_nr)
        assert found[1] is not None and backward.forward_seq.get(found[1]) == seq, place


def test_gradients_shown_are_eager_autogrades(caught, account) -> None:
    run, segments = caught
    (backward,) = account.backwards
    shown = {command[2:]: " ".join(lines) for command, lines in segments
             if command.startswith("p ")}
    names = [n for n in backward.outputs if n != "None"]
    assert sorted(shown) == sorted(names)
    eager = _eager_grads()
    matched: dict[str, str] = {}
    for param, values, _shape in eager:     # each parameter's gradient, shown once
        equal = [name for name, text in shown.items()
                 if len(_numbers(text)) == len(values) and
                 all(abs(a - b) <= 1e-6 * max(1.0, abs(b)) for a, b in zip(_numbers(text), values))]
        assert len(equal) == 1, (param, values, shown)
        matched[param] = equal[0]
    assert sorted(matched.values()) == sorted(names)
    local = next(lines for command, lines in segments if command == "locals")
    assert any(line.startswith(names[0]) for line in local), local


def test_where_names_the_users_backward_line(caught) -> None:
    run, segments = caught
    where = next(lines for command, lines in segments if command == "where")
    source = PROGRAM.read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if text.strip() == "loss.backward()")
    assert where[0].strip().startswith(f"main at {PROGRAM}:{line}"), where


def test_the_program_computes_what_a_plain_run_does(caught, account) -> None:
    run, _ = caught
    lines = run.stdout.splitlines()
    assert lines[:lines.index(ACCOUNT_START)] == account.output


def test_catch_backward_of_one_graph(tmp_path: Path) -> None:
    """Two graphs (a graph break): the backward of each runs in each step,
    the later graph's first; `catch backward N` stops in graph N's only;
    `ignore`, `disable` and `clear` work on it as on any catchpoint."""
    plain = Account(run_plain(PROGRAM, "split"))
    every = _run(["split"], ["catch backward", "c", "c", "c", "c"], tmp_path)
    numbers = [m[3] for m in map(CAUGHT.match, every.transcript.splitlines()) if m]
    assert len(numbers) == 4 and numbers[0] == numbers[2] != numbers[1] == numbers[3], numbers
    later, earlier = numbers[0], numbers[1]
    one = _run(["split"], [f"catch backward {earlier}", "ignore 1 1", "c", "info breakpoints",
                           "disable 1", "c"], tmp_path)
    caught = [m for m in map(CAUGHT.match, one.transcript.splitlines()) if m]
    assert [(m[2], m[3]) for m in caught] == [("2", earlier)], one.transcript[-3000:]
    table = one.transcript.split("info breakpoints", 1)[1]
    assert re.search(rf"1\s+catch\s+enabled\s+catch backward {earlier}\s+hit 2 times", table), table
    gone = _run(["split"], [f"catch backward {later}", "c", "clear 1", "c"], tmp_path)
    assert len([m for m in map(CAUGHT.match, gone.transcript.splitlines()) if m]) == 1
    for run in (every, one, gone):
        lines = run.stdout.splitlines()
        assert lines[:lines.index(ACCOUNT_START)] == plain.output


def test_catch_backward_set_while_dynamo_compiles(tmp_path: Path) -> None:
    """Set at a compile stop (the resume function's compile), with no stop
    in generated code after it: it stops in every backward from then on."""
    run = _run(["split"], ["catch trace", "c", "catch backward", "c", "c", "c", "c"], tmp_path)
    assert "(dyndbg compile) catch backward" in run.transcript
    caught = [m for m in map(CAUGHT.match, run.transcript.splitlines()) if m]
    assert [m[2] for m in caught] == ["1", "2", "3", "4"], run.transcript[-3000:]


def test_catch_backward_of_a_graph_not_there_and_help(tmp_path: Path, account: Account) -> None:
    run = _run(["one"], ["catch backward 99", "info breakpoints", "catch backward x",
                         "help catch", "c"], tmp_path)
    segments = dict(_segments(run.transcript))
    assert segments["catch backward 99"] == [
        "Catchpoint 1 (backward 99)",
        "dyndbg: no graph 99 yet; catchpoint 1 is pending until dynamo compiles it"]
    assert any(re.search(r"catch backward 99\s+\[pending: no graph 99 yet\]", line)
               for line in segments["info breakpoints"])
    assert segments["catch backward x"] == [
        "*** graph number must be a whole number, not 'x'"]
    help_text = " ".join(segments["help catch"])
    assert "backward [N]" in help_text and "pending" in help_text
    assert not [line for line in run.transcript.splitlines() if CAUGHT.match(line)]
    lines = run.stdout.splitlines()
    assert lines[:lines.index(ACCOUNT_START)] == account.output


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is the mechanism on 3.12+")
def test_catch_backward_on_settrace_where_sys_monitoring_is_the_default(
        tmp_path: Path, account: Account) -> None:
    # The other tests run on the default mechanism: here the other one.
    run = _run(["one"], ["catch backward", "c", "s", "c", "c"], tmp_path, tracer="settrace")
    caught = [line for line in run.transcript.splitlines() if CAUGHT.match(line)]
    assert len(caught) == 2, run.transcript[-3000:]     # one per backward() of the program
    lines = run.stdout.splitlines()
    assert lines[:lines.index(ACCOUNT_START)] == account.output


def test_the_backward_entry_is_torchs_compiled_function_backward() -> None:
    """dynamo/graphs/backward.py's reading of torch, in this process: the one
    code object watched is the CompiledFunction.backward autograd calls for
    a real aot_eager graph, and the graph it names holds that class."""
    import torch

    from dyndbg.dynamo.graphs import backward
    from dyndbg.dynamo.names import graph_number

    program = _program()
    sys.modules["train_backward_program"] = program   # where graph_of looks: loaded modules
    model, x, y = program.make(False)
    namespace: dict = {}
    compiled = torch.compile(model, backend="aot_eager")
    loss = compiled(x, y)
    cls = loss.grad_fn._forward_cls
    assert backward.backward_entry_code() == (backward.Entry.FOUND,
                                              vars(cls)["backward"].__func__.__code__)
    found = backward.graph_of(cls)
    assert found is not None and graph_number(found[0]) == found[1]
    holder = next(vars(m) for m in list(sys.modules.values())
                  if found[0] in getattr(m, "__dict__", namespace))
    assert backward.has_backward(holder[found[0]])
    graph = backward.backward_graph(cls, found[0], found[1], "aot_eager")
    assert graph.gm is None and graph.part == "backward"    # compiled at the first backward()
    loss.backward()
    graph = backward.backward_graph(cls, found[0], found[1], "aot_eager")
    for node in graph.nodes:            # each backward node: its forward node by seq_nr
        forward = graph.forward_node(node)
        if forward is not None:
            assert forward.meta["seq_nr"] == node.meta["seq_nr"]
    assert any(graph.forward_node(n) is not None for n in graph.nodes)


def test_a_mechanism_that_cannot_watch_says_so_once() -> None:
    """BackwardCatcher.sync on a mechanism whose watch_graph answers False
    (one that cannot watch a code): one line, once, and nothing watched; none at
    all while no enabled `catch backward` exists (nothing is asked of it)."""
    import collections

    from dyndbg.engine.breakpoints import BreakpointTable
    from dyndbg.engine.graph_backward import BackwardCatcher
    from dyndbg.engine.graph_stepping import GraphStepper
    from dyndbg.engine.stop import HeldStop
    from dyndbg.engine.targets import BackwardCatchTarget

    class Refusing:
        name = "sys.monitoring"
        events: collections.Counter = collections.Counter()
        asked = 0

        def watch_graph(self, code, events) -> bool:
            self.asked += 1
            return False

        def unwatch_graph(self, code) -> None:
            raise AssertionError("nothing was watched")

    import torch._dynamo   # AOT autograd's runtime wrappers loaded, as after a compile
    import torch._functorch._aot_autograd.runtime_wrappers  # noqa: F401

    tracer, table, held = Refusing(), BreakpointTable(), HeldStop()
    stepper = GraphStepper(lambda: tracer, None, held)  # type: ignore[arg-type, return-value]
    catcher = BackwardCatcher(lambda: tracer, table, stepper, held,  # type: ignore[arg-type, return-value]
                              lambda text: None, lambda name: None, lambda frame, expr: True)
    assert catcher.sync() == "" and tracer.asked == 0
    bp = table.add(BackwardCatchTarget(graph=None))
    said = catcher.sync()
    assert said.startswith("dyndbg: catch backward: ") and "sys.monitoring" in said
    assert tracer.asked == 1
    table.add(BackwardCatchTarget(graph=3))
    assert catcher.sync() == "" and tracer.asked == 2     # asked again, not said again
    bp.enabled = False
    table.changed()
    catcher.disarm()
