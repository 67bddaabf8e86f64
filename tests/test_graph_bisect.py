"""`graph bisect` (issue 38): the first FX node whose compiled value differs.

Checked against what is known independently of dyndbg: which node a backend
rewrote (the backend records it), the line of the program that made it
(read from the program's own source), torch's own judgement of the two
values (`torch._dynamo.utils.same` with the float64 reference), the compiled
value the rewrite must give (relu + 1). And that bisecting changes nothing:
the program's output, torch's compile counters, the cache entries' code and
the compiled graphs are those of a run without it.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import ROOT, child_env, run_dyndbg, run_plain
from transcript import no_traceback, segments

PROGRAMS = ROOT / "tests" / "programs"
sys.path.insert(0, str(PROGRAMS))

import wrong_ops  # noqa: E402  (tests/programs)

SAMPLE = ROOT / "samples" / "wrong_backend.py"


def _line_of(path: Path, text: str) -> int:
    """The number of the one line of `path` holding `text`."""
    found = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(found) == 1, (path, text, found)
    return found[0]


RELU_LINE = f"wrong_ops.py:{_line_of(PROGRAMS / 'wrong_ops.py', 'h = torch.relu(h)')}"


def _graph_number(namespace: dict) -> int:
    numbers = [int(n.split("_")[4]) for n in namespace if n.startswith("__compiled_fn_")]
    assert len(numbers) == 1, numbers
    return numbers[0]


def _program_state(function) -> tuple:
    """What bisecting must leave as it was: torch's compile counters, the cache
    entries' generated code, the compiled graphs' globals and the random state."""
    import torch
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    from torch._dynamo.utils import counters
    entries = _debug_get_cache_entry_list(function.__code__)
    return ({k: dict(v) for k, v in counters.items()},
            [e.code.co_code for e in entries],
            sorted(n for n in vars(wrong_ops) if n.startswith("__compiled_fn_")),
            torch.get_rng_state().clone().numpy().tobytes())


@pytest.fixture
def fresh():
    import dyndbg.cache  # noqa: F401  (keeps dynamo's graphs from its import on)
    _forget_graphs()
    wrong_ops.REWRITTEN.clear()
    yield
    _forget_graphs()


def _forget_graphs() -> None:
    """dynamo reset, and its graphs' globals gone from every module (reset leaves them)."""
    import torch
    torch._dynamo.reset()
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            for name in [n for n in list(namespace) if n.startswith("__compiled_fn_")]:
                del namespace[name]


def _compile_and_capture(backend, dynamic: bool, training: bool):
    """Compile wrong_ops.block, run it (with backward when training), capture
    the next call's inputs; (graph number, output of the captured call, f, inputs)."""
    import torch
    import dyndbg.cache as dc
    f = torch.compile(wrong_ops.block, backend=backend, dynamic=dynamic)
    args = wrong_ops.inputs(training)
    out = f(*args)
    if training:
        out.sum().backward()
    number = _graph_number(vars(wrong_ops))
    dc.graph_capture(number)
    out = f(*args)
    return number, out, f, args


@pytest.mark.parametrize("backend,dynamic,training", [
    ("wrong_relu", False, False),
    ("wrong_relu_aot", True, True),          # symbolic shapes; a training graph's forward
])
def test_bisect_names_the_node_a_backend_made_wrong(fresh, backend: str, dynamic: bool,
                                                    training: bool) -> None:
    import torch
    from torch._dynamo.utils import same
    import dyndbg.cache as dc
    number, out, f, args = _compile_and_capture(getattr(wrong_ops, backend), dynamic, training)
    if dynamic:
        assert any(isinstance(a, int) for a in dc.captured(number)), "no symbolic size input"
    before = _program_state(wrong_ops.block)
    found = dc.graph_bisect(number)
    assert _program_state(wrong_ops.block) == before
    first = found.first
    assert first is not None, found
    assert first.node == wrong_ops.REWRITTEN[0]
    assert (first.op, first.target, first.line) == ("call_function", "torch.relu", RELU_LINE)
    assert first.line_text().startswith(
        f"first differing node: {first.node} (call_function torch.relu) at {RELU_LINE}: max abs ")
    # torch's own check says they differ; the compiled value is the rewrite's
    assert not same(first.eager, first.compiled, first.fp64, tol=1e-4, equal_nan=True,
                    log_error=lambda *a, **k: None)
    assert torch.allclose(first.compiled, first.eager + 1)
    assert first.agreement.max_abs == pytest.approx(1.0, abs=1e-5)
    assert found.compiles == 1 and found.nodes >= 6
    # the program computes what it did
    assert torch.equal(f(*args), out)


def test_a_difference_only_the_whole_graph_shows_is_bisected(fresh) -> None:
    """No node differs in the compile returning every node, the graph's output
    does: compiles of prefixes, each returning one node, find the node."""
    import torch
    import dyndbg.cache as dc
    number, out, f, args = _compile_and_capture(wrong_ops.wrong_relu_when_fused, False, False)
    found = dc.graph_bisect(number)
    first = found.first
    assert first is not None and found.outputs_agree is False, found
    assert (first.node, first.line) == (wrong_ops.REWRITTEN[0], RELU_LINE)
    assert torch.allclose(first.compiled, first.eager + 1)
    assert found.how.startswith("in a compile of the graph up to it (bisected over ")
    assert 3 <= found.compiles <= 2 + found.nodes.bit_length(), found
    assert torch.equal(f(*args), out)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_correct_backends_give_no_node_differs(fresh, backend: str) -> None:
    import dyndbg.cache as dc
    number, _, _, _ = _compile_and_capture(backend, False, False)
    found = dc.graph_bisect(number)
    assert found.first is None and found.outputs_agree is True and found.compiles == 2, found


def test_bisect_leaves_the_tensors_it_is_given_as_they_were(fresh) -> None:
    """A training-mode BatchNorm's graph updates its buffers (inputs of the
    graph) in place: bisect's eager, float64 and compiled runs get copies of
    the inputs it is given (at a stop, the program's own tensors)."""
    import torch
    import dyndbg.cache as dc
    torch.manual_seed(0)
    model = wrong_ops.Normed()
    f = torch.compile(model, backend=wrong_ops.wrong_relu)
    x = torch.randn(6, 8)
    f(x)
    number = _graph_number(vars(wrong_ops))
    dc.graph_capture(number)
    f(x)
    buffers = {k: v.clone() for k, v in model.named_buffers()}
    given = dc.captured(number)
    before = [v.clone() if isinstance(v, torch.Tensor) else v for v in given]
    found = dc.graph_bisect(number, *given)
    assert all(torch.equal(v, buffers[k]) for k, v in model.named_buffers()), buffers
    assert all(torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
               for a, b in zip(given, before))
    assert found.first is not None and found.first.node == wrong_ops.REWRITTEN[0]


def test_a_node_of_torchs_own_module_is_placed_in_it(fresh) -> None:
    """Dynamo keeps no line for the code of torch's modules: the verdict names
    the module the node ran in, as the program built it (nn.Sequential's [1])."""
    import torch
    import dyndbg.cache as dc
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    f = torch.compile(net, backend=wrong_ops.wrong_relu)
    x = torch.randn(4, 8)
    f(x)
    (number,) = {int(n.split("_")[4]) for m in list(sys.modules.values())
                 for n in list(getattr(m, "__dict__", {})) if n.startswith("__compiled_fn_")}
    dc.graph_capture(number)
    f(x)
    first = dc.graph_bisect(number).first
    assert first is not None and first.node == wrong_ops.REWRITTEN[0]
    assert re.fullmatch(r"\S+\.1 \(ReLU\)", first.line), first.line


def test_graph_run_compares_with_dynamos_graph_not_the_rewritten_one(fresh) -> None:
    """Before: `graph run` ran the GraphModule the backend had rewritten, the
    compile against itself, and said `same`."""
    import dyndbg.cache as dc
    number, _, _, _ = _compile_and_capture(wrong_ops.wrong_relu, False, False)
    ran = dc.graph_run(number)
    assert ran.same is False and ran.difference.startswith("output 0: max abs difference"), ran


def test_graph_values_gives_one_nodes_three_values(fresh) -> None:
    import torch
    import dyndbg.cache as dc
    number, _, _, _ = _compile_and_capture(wrong_ops.wrong_relu, False, False)
    name = dc.graph_bisect(number).first.node
    shown = dc.graph_values(number, name)
    assert shown.fp64.dtype == torch.float64 and torch.allclose(shown.fp64.float(), shown.eager)
    assert torch.allclose(shown.compiled, shown.eager + 1) and not shown.agreement.agree
    with pytest.raises(dc.CacheError, match="has no computing node 'nope'"):
        dc.graph_values(number, "nope")


def test_saved_script_prints_the_same_verdict(fresh, tmp_path: Path) -> None:
    import dyndbg.cache as dc
    number, _, _, _ = _compile_and_capture(wrong_ops.wrong_relu, False, False)
    script = tmp_path / "repro.py"
    found = dc.graph_bisect(number, save=str(script))
    assert (tmp_path / "repro.pt").exists()
    env = child_env(extra={"PYTHONPATH": str(PROGRAMS)})
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip() == found.first.line_text()


# -- at the prompt and in the editor, on a program written as a user would --------------------

def _sample_gelu() -> tuple[str, str]:
    """(node name, user line) of the gelu in the sample's graph, from the graph
    dynamo gives a backend (in-process, before the sample's backend sees it)."""
    import runpy
    import torch
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        program = runpy.run_path(str(SAMPLE))
    torch._dynamo.reset()
    seen: list[tuple[str, str]] = []

    def recording(gm, example_inputs):
        from dyndbg.dynamo.graphs.lookup import node_line
        seen.extend((n.name, node_line(n)) for n in gm.graph.nodes
                    if n.target in (torch.nn.functional.gelu, torch._C._nn.gelu))
        return program["fast_gelu_backend"](gm, example_inputs)
    with torch.no_grad():
        torch.compile(program["model"], backend=recording)(program["x"])
    torch._dynamo.reset()
    assert len(seen) == 1, seen
    return seen[0]


def _reply(transcript: str, command: str) -> list[str]:
    replies = [s.output for s in segments(transcript) if s.command == command]
    assert replies, (command, transcript[-3000:])
    return replies[0]


def test_at_the_prompt_and_in_the_editor(tmp_path: Path) -> None:
    """At the graph's call: `graph bisect`, `graph values`, `graph run` on the
    graph called there; bad input gets one line; the program's output is a
    plain run's. The editor's debug console answers `graph bisect` the same."""
    name, line = _sample_gelu()
    assert line == f"wrong_backend.py:{_line_of(SAMPLE, 'torch.nn.functional.gelu(h)')}"
    plain = run_plain(SAMPLE)
    commands = ["graph run", "b __compiled_fn_*", "c", "graph bisect", f"graph values {name}",
                "graph run", "graph bisect --rtol", "graph values", "c"]
    run = run_dyndbg(SAMPLE, commands, tmp_path)
    no_traceback(run)
    assert run.stdout == plain.stdout
    assert _reply(run.transcript, "graph run")[0].startswith("*** usage: graph run [N] ")
    verdict = _reply(run.transcript, "graph bisect")
    assert verdict[0].startswith(f"first differing node: {name} (call_function "
                                 f"torch.nn.functional.gelu) at {line}: max abs "), verdict
    assert verdict[1].startswith("  eager:    Tensor f32[4, 64]"), verdict
    assert re.fullmatch(r"  read by: \w+", verdict[4]), verdict
    assert "1 compile," in verdict[5], verdict
    values = _reply(run.transcript, f"graph values {name}")
    assert values[0] == f"graph 1, node {name} (call_function torch.nn.functional.gelu) at {line}:"
    assert values[4].startswith("  differs: max abs "), values
    ran = [s.output for s in segments(run.transcript) if s.command == "graph run"][1]
    assert ran[-1].startswith("DIFFERENT: output 0: max abs difference"), ran
    assert _reply(run.transcript, "graph bisect --rtol") == [
        "*** --rtol needs a value: graph bisect [N] [--rtol R] [--atol A] [--no-fp64] "
        "[--save FILE]"]
    assert _reply(run.transcript, "graph values") == ["*** usage: graph values [N] NODE"]

    from dap_session import adapter_session
    with adapter_session() as dap:
        dap.launch(SAMPLE, stop_on_entry=True,
                   function_breakpoints=[{"name": "__compiled_fn_*"}])
        dap.stopped(reason="entry")
        mark = dap.client.mark()
        dap.client.ok("continue", {"threadId": dap.thread})
        dap.stopped(after=mark, reason="function breakpoint")
        answer = dap.repl("graph bisect", dap.top()["id"]).splitlines()
        assert answer[:5] == verdict[:5], answer
        dap.disconnect()
