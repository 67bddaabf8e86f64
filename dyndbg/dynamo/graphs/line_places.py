"""Where a user line's work runs inside compiled graphs (issue 50: `b
FILE:LINE` inside a graph).

A graph is an FX GraphModule's code (stepping.GraphCode: eager, aot_eager's
forward and backward) or inductor's output code (inductor_steps.
OutputCodeGraph). A stop inside one is keyed (`stop_key`) by its FX node's
name, or by the output code line of its step; which kernel step computes a
line's nodes is kernel_lines.py's.

Every FX node keeps the user's stack that made it
(`node.meta["stack_trace"]`; its innermost user frame is
`lookup.node_frame`). A graph "holds" a line when one of its nodes' user
frame is that line; a breakpoint there stops before the first such node as
the graph runs (the graph stepper's code, graphs/stepping.py). AOT
autograd's backward nodes keep the forward's stack trace, so a line of the
forward is held by the backward too. Measured on torch 2.13:

- the forward: what `runnable_graph` steps (eager's GraphModule, aot_eager's
  forward `fx_g`); its code is made at its first call for AOT's lazy
  GraphModules (then `type(gm).forward.__code__`, `<eval_with_key>.N`);
- the backward: before the first `backward()`, AOT keeps the graph it will
  compile in `CompiledFunction._lazy_backward_info.bw_module`; what runs is
  a deep copy of it (the same node names and metas), compiled into
  `CompiledFunction.compiled_bw` at the first `backward()`.

Nothing here calls a graph or changes torch's objects: it reads them.
"""
from __future__ import annotations

import sys
import types
from typing import Callable, Iterable, Union

from dyndbg.dynamo.graphs import backward, kernel_lines
from dyndbg.dynamo.graphs.compiled_fx import compiled_backward
from dyndbg.dynamo.graphs.inductor_backward import BackwardOutputCode, account_of, save_account
from dyndbg.dynamo.graphs.inductor_steps import NoOutputCode, OutputCodeGraph
from dyndbg.dynamo.graphs.lookup import node_frame
from dyndbg.dynamo.graphs.output_code import CodeStep
from dyndbg.dynamo.graphs.stepping import (STEPPED_OPS, GraphCode, NoWayIn, SteppedGraph,
                                           runnable_graph)
from dyndbg.dynamo.names import GRAPH_NAME

FileMatches = Callable[[str], bool]
StopKey = Union[str, int]      # an FX node's name, or an output code step's line


def graph_globals(names: Iterable[str]) -> list[tuple[str, object]]:
    """(name, value) of the live `__compiled_fn_*` globals among `names`
    (those generated code calls), found in the loaded modules."""
    wanted = {n for n in names if GRAPH_NAME.fullmatch(n)}
    found: dict[str, object] = {}
    if not wanted:
        return []
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name in wanted - found.keys():
            if name in namespace:
                found[name] = namespace[name]
    return sorted(found.items(), key=lambda item: item[0])


def graph_parts(name: str, value: object, backend: str | None) -> list[SteppedGraph]:
    """The graphs that run for graph global `name`: its forward (an FX
    graph's code, or inductor's output code), and where AOT autograd
    compiled it for training, its backward: an FX graph's code (aot_eager)
    or inductor's output code (inductor_backward.BackwardOutputCode, read by
    lines: kernel_lines). Inductor's backward is compiled at the first
    backward(): until then its code is None (watched as None, as an FX
    backward's) and its nodes, with their stack traces, are kept now
    (save_account: AOT strips them as it caches the compile)."""
    try:
        forward = runnable_graph(name, value, backend)
    except NoWayIn:
        return []
    if isinstance(forward, GraphCode) and forward.code is None:
        forward.code = backward._forward_code(forward.gm)   # made at its first call
    parts: list[SteppedGraph] = [forward]
    try:
        cls = backward._walk(value, backward._is_function_class)
        if isinstance(cls, type):
            part = backward.backward_graph(cls, name, forward.number, backend)
            if isinstance(part, BackwardOutputCode):
                save_account(cls)
            parts.append(part)
    except (NoWayIn, Exception):  # noqa: BLE001 - a torch change: the forward only
        pass
    return parts


def loaded(graph: SteppedGraph) -> bool:
    """Whether the graph's code is read: an inductor backward's output code is
    read as its `call` starts (is_frame), or here where it has compiled
    meanwhile (a first backward() while nothing watched it)."""
    if not isinstance(graph, BackwardOutputCode) or graph.code is not None:
        return True
    if graph.cls is None:
        return False
    compiled = compiled_backward(vars(graph.cls).get("compiled_bw"))
    if compiled is None:
        return False
    try:
        graph.load(compiled)
    except (NoOutputCode, Exception):  # noqa: BLE001 - a torch change: read at its call
        return False
    return True


def traced_holds(graph: BackwardOutputCode, file_matches: FileMatches, line: int) -> bool:
    """Whether an inductor backward not compiled yet may compute FILE:LINE:
    a node of the graph AOT will compile (kept by save_account) has that
    user line. Its kernels, read when it compiles, say whether one does."""
    cls = graph.cls
    nodes = account_of(cls) if isinstance(cls, type) else []
    return first_node_of(nodes, file_matches, line) is not None


def line_nodes(graph: GraphCode) -> list:
    """The nodes whose user lines a graph holds: its own; for a backward not
    compiled yet, those of the graph AOT will compile (the same nodes)."""
    if graph.nodes:
        return graph.nodes
    cls = getattr(graph, "cls", None)
    info = vars(cls).get("_lazy_backward_info") if isinstance(cls, type) else None
    module = getattr(info, "bw_module", None)
    nodes = getattr(getattr(module, "graph", None), "nodes", None)
    return list(nodes) if nodes is not None else []


def first_node_of(nodes: list, file_matches: FileMatches, line: int) -> str | None:
    """The name of the first stepped node (in graph order) whose user line
    is FILE:LINE; None where the graph holds none of that line."""
    for node in nodes:
        if getattr(node, "op", None) not in STEPPED_OPS or node.op == "output":
            continue
        place = node_frame(node)
        if place is not None and place[1] == line and file_matches(place[0]):
            return str(node.name)
    return None


def code_of(graph: SteppedGraph) -> types.CodeType | None:
    """The graph's code object where torch has made it (None: lazy, not run yet)."""
    loaded(graph)
    if graph.code is None and isinstance(graph, GraphCode) and graph.gm is not None:
        graph.code = backward._forward_code(graph.gm)
    return graph.code


def first_stop(graph: SteppedGraph, file_matches: FileMatches, line: int) -> StopKey | None:
    """The key of the first stop (in the order the graph runs) where work of
    FILE:LINE runs: its first FX node, or the first output code step (a
    kernel) computing one of its nodes; None where the graph holds none."""
    if isinstance(graph, OutputCodeGraph):
        loaded(graph)
        found = kernel_lines.first_stop(graph, file_matches, line)
        return None if found is None else found.step.line
    return first_node_of(line_nodes(graph), file_matches, line)


def settled(graph: SteppedGraph) -> bool:
    """Whether what the graph runs is known for good: its own nodes (a
    backward's come when it compiles) and, for output code, its steps (an
    inductor backward's come at its compile too)."""
    return bool(graph.nodes) and (not isinstance(graph, OutputCodeGraph) or bool(graph.steps))


def stop_key(graph: SteppedGraph, node: object) -> StopKey | None:
    """The key of the stop before `node` (graph.node_at's answer at a line)."""
    if isinstance(graph, OutputCodeGraph):
        return node.line if isinstance(node, CodeStep) else None
    name = getattr(node, "name", None)
    return str(name) if name is not None else None


def stop_index(graph: SteppedGraph, key: StopKey) -> int:
    """Where the stop keyed `key` comes in the graph's run (-1: none)."""
    if isinstance(graph, OutputCodeGraph):
        return graph.index_of(graph.node_at(key if isinstance(key, int) else None))
    return graph.index_of(next((n for n in graph.nodes if getattr(n, "name", None) == key), None))
