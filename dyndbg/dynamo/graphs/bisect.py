"""`graph bisect`: the first node of a graph whose compiled value differs.

The reference is the graph as dynamo traced it (graphs/copies.py), run eagerly
on the call's inputs and again in float64 (graphs/node_values.py). The compiled
values come from the graph's own backend, called as dynamo calls it, on
copies of the kept graph made to return inner nodes:

1. one compile of the graph returning every node that computes a tensor:
   the first node, in the graph's order, whose value differs is the answer
   (each value it reads came before it, and agreed);
2. where none differs there, one compile of the graph as the program's is
   (its own outputs): if an output differs, the difference needs the whole
   graph's fusion, and compiles of prefixes of the graph, each returning one
   node, are bisected (as torch's minifier bisects) down to the first node
   whose value differs when it is the output;
3. otherwise no node differs.

None of this touches the program: the backend compiles copies (dynamo's
graph, its cache and compile ids are not involved), every run gets fresh
copies of the inputs, and the random number generators and torch's compile
counters are put back as they were.
"""
from __future__ import annotations

import contextlib
import copy
import time
from typing import Any, Callable, Iterator, NamedTuple, Sequence

from dyndbg.dynamo.graphs import node_values
from dyndbg.dynamo.backends import backend_name
from dyndbg.dynamo.graphs.copies import KeptGraph
from dyndbg.dynamo.graphs.node_values import Agreement

_COMPUTES = ("call_function", "call_method", "call_module")


class Verdict(NamedTuple):
    """A node whose compiled value differs, with what it was."""

    node: str                 # its name in dynamo's graph, `h_2`
    op: str                   # call_function, call_method, call_module
    target: str               # `torch.relu`, `add`, `L__self___fc1` (describe(): with op)
    line: str                 # `model.py:12`, the user's line that made it, or the
    #                           module it ran in (graphs.node_place); "" if neither
    agreement: Agreement
    eager: Any
    compiled: Any
    fp64: Any
    readers: tuple[str, ...]  # the nodes that read it

    def describe(self) -> str:
        """`call_function torch.relu`: the node's op and target."""
        return f"{self.op} {self.target}"

    def line_text(self) -> str:
        """The verdict line, as the script `--save` writes prints it too."""
        return node_values.verdict_line(self.node, self.describe(), self.line,
                                        self.agreement, self.eager, self.compiled)


class Bisection(NamedTuple):
    """What `graph bisect` found, and how."""

    graph: int
    backend: str              # its name, as `cache` gives it (backends.backend_name)
    first: Verdict | None     # None: no node differs
    how: str                  # in which compile the difference was seen
    nodes: int                # the nodes compared
    compiles: int
    seconds: float
    rtol: float
    atol: float
    fp64: bool
    outputs_agree: bool | None   # the graph compiled as the program's (None: not compiled)


class Reference(NamedTuple):
    """The kept graph's nodes run eagerly and in float64 on one call's inputs."""

    eager: dict[str, Any]
    fp64: dict[str, Any] | None


def reference(kept: KeptGraph, inputs: Sequence[Any], fp64: bool) -> Reference:
    with untouched():
        eager = node_values.record(kept.private_module(), node_values.clones(inputs))
    high = None
    if fp64:
        with untouched():
            high = node_values.record_fp64(kept.graph_module, inputs)
    return Reference(eager, high)


def bisect(number: int, kept: KeptGraph, inputs: Sequence[Any], rtol: float = 1e-4,
           atol: float = 1e-4, fp64: bool = True,
           line_of: Callable[[Any], str] = lambda node: "") -> Bisection:
    """Find the first node of graph `number` whose value compiled by its backend
    differs from the eager reference, on these inputs."""
    started = time.perf_counter()
    ref = reference(kept, inputs, fp64)
    nodes = {n.name: n for n in kept.graph_module.graph.nodes}
    candidates = [n for n in kept.graph_module.graph.nodes
                  if n.op in _COMPUTES and node_values.is_tensor(ref.eager.get(n.name))]
    compiles = 0

    def judge(name: str, value: Any) -> Agreement:
        return node_values.agreement(ref.eager[name], value,
                                     None if ref.fp64 is None else ref.fp64.get(name),
                                     rtol=rtol, atol=atol)

    def verdict(name: str, value: Any, agreed: Agreement) -> Verdict:
        # `value`: as compiled_values gives it, detached
        node = nodes[name]
        return Verdict(name, node.op, target_name(node), line_of(node), agreed,
                       ref.eager[name], value,
                       None if ref.fp64 is None else ref.fp64.get(name),
                       tuple(u.name for u in node.users if u.op != "output"))

    def done(first: Verdict | None, how: str, outputs_agree: bool | None) -> Bisection:
        return Bisection(number, backend_name(kept.backend), first, how, len(candidates),
                         compiles, time.perf_counter() - started, rtol, atol, fp64,
                         outputs_agree)

    # 1. every node at once
    names = [n.name for n in candidates]
    if names:
        values = compiled_values(kept, names, inputs)
        compiles += 1
        for name, value in zip(names, values):
            agreed = judge(name, value)
            if not agreed.agree:
                return done(verdict(name, value, agreed),
                            "in a compile of the graph returning every node's value", None)
    # 2. the graph as the program's
    outputs = output_names(kept.graph_module)
    whole = compiled_values(kept, None, inputs)
    compiles += 1
    differing = [(name, value) for name, value in zip(outputs, whole)
                 if name in ref.eager and not judge(name, value).agree]
    if not differing:
        return done(None, "", True)
    name, value = differing[0]
    upstream = _ancestors(nodes[name]) | {name}
    order = [n for n in names if n in upstream]
    if name not in order:
        agreed = judge(name, value)
        return done(verdict(name, value, agreed), "in the graph compiled as the program's "
                    "(an output that is not a computed tensor)", False)
    # the smallest k whose prefix differs, supposing a difference, once made, stays
    lo, hi = 0, order.index(name)
    found: tuple[str, Any] | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        (value,) = compiled_values(kept, [order[mid]], inputs)
        compiles += 1
        if judge(order[mid], value).agree:
            lo = mid + 1
        else:
            found, hi = (order[mid], value), mid - 1
    if found is None:
        value = differing[0][1]
        return done(verdict(name, value, judge(name, value)),
                    "in the graph compiled as the program's only: no compile of a part of "
                    "it differs", False)
    return done(verdict(found[0], found[1], judge(*found)),
                f"in a compile of the graph up to it (bisected over {len(order)} nodes; "
                "each value it reads agreed in a compile returning every node)", False)


def compiled_values(kept: KeptGraph, names: list[str] | None,
                    inputs: Sequence[Any]) -> list[Any]:
    """The values of nodes `names` (None: the graph's own outputs) computed by
    the kept graph's backend, in a compile of a copy returning them."""
    gm = subgraph(kept.private_module(), names)
    with untouched():
        compiled = kept.backend(gm, node_values.clones(inputs))
    with untouched():
        result = compiled(*node_values.clones(inputs))
    result = list(result) if isinstance(result, (tuple, list)) else [result]
    return [node_values.detached(v) for v in result]


def subgraph(part: Any, names: list[str] | None) -> Any:
    """`part` (a GraphModule of its own, changed) returning the nodes `names` as a
    tuple (None: its own outputs), with what they do not need removed."""
    import torch
    if names is None:
        return part
    graph = part.graph
    by_name = {n.name: n for n in graph.nodes}
    output = next(n for n in graph.nodes if n.op == "output")
    graph.erase_node(output)
    graph.output(tuple(by_name[name] for name in names))
    graph.eliminate_dead_code()
    graph.lint()
    return torch.fx.GraphModule(part, graph)


def output_names(gm: Any) -> list[str]:
    """The names of the nodes a graph returns, in order ("" for a constant)."""
    import torch.fx
    output = next(n for n in gm.graph.nodes if n.op == "output")
    result = output.args[0]
    items = result if isinstance(result, (tuple, list)) else [result]
    return [item.name if isinstance(item, torch.fx.Node) else "" for item in items]


def target_name(node: Any) -> str:
    """What a node calls, as people write it: `torch.relu`, `operator.add`,
    `torch.nn.functional.gelu`; a method's name; a submodule's path."""
    target = node.target
    if isinstance(target, str):
        return target
    try:
        from torch.fx.node import _get_qualified_name
        name = _get_qualified_name(target)
    except Exception:  # noqa: BLE001 - an odd callable: its own name
        return getattr(target, "__name__", None) or str(target)
    for private, public in (("_operator.", "operator."), ("torch._C._nn.", "torch.nn.functional."),
                            ("torch.functional.", "torch.")):
        if name.startswith(private):
            return public + name[len(private):]
    return name


def _ancestors(node: Any) -> set[str]:
    seen: set[str] = set()
    todo = list(node.all_input_nodes)
    while todo:
        current = todo.pop()
        if current.name not in seen:
            seen.add(current.name)
            todo.extend(current.all_input_nodes)
    return seen


@contextlib.contextmanager
def untouched() -> Iterator[None]:
    """Runs and compiles that leave no trace on the program: the random number
    generators, grad mode and torch's compile counters are as they were, and
    every run starts from the same random state (so a random op draws the
    same numbers eagerly and compiled, as with inductor's fallback_random)."""
    import torch
    from torch._dynamo.utils import counters
    saved_counters = copy.deepcopy(dict(counters))
    cpu = torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and \
        torch.cuda.is_initialized() else None
    grad = torch.is_grad_enabled()
    patches: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    inductor = __import__("sys").modules.get("torch._inductor.config")
    if inductor is not None:
        patches = inductor.patch(fallback_random=True)
    try:
        with patches:
            yield
    finally:
        torch.set_grad_enabled(grad)
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)
        counters.clear()
        counters.update(saved_counters)
