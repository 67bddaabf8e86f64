"""`b FILE:LINE` on a line computed inside an inductor graph (issue 50): the
graph is a location of the breakpoint (`graph N inductor forward`), which
stops before the first step of the output code's `call` (a kernel) that
computes a node of the line; conditions (on what the output code holds),
`ignore`, `disable N.M` work per location and hits are counted; `s` there
goes on step by step; a pending breakpoint resolves when the graph is
compiled. Real CLI and a real DAP client on tests/programs/inductor_lines.py.

Checked against torch's own account, never against strings copied from one
release: the program prints, from the process that ran, dynamo's nodes with
their stack traces and users, and the output code modules inductor loaded
with their line maps. Which kernel computes a node is read here from those:
the `Source Nodes` comment inductor wrote above a kernel call, else the
line map's traces between the previous kernel and this one (the nodes whose
stack trace is one of them); a node no kernel names was fused into the
kernel of a node computed from it. The program's output is that of a plain
run.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from harness import ROOT, Run, run_dyndbg, run_plain
from output_code import call_steps
from transcript import graph_segments, no_traceback

PROGRAM = ROOT / "tests" / "programs" / "inductor_lines.py"
SOURCE = PROGRAM.read_text().splitlines()
LINE_MM = next(i for i, t in enumerate(SOURCE, 1) if t.strip() == "a = x @ w")
LINE_FUSED = next(i for i, t in enumerate(SOURCE, 1) if t.strip() == "b = torch.relu(a)")
LINE_SUM = next(i for i, t in enumerate(SOURCE, 1) if t.strip() == "return c.sum()")
NAME = PROGRAM.name
ENV = {"DYNDBG_TRACER": "settrace"}
HEAD = re.compile(r"^\[graph (\d+) inductor forward\] step (\d+)/(\d+) (.*)$")
HIT = re.compile(r"^Breakpoint (\d+) at (\S+), hit (\d+)$")


def _key(trace: str) -> str:
    """A stack trace less its line numbers and folders (inductor's FX graph
    cache ignores stack traces: a graph it loads keeps the line map of the
    compile that filled it, lines since moved or another checkout's paths)."""
    return re.sub(r'File "[^"]*/', 'File "', re.sub(r", line \d+,", ",", trace or ""))


class Kernel(NamedTuple):
    line: int                   # in the output code
    name: str
    statement: str
    named: tuple[str, ...]      # the nodes inductor records for it
    how: str                    # "comment" or "line map"


class Account:
    """torch's account of the graph of `body`, as the program read it."""

    def __init__(self, run: Run) -> None:
        assert run.returncode == 0, run.stderr[-3000:]
        lines = run.stdout.splitlines()
        data = json.loads(next(t for t in lines if t.startswith("account "))[len("account "):])
        self.output = [t for t in lines if not t.startswith("account ")]
        graphs, modules = data["graphs"], data["modules"]
        assert len(graphs) == len(modules) == 2, (len(graphs), len(modules))
        # graphs in graph order, modules in load order: each graph compiles before the next
        index = next(i for i, g in enumerate(graphs)
                     if any(n["where"].endswith(f"{NAME}:{LINE_MM}") for n in g["nodes"]))
        graph, module = graphs[index], modules[index]
        self.number = int(re.match(r"__compiled_fn_(\d+)", graph["global"])[1])
        self.nodes = {n["name"]: n for n in graph["nodes"]}
        self.file = module["file"]
        self.source = Path(self.file).read_text()
        self.kernels = self._kernels(self.source, module["linemap"])
        named = {n for k in self.kernels for n in k.named}
        assert named <= set(self.nodes), ("the output code names nodes this graph lacks",
                                          named - set(self.nodes))

    def _kernels(self, source: str, linemap: list) -> list[Kernel]:
        self.steps: list[int] = []      # lines of `call` a stop can come before, in order
        kernels: list[Kernel] = []
        for step in call_steps(source):
            self.steps.append(step.line)
            if not step.kernel:
                continue
            if step.comment is not None:
                named, how = step.comment, "comment"
            else:
                previous = kernels[-1].line if kernels else 0
                traces = {_key(t) for at, t in linemap if previous < at <= step.line}
                named = tuple(n for n, node in self.nodes.items()
                              if node["op"] not in ("placeholder", "output")
                              and _key(node["trace"]) in traces)
                how = "line map"
            kernels.append(Kernel(step.line, step.name, step.text, named, how))
        return kernels

    def line_nodes(self, line: int) -> list[str]:
        return [n for n, node in self.nodes.items() if node["op"] not in ("placeholder", "output")
                and node["where"].endswith(f"{NAME}:{line}")]

    def computing(self, node: str) -> list[tuple[Kernel, str]]:
        """The kernels computing `node`: naming it; else naming a node
        computed from it, reached through nodes no kernel names (with that node)."""
        named = [(k, "") for k in self.kernels if node in k.named]
        if named:
            return named
        found: list[tuple[Kernel, str]] = []
        queue, seen = list(self.nodes[node]["users"]), set()
        while queue:
            user = queue.pop(0)
            if user in seen or self.nodes[user]["op"] == "output":
                continue
            seen.add(user)
            kernels = [k for k in self.kernels if user in k.named]
            found += [(k, user) for k in kernels]
            if not kernels:
                queue += self.nodes[user]["users"]
        return sorted(found, key=lambda kv: kv[0].line)

    def first_kernel(self, line: int) -> Kernel:
        """Where the line's work first runs: the first kernel computing one of its nodes."""
        return min((k for n in self.line_nodes(line) for k, _ in self.computing(n)),
                   key=lambda k: k.line)


class Stop(NamedTuple):
    command: str
    hits: list[tuple[str, str, str]]     # (breakpoint, where, hit)
    head: re.Match
    code: str
    lines: list[str]



def _stops(run: Run) -> list[Stop]:
    out = []
    for command, lines in graph_segments(run.transcript):
        head = next((HEAD.match(t) for t in lines if HEAD.match(t)), None)
        if head is None:
            continue
        hits = [m.groups() for m in map(HIT.match, lines) if m]
        code = next(t[len("  code: "):] for t in lines if t.startswith("  code: "))
        out.append(Stop(command, hits, head, code, lines))
    return out


COMMANDS = [f"b {NAME}:{LINE_FUSED}",                         # 1: pending at the first stop
            f"b {NAME}:{LINE_MM} if l_x_.sum() > 1e9",         # 2: never true
            f"b {NAME}:{LINE_SUM} if a.abs().sum() >= 0",      # 3: always true (a: buf0's)
            "ignore 3 1",
            "c",            # step 0: breakpoint 1
            "s",            # the next step of `call`
            "c",            # step 1: breakpoints 1 and 3, the same kernel
            "disable 1.1",
            "b 3",          # an instruction index: of generated code, not stopped in any
            "c",            # step 2: breakpoint 3
            "b",
            "c"]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Account]:  # slow: inductor
    run = run_dyndbg([PROGRAM], COMMANDS, tmp_path_factory.mktemp("inductor_lines"), env=ENV)
    no_traceback(run)
    assert run.returncode == 0, run.stderr[-3000:]
    return run, Account(run)


@pytest.mark.slow
def test_a_pending_breakpoint_resolves_to_the_inductor_graph(session) -> None:
    """Set at the first stop (in `warm`'s code, `body` not compiled), each is
    pending; `body`'s graph, once compiled, is each one's location."""
    run, account = session
    lines = run.transcript.splitlines()
    for number in (1, 2, 3):
        setting = next(t for t in lines if t.startswith(f"Breakpoint {number} at "))
        assert "(pending: " in setting, setting
    listing = next(out for command, out in graph_segments(run.transcript) if command == "b")
    where = f"[resolved: in graph {account.number} inductor forward]"
    for number, line in ((1, LINE_FUSED), (2, LINE_MM), (3, LINE_SUM)):
        row = next(t for t in listing if t.startswith(f"{number} "))
        assert f"{NAME}:{line}  {where}" in row, listing


@pytest.mark.slow
def test_it_stops_before_the_first_kernel_computing_the_line(session) -> None:
    """LINE_FUSED's only node (relu) is named by no kernel: inductor fused it
    into the kernel its line map names for the sum (LINE_SUM), computed there
    for a node computed from it; the stop is before that kernel and says so.
    `s` goes to the next step of `call`; in the next run both breakpoints
    stop at that kernel, and with 1.1 disabled only 3 does."""
    run, account = session
    fused = account.line_nodes(LINE_FUSED)
    assert fused and not any(n in k.named for n in fused for k in account.kernels), \
        ("inductor names a node of the fused line now", fused, account.kernels)
    kernel = account.first_kernel(LINE_FUSED)
    assert kernel == account.first_kernel(LINE_SUM), "the fused line has a kernel of its own now"
    assert any(n in kernel.named for n in account.line_nodes(LINE_SUM))
    after = account.steps[account.steps.index(kernel.line) + 1]

    stops = _stops(run)
    where = lambda line: f"{NAME}:{line}"   # noqa: E731
    assert [(s.command, s.hits) for s in stops] == [
        ("c", [("1", where(LINE_FUSED), "1")]),
        ("s", []),
        ("c", [("1", where(LINE_FUSED), "2"), ("3", where(LINE_SUM), "2")]),
        ("c", [("3", where(LINE_SUM), "3")])], run.transcript[-5000:]
    text = account.source.splitlines()
    for stop in stops:
        assert int(stop.head[1]) == account.number, stop.head[0]
        assert int(stop.head[3]) == len(account.steps), stop.head[0]
    for stop in (stops[0], stops[2], stops[3]):
        assert stop.head[4].startswith(f"{kernel.name}: "), stop.head[0]
        assert stop.code == kernel.statement and int(stop.head[2]) == \
            account.steps.index(kernel.line) + 1, (stop.code, kernel)
        computes = next(t for t in stop.lines if t.startswith("  computes "))
        assert computes == f"  computes {', '.join(kernel.named)} (inductor's {kernel.how})"
    assert stops[1].code == text[after - 1].strip(), (stops[1].code, after)

    # what each stop says of its breakpoints' lines: the line's nodes the
    # kernel computes, a fused one with the node it was computed for
    for stop in (stops[0], stops[2]):
        said = next(t for t in stop.lines if t.startswith("  breakpoint 1's line "))
        shown = re.fullmatch(rf"  breakpoint 1's line {NAME}:{LINE_FUSED}: this kernel computes "
                             r"(\w+) \(fused in for (\w+), not materialized\)", said)
        assert shown is not None, said
        node, via = shown.groups()
        assert [node] == fused and (kernel, via) in account.computing(node), (said, kernel)
    said = next(t for t in stops[2].lines if t.startswith("  breakpoint 3's line "))
    assert said == f"  breakpoint 3's line {NAME}:{LINE_SUM}: this kernel computes " + \
        ", ".join(n for n in account.line_nodes(LINE_SUM) if n in kernel.named), said


@pytest.mark.slow
def test_conditions_ignore_and_disable_count_hits(session) -> None:
    """Breakpoint 2's condition reads an input by dynamo's name and is never
    true: hit in each of the three runs, never stopping. Breakpoint 3's reads
    the node `a` whose buffer an earlier kernel wrote: true, its first hit
    ignored. 1.1 disabled keeps its hits."""
    run, account = session
    assert "Error in condition" not in run.transcript
    refused = next(out for command, out in graph_segments(run.transcript) if command == "b 3")
    assert refused == ["*** INDEX and @OFFSET name an instruction of the generated code stopped "
                       "at: the program is not stopped in generated code"], refused
    (mm,) = {k for n in account.line_nodes(LINE_MM) for k, via in account.computing(n)}
    assert mm.line < account.first_kernel(LINE_SUM).line and "a" in mm.named
    listing = next(out for command, out in graph_segments(run.transcript) if command == "b")
    rows = {t.split()[0]: t for t in listing[1:]}
    assert re.search(r"hit 2 times$", rows["1"]) and re.match(
        rf"^1\.1\s+disabled\s+graph {account.number} inductor forward\s+hit 2 times$",
        rows["1.1"]), listing
    assert re.search(r"if l_x_.sum\(\) > 1e9\s+hit 3 times$", rows["2"]), listing
    assert re.search(r"if a.abs\(\).sum\(\) >= 0\s+hit 3 times$", rows["3"]), listing


@pytest.mark.slow
def test_the_program_runs_as_without_dyndbg(session) -> None:
    run, account = session
    plain = Account(run_plain(PROGRAM))
    assert account.output == plain.output and len(plain.output) == 3


def test_which_kernel_computes_a_line_and_what_a_condition_sees() -> None:
    """The pure mapping (dynamo/graphs/kernel_lines.py) on output code shaped
    as inductor writes it: an extern mm its comment names, then a fused C++
    kernel whose line map names only the last node; relu, named by neither,
    is computed by that kernel for the node computed from it. A condition
    sees the inputs, the buffers written and the nodes they hold, not a
    buffer only allocated."""
    from types import SimpleNamespace

    from dyndbg.dynamo.graphs import kernel_lines
    from dyndbg.dynamo.graphs.inductor_steps import OutputCodeGraph
    from dyndbg.dynamo.graphs.output_code import parse, with_provenance

    source = '''
cpp_fused_relu_sum_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r"""x""")
class Runner:
    def call(self, args):
        arg0_1, arg1_1 = args
        args.clear()
        buf0 = empty_strided_cpu((4, 5), (5, 1), torch.float32)
        # Topologically Sorted Source Nodes: [a], Original ATen: [aten.mm]
        extern_kernels.mm(arg0_1, arg1_1, out=buf0)
        buf1 = empty_strided_cpu((), (), torch.float32)
        cpp_fused_relu_sum_0(buf0, buf1)
        return (buf1, )
'''

    def node(name, op, line, users=()):
        trace = f'  File "/p/prog.py", line {line}, in f\n    {name}\n' if line else ""
        return SimpleNamespace(name=name, op=op, users=list(users),
                               meta={"stack_trace": trace, "example_value": None})

    total = node("total", "call_method", 7)
    relu = node("relu", "call_function", 6, [total])
    a = node("a", "call_function", 5, [relu])
    nodes = [node("l_x_", "placeholder", 5, [a]), node("l_w_", "placeholder", 5, [a]), a, relu,
             total, node("output", "output", 0)]
    parsed = parse(source)
    assert parsed is not None
    steps = with_provenance(parsed, source, [(11, "T")], {"T": ("total",)}, {n.name for n in nodes})
    graph = OutputCodeGraph("__compiled_fn_1", 1, "forward", "inductor", None, None, nodes,
                            steps=steps, inputs=parsed.inputs)
    mm, fused = [s for s in steps if s.kernel]
    matches = lambda f: f.endswith("prog.py")   # noqa: E731
    assert kernel_lines.computing_kernels(graph, "relu") == [(fused, "total")]
    assert kernel_lines.first_stop(graph, matches, 5).step == mm
    found = kernel_lines.first_stop(graph, matches, 6)
    assert found is not None and found.step == fused and found.place == ("/p/prog.py", 6)
    assert found.computes == (kernel_lines.Computes("relu", "total"),)
    assert kernel_lines.stop_at(graph, mm, matches, 6) is None
    assert kernel_lines.first_stop(graph, matches, 8) is None

    import torch
    held = {"arg0_1": torch.ones(4, 3), "arg1_1": torch.ones(3, 5), "buf0": torch.full((4, 5), 3.0),
            "buf1": torch.empty(())}
    names = kernel_lines.condition_names(graph, fused, held)     # buf1: allocated only
    assert set(names) == {"arg0_1", "l_x_", "arg1_1", "l_w_", "buf0", "a"}, set(names)
    assert names["a"] is held["buf0"] and names["l_x_"] is held["arg0_1"]
    # nodes are looked for only where the condition reads them
    assert "a" not in kernel_lines.condition_names(graph, fused, held, {"buf0", "sum"})
    names = kernel_lines.condition_names(graph, steps[-1], held)
    assert {"buf1", "total"} <= set(names) and "relu" not in names, set(names)


@pytest.fixture
def dap():
    from dap_session import adapter_session
    with adapter_session() as session:
        yield session


@pytest.mark.slow
def test_a_gutter_breakpoint_in_an_inductor_graph(dap) -> None:
    """setBreakpoints on LINE_FUSED at the entry stop: unverified until
    `body`'s graph is compiled (a "changed" event), then a stop reason
    "breakpoint" before the kernel computing it, the graph's frame at that
    line of the program; stepIn goes to the next step of `call`."""
    dap.start("launch", {"program": str(PROGRAM), "cwd": str(ROOT), "stopOnEntry": True})
    dap.stopped(reason="entry")
    set_ = dap.client.ok("setBreakpoints", {"source": {"path": str(PROGRAM)},
                                            "breakpoints": [{"line": LINE_FUSED}]})
    (pending,) = set_["breakpoints"]
    assert pending["verified"] is False, pending
    mark = dap.client.mark()
    dap.client.ok("continue", {"threadId": dap.thread})
    bound = dap.client.wait_event("breakpoint", lambda b: b["breakpoint"].get("id") == pending["id"])
    assert bound["body"]["breakpoint"]["verified"] is True, bound
    assert re.fullmatch(r"bound in graph \d+ inductor forward",
                        bound["body"]["breakpoint"]["message"]), bound
    stop = dap.stopped(after=mark, reason="breakpoint")
    head = HEAD.match(stop["description"])
    assert head, stop
    graph, caller = dap.frames()[:2]
    assert os.path.samefile(graph["source"]["path"], PROGRAM) and graph["line"] == LINE_FUSED, graph
    assert re.fullmatch(r"body \[\d+/\d+\]", caller["name"]), caller
    after = dap.step("stepIn")
    following = HEAD.match(after.get("description", ""))
    assert following and int(following[2]) == int(head[2]) + 1, after
    dap.client.ok("setBreakpoints", {"source": {"path": str(PROGRAM)}, "breakpoints": []})
    dap.client.ok("continue", {"threadId": dap.thread})
    dap.wait_end(0)
    account = Account(Run(dap.client.output("stdout"), "", 0, ""))
    assert head[4].startswith(account.first_kernel(LINE_FUSED).name + ": "), head[0]
    assert account.output == Account(run_plain(PROGRAM)).output
