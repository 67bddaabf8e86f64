"""Into the graph (issue 50, first slice): `s` at the call of a compiled graph
steps its FX nodes, in the real CLI, on tests/programs/into_graph.py.

Checked against torch's own account and against eager execution, never
against strings copied from one release:
- the nodes stopped at, in order, and each one's user line: the program
  prints, after its run, each node of dynamo's graph with the innermost
  frame of node.meta["stack_trace"] (read by the program itself);
- each node's value shown (`p NODE`, torch's repr at 10 decimals): the same
  model and input run eagerly in this process;
- the program's result: the same as a plain run (stepping changes nothing).

Each runs on every tracing mechanism this Python has: sys.settrace, and
sys.monitoring from 3.12 (its default), where the graph's code alone gets
events while it is entered (engine/tracing/monitoring_graphs.py).
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

from harness import ROOT, Run, run_dyndbg, run_plain
from transcript import graph_segments, no_traceback

PROGRAM = ROOT / "tests" / "programs" / "into_graph.py"
CORES = ["python", "c"]
MECHANISMS = ["settrace", "monitoring"] if hasattr(sys, "monitoring") else ["settrace"]
HEAD = re.compile(r"^\[graph (\d+) (\S+) forward\] node (\d+)/(\d+) (\S+): (.*)$")


class Account:
    """What the program printed of its own graph: (name, op, file, line) per node."""

    def __init__(self, run: Run) -> None:
        assert run.returncode == 0, run.stderr[-3000:]
        lines = run.stdout.splitlines()
        self.result = next(line for line in lines if line.startswith("result "))
        start, end = lines.index("--- torch's account ---"), lines.index("--- end ---")
        self.nodes: list[tuple[str, str, str, int]] = []
        for line in lines[start + 1:end]:
            _, name, op, where = line.split(" ", 3)
            path, _, number = where.rpartition(":")
            self.nodes.append((name, op, path, int(number) if number.isdigit() else -1))

    @property
    def stepped(self) -> list[tuple[str, str, str, int]]:
        return [n for n in self.nodes if n[1] not in ("placeholder", "output")]


def _eager_values() -> dict[str, object]:
    """Each node of the program's graph, computed eagerly on the same model
    and input (the program's make()), by dynamo's node names."""
    import torch
    spec = importlib.util.spec_from_file_location("into_graph_program", PROGRAM)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    model, x = module.make()
    with torch.no_grad():
        linear = model.l1(x)
        h = torch.relu(linear)
        linear_1 = model.l2(h)
        y = linear_1 * 2
        return {"linear": linear, "h": h, "linear_1": linear_1, "y": y, "sum_1": y.sum()}


def _numbers(text: str) -> list[float]:
    """The elements of a tensor's repr (`tensor([[1.5, -2.0], ...], grad_fn=...)`)."""
    body = text.split("tensor(", 1)[1]
    body = re.split(r",\s*(grad_fn|requires_grad|dtype)=", body)[0]
    return [float(v) for v in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+\.(?!\d)", body)]


# sys.monitoring's events for each eager graph's code, as the debugger's tool has them.
_MONITORING_EVENTS = ("p [__import__('sys').monitoring.get_local_events(__import__('sys')"
                      ".monitoring.DEBUGGER_ID, v._torchdynamo_orig_callable.__code__) "
                      "for k, v in globals().items() if k.startswith('__compiled_fn')]")

# Whether the debugger's tool has PY_START on globally (nonzero) or not (0).
_GLOBAL_PY_START = ("p __import__('sys').monitoring.get_events(__import__('sys').monitoring"
                    ".DEBUGGER_ID) & __import__('sys').monitoring.events.PY_START")


def _env(mechanism: str, core: str = "python") -> dict[str, str | None]:
    return {"DYNDBG_CORE": core, "DYNDBG_TRACER": mechanism}




@pytest.fixture(scope="module")
def account() -> Account:
    return Account(run_plain(PROGRAM, "eager"))


@pytest.fixture(scope="module", params=[(core, mechanism) for mechanism in MECHANISMS
                                        for core in CORES],
                ids=lambda param: f"{param[0]}-{param[1]}")
def stepped(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            account: Account) -> tuple[Run, list]:
    core, mechanism = request.param
    names = [n[0] for n in account.stepped]
    assert names, account.nodes
    commands = ["b __compiled_fn_*", "c", "s"]
    for name in names:          # at each next node, the one before has run
        commands += ["s", f"p {name}"]
    commands += ["locals", "s", "c"]
    run = run_dyndbg([PROGRAM, "eager"], commands, tmp_path_factory.mktemp("into_graph"),
                     env=_env(mechanism, core))
    no_traceback(run)
    if core == "c" and "compiled core" in run.transcript:
        pytest.skip("the compiled core is not built here")
    assert run.returncode == 0, run.stderr[-3000:]
    return run, graph_segments(run.transcript)


def test_eager_graph_stops_before_each_node_at_torchs_user_line(stepped, account: Account) -> None:
    run, segments = stepped
    heads = [(command, line) for command, lines in segments for line in lines if HEAD.match(line)]
    expected = account.stepped
    assert len(heads) == len(expected) + 1, run.transcript[-4000:]        # + the output node
    for (command, head), (name, op, path, number) in zip(heads, expected):
        match = HEAD.match(head)
        assert match is not None and command == "s"
        assert match[2] == "eager" and match[5] == name and match[6].startswith(op), head
        # the next line: the user's line, as torch's stack trace has it, and its source
        lines = next(lines for _, lines in segments if head in lines)
        place = lines[lines.index(head) + 1].strip()
        source = Path(path).read_text().splitlines()[number - 1].strip()
        assert place == f"at {os.path.basename(path)}:{number}: {source}", place
    last = HEAD.match(heads[-1][1])
    assert last is not None and last[5] == "output" and last[3] == last[4]


def test_each_value_shown_is_the_eager_value(stepped, account: Account) -> None:
    import torch
    run, segments = stepped
    eager = _eager_values()
    stepped_names = [n[0] for n in account.stepped]
    assert sorted(stepped_names) == sorted(eager), \
        f"the program's graph has other nodes now: {stepped_names}"
    shown = {command[2:]: lines for command, lines in segments if command.startswith("p ")}
    assert sorted(shown) == sorted(eager)
    for name, value in eager.items():
        text = " ".join(shown[name])
        assert text.startswith("tensor("), text
        numbers = torch.tensor(_numbers(text), dtype=torch.float64)
        expected = value.reshape(-1).double()   # type: ignore[attr-defined]
        assert numbers.numel() == expected.numel(), (name, text)
        assert torch.allclose(numbers, expected, rtol=0, atol=1e-9), (name, text)


def test_locals_holds_what_is_computed_and_not_freed(stepped, account: Account) -> None:
    run, segments = stepped
    lines = next(lines for command, lines in segments if command == "locals")
    names = [line.split(" = ")[0].strip() for line in lines]
    # at the output node, only its input is still held: FX freed the rest after their last use
    assert names == ["sum_1"], lines


def test_after_the_graph_the_next_stop_is_after_the_call(stepped, account: Account) -> None:
    run, segments = stepped
    commands = [command for command, _ in segments]
    after = segments[commands.index("locals") + 1]
    assert after[0] == "s"
    assert after[1][0].startswith("> forward ["), after[1]
    assert any(line.startswith("graph 1 returned 1 output") for line in after[1]), after[1]
    assert account.result in run.stdout            # the same result as the plain run


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_backend_with_no_way_in_is_stepped_over_in_one_line(mechanism: str, tmp_path: Path) -> None:
    """tests/programs/rewriting_backends.py: f's backend rewrites the graph
    (tanh becomes sigmoid) and returns gm.forward: the graph stepped is the
    one that runs, sigmoid; g's backend returns a function of its own: one
    line, and the step goes over the call."""
    program = ROOT / "tests" / "programs" / "rewriting_backends.py"
    plain = run_plain(program)
    assert plain.returncode == 0, plain.stderr[-2000:]
    commands = ["b __compiled_fn_*", "c", "s", "s", "s", "s", "c", "s", "c"]
    run = run_dyndbg(program, commands, tmp_path, env=_env(mechanism))
    no_traceback(run)
    heads = [line for line in run.transcript.splitlines() if HEAD.match(line)]
    assert len(heads) == 4 and all(h.startswith("[graph 1 tanh_to_sigmoid forward]") for h in heads), heads
    assert any(h.endswith(" torch.sigmoid") for h in heads) and \
        not any("tanh" in h.split(": ", 1)[1] for h in heads), heads
    notes = [line for line in run.transcript.splitlines() if "gives no way in" in line]
    assert notes == ["dyndbg: graph 3's backend (wrapped_call) gives no way in; stepping over"], \
        run.transcript[-3000:]
    after = graph_segments(run.transcript)[-2]
    assert after[0] == "s" and after[1][1].startswith("> g ["), after
    for line in plain.stdout.splitlines():
        if line.startswith(("f:", "g:")):
            assert line in run.stdout


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aot_eager_forward_steps_at_torchs_lines_then_r_returns(mechanism: str, core: str,
                                                                 tmp_path: Path) -> None:
    """aot_eager: AOT's forward graph (aten nodes) is the one stepped; each
    stop's user line is one of the lines of torch's account of the graph,
    and `r` runs the rest of it to the instruction after the call. Its
    GraphModule is lazy: its code is made as it first starts, here."""
    account = Account(run_plain(PROGRAM, "aot_eager"))
    places = {(os.path.basename(path), number) for _, _, path, number in account.stepped}
    commands = ["b __compiled_fn_*", "c", "s", "s", "s", "r", "c"]
    if mechanism == "monitoring":   # the lazy graph's global PY_START is gone after it
        commands.insert(-1, _GLOBAL_PY_START)
    run = run_dyndbg([PROGRAM, "aot_eager"], commands, tmp_path, env=_env(mechanism, core))
    no_traceback(run)
    if core == "c" and "compiled core" in run.transcript:
        pytest.skip("the compiled core is not built here")
    segments = graph_segments(run.transcript)
    heads = [lines for command, lines in segments if command == "s"
             and lines and HEAD.match(lines[0])]
    assert len(heads) == 3, run.transcript[-3000:]
    for lines in heads:
        match = HEAD.match(lines[0])
        assert match is not None and match[2] == "aot_eager"
        assert match[6].startswith("call_function torch.ops.aten."), lines[0]
        place = re.match(r"at (\S+):(\d+): ", lines[1].strip())
        assert place is not None and (place[1], int(place[2])) in places, lines[1]
    returned = next(lines for command, lines in segments if command == "r")
    assert returned[0].startswith("> forward ["), returned
    if mechanism == "monitoring":
        assert [lines for command, lines in segments if command == _GLOBAL_PY_START] == [["0"]]
    assert account.result in run.stdout


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_an_error_inside_a_graph_step_detaches_and_the_graph_runs_on(mechanism: str,
                                                                      tmp_path: Path) -> None:
    """An internal error in the graph's line event (DYNDBG_FAULT=graph, at the
    first one): said once, dyndbg detaches, and the graph and the program
    run on to the same result as a plain run."""
    account = Account(run_plain(PROGRAM, "aot_eager"))
    run = run_dyndbg([PROGRAM, "aot_eager"], ["b __compiled_fn_*", "c", "s", "s", "c"], tmp_path,
                     env={**_env(mechanism), "DYNDBG_FAULT": "graph"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr + run.transcript
    errors = [line for line in run.transcript.splitlines() if "internal error" in line]
    assert errors == ["*** dyndbg internal error in trace: RuntimeError: injected fault at graph "
                      "(DYNDBG_FAULT); detaching, the program continues without the debugger"], \
        run.transcript[-3000:]
    assert not any(HEAD.match(line) for line in run.transcript.splitlines())
    assert account.result in run.stdout and run.stdout.endswith("--- end ---\n")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_an_exception_inside_the_graph_ends_it_at_the_call(mechanism: str, tmp_path: Path) -> None:
    """tests/programs/graph_raises.py: the graph's indexing node raises on the
    second call. Stepped into, the stop after the node before is the
    exception at the graph's call in the generated code, and the program
    catches it as in a plain run. The graph is left as at a return: its
    third call runs unstepped to the breakpoint, its code without events
    (sys.monitoring)."""
    program = ROOT / "tests" / "programs" / "graph_raises.py"
    plain = run_plain(program)
    assert plain.returncode == 0 and "caught IndexError" in plain.stdout, plain.stderr[-2000:]
    commands = ["b __compiled_fn_*", "c", "c", "s", "s", "s", "s", "c"]
    if mechanism == "monitoring":
        commands.append(_MONITORING_EVENTS)
    run = run_dyndbg(program, commands + ["c"], tmp_path, env=_env(mechanism))
    no_traceback(run)
    assert (run.stdout, run.returncode) == (plain.stdout, 0)
    segments = graph_segments(run.transcript)
    heads = [HEAD.match(lines[0]) for command, lines in segments if command == "s" and lines]
    assert [m[5] if m else None for m in heads] == ["sin", "y", "getitem", None], \
        run.transcript[-3000:]
    raised = [lines for command, lines in segments if command == "s"][-1]
    assert raised[0].startswith("!! IndexError: "), raised
    assert any(re.match(r"> f \[0/0\]  instr \d+/\d+ @\d+  CALL ", line) for line in raised), raised
    third = [lines for command, lines in segments if command == "c"][2]
    assert any(line.startswith("Breakpoint 1 at __compiled_fn_*, hit 3") for line in third), third
    if mechanism == "monitoring":
        assert [lines for command, lines in segments if command == _MONITORING_EVENTS] == \
            [["[0]"]], run.transcript[-3000:]


@pytest.mark.skipif(not hasattr(sys, "monitoring"),
                    reason="sys.monitoring exists from Python 3.12 (3.11: settrace)")
def test_sys_monitoring_leaves_the_graphs_code_as_it_was(tmp_path: Path) -> None:
    """sys.monitoring sets events per code object: a graph's code has
    dyndbg's (the debugger's tool) only while it is entered. After `r`
    at graph 1's stop, and after `c` at the next graph's stop, the codes of
    both have none: the graph's next call (the loop's second) runs
    unstepped, to the breakpoint at the next graph call."""
    events = _MONITORING_EVENTS
    commands = ["b __compiled_fn_*", "c", "s", "s", "r", events, "c", "s", "s", "c", events,
                "c", "c"]
    run = run_dyndbg(ROOT / "samples" / "graph_break.py", commands, tmp_path,
                     env={"DYNDBG_TRACER": None})
    no_traceback(run)
    assert run.returncode == 0, run.stderr[-3000:]
    segments = graph_segments(run.transcript)
    assert [lines for command, lines in segments if command == events] == [["[0]"], ["[0, 0]"]], \
        run.transcript[-3000:]
    entered = [HEAD.match(lines[0]) for command, lines in segments if command == "s"]
    assert [m[5] if m else None for m in entered] == ["sin", "a", "mul", "cos"], \
        run.transcript[-3000:]
    continued = [lines for command, lines in segments if command == "c"][2]
    assert any(line.startswith("Breakpoint 1 at __compiled_fn_*, hit 3") for line in continued)
    assert "stepping over" not in run.transcript
