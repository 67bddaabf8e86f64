"""Where a user line's work runs inside compiled graphs (issue 50: `b
FILE:LINE` inside a graph).

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
from typing import Callable, Iterable

from dyndbg.dynamo.graphs import backward
from dyndbg.dynamo.graphs.lookup import node_frame
from dyndbg.dynamo.graphs.stepping import STEPPED_OPS, GraphCode, NoWayIn, runnable_graph
from dyndbg.dynamo.names import GRAPH_NAME

FileMatches = Callable[[str], bool]


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


def graph_parts(name: str, value: object, backend: str | None) -> list[GraphCode]:
    """The FX graphs that run for graph global `name`: its forward, and
    where AOT autograd compiled it for training, its backward (not stepped
    for backends that give no way in: inductor's output code has no FX
    node per line)."""
    try:
        forward = runnable_graph(name, value, backend)
    except NoWayIn:
        return []
    if not isinstance(forward, GraphCode):
        return []
    if forward.code is None:
        forward.code = backward._forward_code(forward.gm)   # made at its first call
    parts: list[GraphCode] = [forward]
    try:
        cls = backward._walk(value, backward._is_function_class)
        if isinstance(cls, type):
            part = backward.backward_graph(cls, name, forward.number, backend)
            if isinstance(part, GraphCode):     # not inductor's output code
                parts.append(part)
    except (NoWayIn, Exception):  # noqa: BLE001 - a torch change: the forward only
        pass
    return parts


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


def code_of(graph: GraphCode) -> types.CodeType | None:
    """The graph's code object where torch has made it (None: lazy, not run yet)."""
    if graph.code is None and graph.gm is not None:
        graph.code = backward._forward_code(graph.gm)
    return graph.code
