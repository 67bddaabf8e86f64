"""A compiled graph as it runs, node by node (issue 50, first slice).

What runs when generated code calls a `__compiled_fn_*` global is, for the
eager and aot_eager backends, an FX GraphModule's generated `forward`: plain
Python (`<eval_with_key>.N`) with one source line per FX node. Tracing line
events of that one code object steps the program's own graph: no
Interpreter, no recompile, no second run. This module knows torch's side of
it (measured on torch 2.13 and 2.15, /work/shared/research/into-the-graph.md):

- from the global to the GraphModule that runs and its code object
  (`runnable_graph`);
- from a line of that code to its FX node (`GraphCode.node_at`:
  `gm._lineno_map[lineno - gm._prologue_start]`, torch's own table);
- a node's user line (`lookup.node_frame`, from `node.meta["stack_trace"]`);
- which of the frame's locals are which node's value (`GraphCode.values`):
  FX names each node's variable after the node and frees it (`x = None`)
  after its last use.

Nothing here calls the graph or changes torch's objects.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Union

from dyndbg.dynamo.graphs.inductor_steps import NoOutputCode, OutputCodeGraph, inductor_graph
from dyndbg.dynamo.graphs.lookup import graph_module, node_frame
from dyndbg.dynamo.names import graph_number

# What the stepper reads of a node; the placeholders are the frame's arguments
# (copied to their node names on the code's first lines), not steps.
STEPPED_OPS = ("call_function", "call_method", "call_module", "get_attr", "output")


@dataclass
class GraphCode:
    """The code object that runs one compiled graph, and its nodes by line."""

    name: str                 # the `__compiled_fn_*` global
    number: int               # graph N, as `graph N` says it
    part: str                 # "forward", or "backward" (graphs/backward.py)
    backend: str              # the backend's name, "unknown" where not known
    gm: object = field(repr=False)           # the torch.fx.GraphModule whose code runs
    # its forward's code object; None where torch makes it at the graph's
    # first call (a _LazyGraphModule not run yet: AOT's graphs)
    code: types.CodeType | None = field(repr=False)
    nodes: list = field(default_factory=list, repr=False)

    def node_at(self, lineno: int | None) -> object | None:
        """The FX node the line `lineno` of `code` computes; None where the
        line is none of the nodes (or torch keeps no line table)."""
        if lineno is None:
            return None
        table = getattr(self.gm, "_lineno_map", None)
        start = getattr(self.gm, "_prologue_start", None)
        if not isinstance(table, dict) or not isinstance(start, int):
            return None
        index = table.get(lineno - start)
        if not isinstance(index, int) or not 0 <= index < len(self.nodes):
            return None
        return self.nodes[index]

    def is_frame(self, frame: types.FrameType) -> bool:
        """Whether `frame` runs this graph's code: its code object, or, before
        torch has made it, its GraphModule's generated forward (`self` is the
        GraphModule; FX names the code `<eval_with_key>.N`)."""
        code = frame.f_code
        if self.code is not None:
            return code is self.code
        return code.co_name == "forward" and code.co_filename.startswith("<eval_with_key>") \
            and frame.f_locals.get("self") is self.gm

    def stepped(self, node: object) -> bool:
        """Whether the stepper stops before this node."""
        return getattr(node, "op", None) in STEPPED_OPS

    def index_of(self, node: object) -> int:
        for i, n in enumerate(self.nodes):
            if n is node:
                return i
        return -1

    def values(self, frame_locals: dict) -> list[tuple[str, object]]:
        """(node name, value) for every node whose value the frame holds now,
        in graph order: computed and not yet freed (FX sets a variable to None
        after its last use; a node whose value is None looks freed too)."""
        out: list[tuple[str, object]] = []
        for node in self.nodes:
            name = str(getattr(node, "name", ""))
            if node.op == "output" or name not in frame_locals:
                continue
            value = frame_locals[name]
            if value is not None:
                out.append((name, value))
        return out


# A graph the stepper steps: FX nodes, or inductor's output code (inductor_steps.py)
SteppedGraph = Union[GraphCode, OutputCodeGraph]


class NoWayIn(Exception):
    """The graph's backend gives no code object to step (one clear line)."""


def runnable_graph(name: str, value: object, backend: str | None) -> SteppedGraph:
    """The GraphModule code that runs when the global `name` (holding
    `value`) is called. Raises NoWayIn saying why when there is none.

    eager: the global's `_torchdynamo_orig_callable` is the bound
    `gm.forward` made at compile time; its `__func__.__code__` runs.
    aot_eager forward (training): `CompiledFunction.compiled_fw` is
    `boxed_nop.<locals>.run`, whose `fx_g` cell is AOT's forward GraphModule.
    inductor: its output code's `call` (inductor_steps.OutputCodeGraph).
    """
    number = graph_number(name)
    if number is None or not callable(value):
        raise NoWayIn(f"{name} is not a compiled graph")
    label = f"graph {number}"
    runs: tuple[object, types.CodeType | None] | None
    try:
        runs = _eager_forward(value)
        if runs is None:
            runs = _aot_forward(name, value)
        if runs is None:
            inductor = _inductor(name, number, value, backend)
            if inductor is not None:
                return inductor
    except NoWayIn:
        raise
    except Exception as error:  # noqa: BLE001 - a torch change: said, then stepped over
        raise NoWayIn(f"{label}'s backend could not be read "
                      f"({type(error).__name__}: {error}); stepping over") from None
    if runs is None:
        raise NoWayIn(f"{label}'s backend ({backend or 'unknown'}) gives no way in; stepping over")
    gm, code = runs
    return GraphCode(name, number, "forward", backend or "unknown", gm, code, list(gm.graph.nodes))  # type: ignore[attr-defined]  # a torch.fx.GraphModule


def _inductor(name: str, number: int, value: object, backend: str | None) -> OutputCodeGraph | None:
    """inductor: its output code's `call`, step by step (inductor_steps.py)."""
    try:
        return inductor_graph(name, number, value, backend or "inductor", graph_module(name, value))
    except NoOutputCode as why:
        raise NoWayIn(f"{why}; stepping over") from None


def _is_graph_module(obj: object) -> bool:
    import torch.fx
    return isinstance(obj, torch.fx.GraphModule)


def _eager_forward(value: object) -> tuple[object, types.CodeType] | None:
    bound = getattr(value, "_torchdynamo_orig_callable", None)
    if isinstance(bound, types.MethodType) and _is_graph_module(bound.__self__) \
            and bound.__func__.__name__ == "forward":
        return bound.__self__, bound.__func__.__code__
    return None


def _aot_forward(name: str, value: object) -> tuple[object, types.CodeType | None] | None:
    """AOT's forward GraphModule, behind `CompiledFunction.compiled_fw`
    (`boxed_nop.<locals>.run`'s `fx_g` cell) or, under no_grad, behind
    `_inner_compiled_fn`. Found by a bounded walk along the wrappers."""
    from dyndbg.dynamo.graphs.lookup import _neighbours

    seen: set[int] = set()
    queue: list[object] = [value]
    while queue and len(seen) < 200:
        obj = queue.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, types.FunctionType) and obj.__name__ == "run" and \
                "fx_g" in obj.__code__.co_freevars:
            cell = obj.__closure__[obj.__code__.co_freevars.index("fx_g")]  # type: ignore[index]  # fx_g is a free variable: a closure
            gm = cell.cell_contents
            if _is_graph_module(gm) and gm is not graph_module(name, value):
                return gm, None   # lazy: its code is made at its first call
        if isinstance(obj, type):
            # only the forward: compiled_bw is the backward (not stepped yet)
            fw = vars(obj).get("compiled_fw")
            if fw is not None:
                queue.append(fw)
            continue
        queue.extend(_neighbours(obj))
    return None


@dataclass
class NodeStep:
    """What a stop before one node shows (pure data, for the renderer)."""

    name: str
    op: str
    target: str
    index: int            # among the graph's nodes
    count: int
    place: tuple[str, int] | None   # the user's (file, line), from the node's stack trace
    inputs: list[tuple[str, object]]   # (input node name, its value now; MISSING if not held)
    part: str = "forward"
    forward: str = ""     # backward: the forward node it differentiates (the same seq_nr)


MISSING = object()


def node_step(graph: GraphCode, node: object, frame_locals: dict) -> NodeStep:
    """The node about to run, its user line and its inputs' values now."""
    inputs = []
    for arg in getattr(node, "all_input_nodes", ()):
        inputs.append((arg.name, frame_locals.get(arg.name, MISSING)))
    forward = getattr(graph, "forward_node", None)     # a backward's (graphs/backward.py)
    fw_node = forward(node) if forward is not None else None
    return NodeStep(node.name, node.op, target_text(node.target),  # type: ignore[attr-defined]  # an FX node
                    graph.index_of(node), len(graph.nodes), node_frame(node), inputs,
                    graph.part, getattr(fw_node, "name", ""))


def target_text(target: object) -> str:
    """`torch.relu`, `operator.mul`, `sum` (a method), as FX would name it."""
    if isinstance(target, str):
        return target
    if type(target).__name__ in ("OpOverload", "OpOverloadPacket"):
        return f"torch.ops.{target}"           # torch.ops.aten.addmm.default
    qualname = getattr(target, "__qualname__", "")
    if isinstance(qualname, str) and qualname.startswith("_VariableFunctionsClass."):
        return f"torch.{qualname.rpartition('.')[2]}"   # torch.relu and the like
    module = getattr(target, "__module__", None) or ""
    qualname = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if qualname is None:
        return str(target)
    if module in ("_operator",):
        module = "operator"
    if module.startswith("torch._C._nn"):
        module = "torch._C._nn"
    return f"{module}.{qualname}" if module else str(qualname)
