"""Into an inductor graph (issue 50): `s` at the call of a graph inductor
compiled stops before each step of its output code's `call` (kernel calls,
allocations, reinterprets, the return), in the real CLI, on
tests/programs/into_graph.py run with `inductor`.

Checked against torch's account, read in this process from one compile of
the same model (a backend that keeps dynamo's GraphModule and hands it to
inductor's compile_fx, as `inductor` does; the subprocesses then load the
same output code from inductor's cache, so stepping compiles nothing more):
- the output code module torch loaded (PyCodeCache.modules) and its line
  map (PyCodeCache.linemaps): the kernels stopped at, in order; each
  kernel's nodes: those of inductor's `Source Nodes` comment above it, or,
  where it wrote none (C++ fused kernels), nodes whose stack trace is one of
  the line map's traces between the previous kernel and this one; each
  node's user line from its own `stack_trace`;
- each value shown (`p NODE` after the kernel holding it ran): the same
  model run eagerly in this process (torch.allclose);
- the program's result: the same as a plain run.
"""
from __future__ import annotations

import dis
import importlib.util
import os
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from harness import ROOT, Run, run_dyndbg, run_plain
from output_code import call_steps
from transcript import graph_segments, no_traceback

PROGRAM = ROOT / "tests" / "programs" / "into_graph.py"
ENV = {"DYNDBG_CORE": "python", "DYNDBG_TRACER": "settrace"}
HEAD = re.compile(r"^\[graph 1 inductor forward\] step (\d+)/(\d+) (.*)$")


def _key(trace: str | None) -> str:
    """A stack trace less its line numbers and folders: inductor's FX graph
    cache ignores stack traces, so a graph it loads keeps the line map of the
    compile that filled it (lines since moved, e.g. by an edit of this
    program's docstring, or another checkout's paths: this machine's clones
    share one cache)."""
    return re.sub(r'File "[^"]*/', 'File "', re.sub(r", line \d+,", ",", trace or ""))

# The tests that use `account` or `stepped` are slow: inductor compiles (one
# in this process, cached ones in the runs); the triton-shaped parse is not.


class Kernel(NamedTuple):
    line: int
    name: str
    nodes: tuple[str, ...] | None      # the comment's nodes; None where inductor wrote none
    traces: tuple[str, ...]            # the line map's traces since the previous kernel


class Account(NamedTuple):
    """torch's own account of the graph, read in this process."""

    module: object          # the output code module torch loaded
    source: str
    stops: list[int]        # lines of `call` the debugger should stop at
    kernels: list[Kernel]
    nodes: dict             # dynamo's nodes by name
    eager: dict             # each computing node's value, run eagerly


def _program():
    spec = importlib.util.spec_from_file_location("into_graph_inductor", PROGRAM)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def account() -> Account:  # slow: one inductor compile
    import torch
    import torch._dynamo
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.compile_fx import compile_fx

    program = _program()
    graphs: list = []

    def backend(gm, inputs):        # what `inductor` runs, keeping dynamo's GraphModule
        graphs.append(gm)
        return compile_fx(gm, inputs)

    before = {id(m) for m in PyCodeCache.modules}
    torch._dynamo.reset()
    model, x = program.make()
    torch.compile(model, backend=backend)(x)
    torch._dynamo.reset()
    loaded = [m for m in PyCodeCache.modules if id(m) not in before and hasattr(m, "call")]
    assert len(graphs) == 1 and len(loaded) == 1, (graphs, loaded)
    module = loaded[0]
    source = Path(module.__file__).read_text()
    lines, traces = PyCodeCache.linemaps.get(module.__file__) or ((), ())
    linemap = list(zip(lines, traces))
    stops: list[int] = []
    kernels: list[Kernel] = []
    for step in call_steps(source):
        stops.append(step.line)
        if step.kernel:
            previous = kernels[-1].line if kernels else 0
            kernels.append(Kernel(step.line, step.name, step.comment,
                                  tuple(_key(t) for at, t in linemap if previous < at <= step.line)))
    stops.sort()
    nodes = {n.name: n for n in graphs[0].graph.nodes}
    with torch.no_grad():
        linear = model.l1(x)
        h = torch.relu(linear)
        linear_1 = model.l2(h)
        y = linear_1 * 2
        eager = {"linear": linear, "h": h, "linear_1": linear_1, "y": y, "sum_1": y.sum()}
    computing = sorted(n for n, node in nodes.items() if node.op not in ("placeholder", "output"))
    assert computing == sorted(eager), f"the program's graph has other nodes now: {computing}"
    return Account(module, source, stops, kernels, nodes, eager)


def _user_line(node) -> str:
    """`into_graph.py:19`: the innermost frame of the node's stack trace."""
    frames = re.findall(r'File "([^"]+)", line (\d+)', node.meta.get("stack_trace") or "")
    return f"{os.path.basename(frames[-1][0])}:{frames[-1][1]}"


def _numbers(text: str) -> list[float]:
    body = text.split("tensor(", 1)[1]
    body = re.split(r",\s*(grad_fn|requires_grad|dtype)=", body)[0]
    return [float(v) for v in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+\.(?!\d)", body)]


@pytest.fixture(scope="module")
def stepped(account: Account, tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, list]:
    """One session: enter, then at each stop `p` the nodes of the kernel that
    just ran, and `p` a buffer before its kernel; `locals` and `l` at the return."""
    by_line = {k.line: k for k in account.kernels}
    commands = ["b __compiled_fn_*", "c", "s"]
    first_alloc = True
    for index, line in enumerate(account.stops):
        ran = by_line.get(account.stops[index - 1]) if index else None
        if ran is not None:
            commands += [f"p {n}" for n in _named(account, ran)]
        statement = account.source.splitlines()[line - 1].strip()
        if first_alloc and line in by_line and "out=" in statement:
            commands.append("p " + re.search(r"out=(\w+)", statement)[1])   # allocated, not written
            first_alloc = False
        if index == len(account.stops) - 1:
            commands += ["locals", "l"] + [f"p {n}" for n in account.eager if not _holder(account, n)]
        commands.append("s")
    commands += ["c"]
    run = run_dyndbg([PROGRAM, "inductor"], commands, tmp_path_factory.mktemp("inductor"), env=ENV)
    no_traceback(run)
    assert run.returncode == 0, run.stderr[-3000:]
    return run, graph_segments(run.transcript)


def _named(account: Account, kernel: Kernel) -> tuple[str, ...]:
    """The nodes torch's account gives a kernel: its comment's, else those
    whose stack trace is a line-map trace of its region (not claimed by a comment)."""
    if kernel.nodes is not None:
        return kernel.nodes
    claimed = {k.nodes[-1] for k in account.kernels if k.nodes}   # an extern kernel's output: its last
    traces = set(kernel.traces)
    following = account.kernels.index(kernel) + 1
    if following < len(account.kernels) and account.kernels[following].nodes and len(traces) > 1:
        # scheduler.enter_context enters the extern kernel's context (its last
        # node's trace) before the C++ group waiting before it is flushed
        traces.discard(_key(account.nodes[account.kernels[following].nodes[-1]].meta.get("stack_trace")))
    # a trace names its node only where one node (not an extern kernel's output) has it:
    # where several have it (a module's nodes carry their caller's line), the line map
    # says the line, not the node
    by_trace: dict[str, list[str]] = {}
    for name, node in account.nodes.items():
        key = _key(node.meta.get("stack_trace"))
        if node.op not in ("placeholder", "output") and key in traces and name not in claimed:
            by_trace.setdefault(key, []).append(name)
    return tuple(names[0] for names in by_trace.values() if len(names) == 1)


def _holder(account: Account, node: str) -> Kernel | None:
    """The kernel whose last node it is (so a buffer holds it), if any."""
    return next((k for k in account.kernels if _named(account, k)[-1:] == (node,)), None)


@pytest.mark.slow
def test_each_stop_is_a_step_of_call_and_kernels_are_torchs(stepped, account: Account) -> None:
    run, segments = stepped
    heads = [(lines[0]) for command, lines in segments if lines and HEAD.match(lines[0])]
    assert len(heads) == len(account.stops), run.transcript[-4000:]
    kernels = iter(account.kernels)
    lines_of = {lines[0]: lines for _, lines in segments if lines}
    for head, line in zip(heads, account.stops):
        match = HEAD.match(head)
        assert match is not None and int(match[2]) == len(account.stops)
        statement = account.source.splitlines()[line - 1].strip()
        assert f"  code: {statement}" in lines_of[head], (head, statement)
        if not any(k.line == line for k in account.kernels):
            continue
        kernel = next(kernels)
        assert match[3].startswith(f"{kernel.name}: "), (head, kernel)
        computes = next(t for t in lines_of[head] if t.startswith("  computes "))
        shown = re.match(r"  computes (.*) \(inductor's (comment|line map)\)$", computes)
        assert shown is not None, computes
        names = tuple(shown[1].split(", "))
        if kernel.nodes is not None:           # inductor's comment, exactly
            assert shown[2] == "comment" and names == kernel.nodes, (computes, kernel)
        else:                                  # its line map: each node's trace is one of the region's
            assert shown[2] == "line map" and names, computes
            for name in names:
                assert _key(account.nodes[name].meta["stack_trace"]) in kernel.traces, (name, kernel)
            assert names == _named(account, kernel), (names, kernel)
        expected = [_user_line(account.nodes[n]) for n in names]
        places = [re.match(r"  at (\S+): ", t)[1] for t in lines_of[head] if t.startswith("  at ")]
        assert places == list(dict.fromkeys(expected)), (places, expected)
    assert next(kernels, None) is None
    assert HEAD.match(heads[-1])[3] == "return: the graph returns"


@pytest.mark.slow
def test_values_after_each_kernel_are_the_eager_values(stepped, account: Account) -> None:
    import torch
    run, segments = stepped
    checked = 0
    for command, lines in segments:
        name = command[2:]
        if not command.startswith("p ") or name not in account.eager or not lines:
            continue
        if _holder(account, name) is None:
            continue
        assert re.match(rf"{name} is buf\d+ \(written by \S+\):$", lines[0]), lines
        text = " ".join(lines[1:])
        numbers = torch.tensor(_numbers(text), dtype=torch.float64)
        expected = account.eager[name].reshape(-1).double()
        assert numbers.numel() == expected.numel(), (name, text)
        assert torch.allclose(numbers, expected, rtol=0, atol=1e-6), (name, text)
        checked += 1
    assert checked >= 3, run.transcript[-3000:]


@pytest.mark.slow
def test_unwritten_buffer_and_fused_node_are_labelled(stepped, account: Account) -> None:
    run, segments = stepped
    outputs = {command: lines for command, lines in segments}
    unwritten = [c for c in outputs if c.startswith("p buf")]
    assert len(unwritten) == 1 and outputs[unwritten[0]] == [f"{unwritten[0][2:]}: allocated, not computed yet"]
    fused = [n for n in account.eager if _holder(account, n) is None]
    assert fused, "every node has a buffer: the program no longer fuses one"
    for name in fused:
        line = outputs[f"p {name}"][0]
        assert re.match(rf"{name}: fused into \S+(, which computes its user \S+)?, not materialized$", line), line
    listing = outputs["l"]
    assert listing[0] == f"{account.module.__file__}:"     # the code torch loaded: no other compile
    assert sum(t.startswith("->") for t in listing) == 1


@pytest.mark.slow
def test_locals_and_the_result_are_the_programs(stepped, account: Account) -> None:
    run, segments = stepped
    held = next(lines for command, lines in segments if command == "locals")
    names = [t.split(" = ")[0].strip() for t in held]
    returned = re.search(r"return \((.*)\)", account.source.splitlines()[account.stops[-1] - 1])[1]
    assert set(n.strip() for n in returned.split(",") if n.strip()) <= set(names), held
    plain = run_plain(PROGRAM, "inductor")
    assert plain.returncode == 0, plain.stderr[-2000:]
    result = next(t for t in plain.stdout.splitlines() if t.startswith("result "))
    assert result in run.stdout.splitlines()


@pytest.mark.slow
def test_parse_reads_the_real_output_code(account: Account) -> None:
    """The pure parsing (output_code.py) on the output code torch loaded: its
    steps are line starts of the real `call` code object (line events stop
    there), its kernels the module's own, its inputs what get_args() makes."""
    from dyndbg.dynamo.graphs.output_code import StepKind, parse
    parsed = parse(account.source)
    assert parsed is not None
    call = account.module.call
    code = getattr(call, "__func__", call).__code__
    starts = {line for _, line in dis.findlinestarts(code)}
    stops = [s.line for s in parsed.steps if s.stops]
    assert stops == account.stops and set(stops) <= starts
    for step in parsed.steps:
        if step.kind is StepKind.KERNEL:
            owner = account.module
            for part in step.kernel.split("."):
                owner = getattr(owner, part)
            assert callable(owner), step
    assert len(parsed.inputs) == len(account.module.get_args())


def test_parse_reads_a_triton_shaped_call() -> None:
    """GPU output code, shaped as torch's triton codegen writes it (read from
    codegen/triton.py and wrapper.py; no GPU here): kernels defined through
    async_compile.triton and called with `.run`, inside a device guard."""
    from dyndbg.dynamo.graphs.output_code import KernelKind, StepKind, parse, with_provenance
    source = '''
triton_poi_fused_relu_0 = async_compile.triton('triton_poi_fused_relu_0', """x""")
def call(args):
    arg0_1, = args
    args.clear()
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf0 = empty_strided_cuda((4, ), (1, ), torch.float32)
        # Topologically Sorted Source Nodes: [h], Original ATen: [aten.relu]
        stream0 = get_raw_stream(0)
        triton_poi_fused_relu_0.run(arg0_1, buf0, 4, stream=stream0)
        del arg0_1
    return (buf0, )
'''
    parsed = parse(source)
    assert parsed is not None and parsed.inputs == ("arg0_1",)
    kinds = [(s.kind, s.name) for s in parsed.steps]
    assert kinds == [(StepKind.ALLOC, "buf0"), (StepKind.KERNEL, "triton_poi_fused_relu_0"),
                     (StepKind.RETURN, "return")]
    kernel = with_provenance(parsed, source, [], {})[1]
    assert kernel.kernel_kind is KernelKind.TRITON and kernel.nodes == ("h",)
    assert kernel.reads == ("arg0_1", "buf0")


def test_stop_text_of_a_kernel_and_a_node_place() -> None:
    """The pure text (ui/text/kernel_steps.py): a kernel's head, the nodes and
    where inductor's record of them comes from, the buffers it touches;
    `p NODE` for a buffer, a fused node and one not computed yet."""
    from dyndbg.dynamo.graphs.inductor_steps import BufferState, Held, NodePlace, Where
    from dyndbg.dynamo.graphs.output_code import parse, with_provenance
    from dyndbg.ui.text import kernel_steps
    source = '''
cpp_fused_relu_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r"""x""")
class Runner:
    def call(self, args):
        arg0_1, = args
        args.clear()
        buf0 = empty_strided_cpu((4, ), (1, ), torch.float32)
        cpp_fused_relu_0(arg0_1, buf0)
        return (buf0, )
'''
    parsed = parse(source)
    assert parsed is not None
    steps = with_provenance(parsed, source, [(7, "T")], {"T": ("h",)})
    kernel = steps[1]
    assert kernel.writes == ("buf0",) and kernel.reads == ("arg0_1",) and kernel.nodes == ("h",)
    held = [Held("arg0_1", BufferState.INPUT, 1.5, None, "l_x_"),
            Held("buf0", BufferState.NOT_COMPUTED, None, None)]
    lines = kernel_steps.stop_lines("[graph 2 inductor forward]", kernel, 1, 3, [], held)
    assert lines == ["[graph 2 inductor forward] step 2/3 cpp_fused_relu_0: cpp kernel",
                     "  computes h (inductor's line map)",
                     "  code: cpp_fused_relu_0(arg0_1, buf0)",
                     "  in  arg0_1 = 1.5  (input l_x_)",
                     "  out buf0 = allocated, not computed yet"]
    assert kernel_steps.toolbar_text("[graph 2 inductor forward]", kernel, 1, 3) == \
        "graph 2 inductor forward | step 2/3 cpp_fused_relu_0"
    assert kernel_steps.place_lines("h", NodePlace(Where.BUFFER, kernel, "buf0", 7)) == \
        ("h is buf0 (written by cpp_fused_relu_0):", 7)
    assert kernel_steps.place_lines("y", NodePlace(Where.FUSED, kernel, via="h")) == \
        "y: fused into cpp_fused_relu_0, which computes its user h, not materialized"
    assert kernel_steps.place_lines("h", NodePlace(Where.NOT_YET, kernel)) == \
        "h: not computed yet (cpp_fused_relu_0 computes it)"


def test_a_line_map_trace_several_nodes_have_names_no_node() -> None:
    """A torch module's nodes all carry their caller's line (torch 2.13 keeps
    no frame of torch's own files in a stack trace): where the line map's
    trace for a kernel is several unclaimed nodes', it tells the line, not
    the node. The kernel names none of them, says the line, and `p` of one
    says its line only is known (measured on nn.TransformerEncoderLayer,
    whose kernels were each said to compute all of `layer(x)`'s nodes)."""
    from dyndbg.dynamo.graphs.inductor_steps import NodePlace, Where
    from dyndbg.dynamo.graphs.output_code import parse, with_provenance
    from dyndbg.ui.text import kernel_steps
    source = '''
cpp_fused_clone_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r"""x""")
cpp_fused_relu_1 = async_compile.cpp_pybinding(['const float*', 'float*'], r"""x""")
def call(args):
    arg0_1, = args
    buf0 = empty_strided_cpu((4, ), (1, ), torch.float32)
    cpp_fused_clone_0(arg0_1, buf0)
    buf1 = empty_strided_cpu((4, ), (1, ), torch.float32)
    cpp_fused_relu_1(buf0, buf1)
    return (buf1, )
'''
    parsed = parse(source)
    assert parsed is not None
    traces = {"LAYER": ("query", "attn", "relu"), "LOSS": ("loss",)}
    steps = with_provenance(parsed, source, [(7, "LAYER"), (9, "LAYER"), (9, "LOSS")], traces)
    first, second = [s for s in steps if s.kernel.startswith("cpp_")]
    assert (first.nodes, first.lines) == ((), ("LAYER",))
    assert (second.nodes, second.lines) == (("loss",), ("LAYER",))
    assert kernel_steps.computes_text(first, [("prog.py", 7)]) == \
        "computes nodes inductor does not name; lines its line map records for them:"
    assert kernel_steps.computes_text(second, [("prog.py", 8), ("prog.py", 7)]).startswith(
        "computes loss (inductor's line map), and other nodes of the lines below")
    assert kernel_steps.place_lines("relu", NodePlace(Where.LINE_ONLY, first)).startswith(
        "relu: inductor's line map records its line for cpp_fused_clone_0, not which")


@pytest.mark.slow
def test_the_compiled_core_steps_it_too(account: Account, tmp_path: Path) -> None:
    """The compiled core (its C call filter hands the watched `call` to the
    Python trace while a graph is entered): the same first stops."""
    run = run_dyndbg([PROGRAM, "inductor"], ["b __compiled_fn_*", "c", "s", "s", "s", "c"], tmp_path,
                     env={"DYNDBG_CORE": "c", "DYNDBG_TRACER": "settrace"})
    no_traceback(run)
    if "compiled core" in run.transcript:
        pytest.skip("the compiled core is not built here")
    assert run.returncode == 0, run.stderr[-3000:]
    heads = [line for line in run.transcript.splitlines() if HEAD.match(line)]
    statements = [account.source.splitlines()[line - 1].strip() for line in account.stops[:3]]
    codes = [line[len("  code: "):] for line in run.transcript.splitlines() if line.startswith("  code: ")]
    assert len(heads) == 3 and codes == statements, run.transcript[-3000:]


def test_parse_takes_an_aten_fallback_and_its_outputs() -> None:
    """A kernel inductor leaves to aten (`bufN = torch.ops.aten.X.default(...)`,
    returning several outputs read as `buf1 = buf0[0]`): a kernel step that
    defines its buffer, and an alias (no stop) whose buffer shares its state."""
    from dyndbg.dynamo.graphs.output_code import KernelKind, StepKind, parse
    source = '''
def call(args):
    arg0_1, = args
    buf0 = torch.ops.aten.native_layer_norm.default(arg0_1, [4], None, None, 1e-05)
    buf1 = buf0[0]
    return (buf1, )
'''
    parsed = parse(source)
    assert parsed is not None
    kernel, alias, returned = parsed.steps
    assert kernel.kind is StepKind.KERNEL and kernel.kernel_kind is KernelKind.ATEN
    assert kernel.writes == ("buf0",) and kernel.reads == ("arg0_1",)
    assert alias.kind is StepKind.ALIAS and not alias.stops and alias.source == "buf0"
    assert returned.kind is StepKind.RETURN and returned.reads == ("buf1",)


def test_an_extern_kernel_computes_only_the_last_node_its_comment_names() -> None:
    """Inductor's source-node comment on an extern kernel names the nodes of
    its inputs' kernels before its own (`# relu, x, x_1, linear` on the
    addmm of a conv net's fused relu and max-pool): `p relu` once said
    'not computed yet (extern_kernels.addmm computes it)' after relu's
    fused kernel had run."""
    from dyndbg.dynamo.graphs.inductor_steps import _computes
    from dyndbg.dynamo.graphs.output_code import CodeStep, KernelKind, StepKind

    addmm = CodeStep(line=185, kind=StepKind.KERNEL, text="extern_kernels.addmm(...)",
                     kernel="extern_kernels.addmm", kernel_kind=KernelKind.EXTERN,
                     nodes=("relu", "x", "x_1", "linear"), provenance="comment")
    assert _computes(addmm, "linear")
    assert not any(_computes(addmm, n) for n in ("relu", "x", "x_1"))
    fused = addmm._replace(kernel="cpp_fused_relu_0", kernel_kind=KernelKind.CPP,
                           nodes=("relu",), provenance="line map")
    assert _computes(fused, "relu")


def test_a_write_through_a_view_is_a_partial_write() -> None:
    """`out=reinterpret_tensor(buf5, ...)` writes a part of buf5 (a cat's
    slice): catch nan does not judge the whole buffer after it, whose other
    part may hold whatever the allocator left."""
    from dyndbg.dynamo.graphs.output_code import parse

    source = '''
def call(args):
    arg0_1, arg1_1 = args
    args.clear()
    buf5 = empty_strided_cpu((4, 8), (8, 1), torch.float32)
    extern_kernels.mm(arg0_1, arg1_1, out=reinterpret_tensor(buf5, (4, 4), (8, 1), 0))
    buf6 = empty_strided_cpu((4, 4), (4, 1), torch.float32)
    extern_kernels.mm(arg0_1, arg1_1, out=buf6)
    return (buf5, buf6, )
'''
    parsed = parse(source)
    assert parsed is not None
    first, second = [s for s in parsed.steps if s.kernel == "extern_kernels.mm"]
    assert first.partly == ("buf5",) and "buf5" in first.writes
    assert second.partly == () and second.writes == ("buf6",)


@pytest.mark.slow
def test_the_editors_disassembly_lists_the_output_code_steps(account: Account) -> None:
    """Through a real DAP client (the output code loaded from inductor's
    cache, as in `stepped`): at a stop inside the graph, the graph frame's
    instruction pointer is the step's row, and `disassemble` there lists
    the steps of `call` torch's module has, in order, each with its source
    line and the nodes inductor records for a kernel, at the user line of
    the first; granularity "instruction" steps one of them."""
    from dap_session import adapter_session
    from dyndbg.dap.addresses import parse_address

    text = account.source.splitlines()
    with adapter_session() as dap:
        dap.start("launch", {"program": str(PROGRAM), "cwd": str(ROOT), "args": ["inductor"],
                             "stopOnEntry": False},
                  function_breakpoints=[{"name": "__compiled_fn_*"}])
        dap.stopped(reason="function breakpoint")
        first = dap.step("stepIn")
        assert first["description"].startswith("[graph 1 inductor forward] step 1/"), first
        ip = dap.top()["instructionPointerReference"]
        assert parse_address(ip)[1] == 0, ip
        rows = dap.disassemble(ip, -5, len(account.stops) + 10)
        second = dap.step("next", "instruction")
        assert second["description"].startswith("[graph 1 inductor forward] step 2/"), second
        moved = dap.top()["instructionPointerReference"]
        assert int(moved, 0) == int(ip, 0) + 1, (ip, moved)
        dap.client.ok("continue", {"threadId": dap.thread})
        dap.wait_end(0)
    assert len(rows) == len(account.stops) + 10 and rows[5]["address"] == ip, rows
    listed = [r for r in rows if r.get("presentationHint") != "invalid"]
    assert len(listed) == len(account.stops), listed
    kernels = {k.line: k for k in account.kernels}
    place = None
    for row, line in zip(listed, account.stops):
        shown, _, names = row["instruction"].partition("  # ")
        assert shown.split(None, 1) == [str(line), text[line - 1].strip()], (row, line)
        if "location" in row:
            place = f"{os.path.basename(row['location']['path'])}:{row['line']}"
        if line not in kernels:
            assert not names, row
            continue
        nodes = _named(account, kernels[line])
        assert tuple(names.split(", ")) == nodes, (row, nodes)
        assert place == _user_line(account.nodes[nodes[0]]), (row, place)
