"""An inductor graph's compiled backward as it runs, step by step (issue 50:
`catch backward`, `catch nan`).

With inductor, AOT autograd's `CompiledFunction.compiled_bw` is inductor's
CompiledFxGraph for the backward graph (behind dynamo's DisableContext
wrapper), not a GraphModule: the backward is stepped as the forward is,
statement by statement of its output code's `call` (inductor_steps.py).
Measured on torch 2.13 (2.14 and 2.15 read the same in their sources):

- `compiled_bw` is None until the first `backward()` compiles it, inside
  that call (`_AutogradBackwardCompiler.get_or_compile`, then
  `CompiledFunction.compiled_bw = ...`); where AOT's cache had the graph it
  is set when the forward is compiled. Either way the `call` code object
  is only known once it is set: `BackwardOutputCode.is_frame` recognizes
  its frame as it starts (the frame's code is `call_code(compiled_bw)`).
- The backward graph AOT traced is `CompiledFunction._lazy_backward_info.
  bw_module` (an AutogradLazyBackwardCompileInfo), its nodes with the
  forward's `stack_trace`, `seq_nr` and, for nodes recomputed from the
  forward, `from_node`. Inductor compiles a deep copy (the same names); AOT
  then saves its cache entry, which strips the nodes' meta in place
  (aot_autograd_result.serialize_graph_module assigns each `node.meta = {}`:
  the old dicts survive). So the account of the nodes is taken when
  `CompiledFunction.backward` starts, before that compile: `save_account`,
  a copy of the nodes' names, ops and users holding their own meta dicts
  (taken later, once that compile ran, the names alone).
  On a hit of AOT's cache (`CachedAutogradLazyBackwardCompileInfo`) no
  graph with meta exists in the process: the kernels name the nodes of
  inductor's comments, and their lines come from its line map alone.
- Inductor's `Source Nodes` comment names a backward node by its own name,
  or, where it has `from_node` (recomputed forward nodes), by that forward
  node's (`get_kernel_metadata`).
- Its C++ kernels carry no comment; inductor's line map (`cache_linemap`:
  the stack trace of the last FX node of each scheduled node) records their
  lines. In a backward many nodes share one stack trace (every gradient of a
  line has that line's), so the line map names no node here (the forward's
  reading of it, one node per trace, would name nodes a kernel does not
  compute); it gives the lines, matched (line numbers and folders aside:
  output_code.trace_key) to a stack trace of this process's own nodes:
  the backward's account, or dynamo's forward graph (a backward node's
  trace is the forward node's).

Values are read from the `call` frame's locals only, as in the forward.
"""
from __future__ import annotations

import types
import weakref
from dataclasses import dataclass, field

from dyndbg.dynamo.graphs.compiled_fx import call_code, compiled_backward, cuda_graph_replay
from dyndbg.dynamo.graphs.inductor_steps import (NodePlace, NoOutputCode, OutputCodeGraph,
                                                 Where, _computes)
from dyndbg.dynamo.graphs.lookup import node_frame
from dyndbg.dynamo.graphs.output_code import CodeStep, StepKind, parse, trace_key, with_provenance

# CompiledFunction class -> its backward graph's nodes, as AOT traced them
_ACCOUNTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(eq=False)
class SavedNode:
    """One node of AOT's backward graph as traced: what the stepper reads of an
    FX node, with the node's own meta dict (the one the cache strips away)."""

    name: str
    op: str
    target: object = field(repr=False)
    meta: dict = field(repr=False)
    users: list["SavedNode"] = field(default_factory=list, repr=False)
    all_input_nodes: list["SavedNode"] = field(default_factory=list, repr=False)


def save_account(cls: type) -> None:
    """Keep the nodes of `cls`'s backward graph with their meta, where AOT
    still holds them (before its lazy compile strips the meta); once per
    class. Watched only from `catch backward` or `catch nan` on: set after the
    first backward() ran, the nodes keep their names only (their lines then
    come from the line map)."""
    if cls in _ACCOUNTS:
        return
    info = vars(cls).get("_lazy_backward_info")
    module = getattr(info, "bw_module", None)    # none after a hit of AOT's cache
    graph = getattr(module, "graph", None)
    nodes = list(getattr(graph, "nodes", None) or ())
    if not nodes:
        return
    saved = {id(n): SavedNode(n.name, n.op, n.target, n.meta) for n in nodes}
    for node in nodes:
        copy = saved[id(node)]
        copy.users = [saved[id(u)] for u in node.users if id(u) in saved]
        copy.all_input_nodes = [saved[id(a)] for a in node.all_input_nodes if id(a) in saved]
    _ACCOUNTS[cls] = list(saved.values())


def account_of(cls: type) -> list[SavedNode]:
    return list(_ACCOUNTS.get(cls, ()))


@dataclass
class BackwardOutputCode(OutputCodeGraph):
    """inductor's compiled backward of graph `number`: its output code's `call`.
    Until the first backward() compiles it, `code` is None and `steps` empty;
    `is_frame` fills them as its `call` starts."""

    cls: type | None = field(default=None, repr=False)
    forward_gm: object = field(default=None, repr=False)     # dynamo's GraphModule
    aliases: dict[str, str] = field(default_factory=dict, repr=False)   # comment name -> node
    regions: dict[int, tuple[str, ...]] = field(default_factory=dict, repr=False)
    places: dict[str, tuple[str, int]] = field(default_factory=dict, repr=False)

    def is_frame(self, frame: types.FrameType) -> bool:
        if self.code is not None:
            return frame.f_code is self.code
        code = frame.f_code
        if code.co_name != "call" or self.cls is None:
            return False
        compiled = compiled_backward(vars(self.cls).get("compiled_bw"))
        if compiled is None or call_code(compiled) is not code:
            return False
        try:
            self.load(compiled)
        except NoOutputCode:
            return False
        return True

    def load(self, compiled: object) -> None:
        """Read the output code of `compiled` (NoOutputCode where it cannot be stepped)."""
        code = call_code(compiled)
        source = getattr(compiled, "source_code", None)
        label = f"backward of graph {self.number}"
        if code is None or not isinstance(source, str):
            raise NoOutputCode(f"{label}: inductor's output code has no `call` to step here")
        parsed = parse(source)
        if parsed is None:
            raise NoOutputCode(f"{label}: inductor's output code could not be read")
        self.nodes = account_of(self.cls) if self.cls is not None else []
        self.aliases = {}
        for node in self.nodes:
            origin = node.meta.get("from_node")
            alias = getattr(origin[0], "name", None) if isinstance(origin, list) and origin else None
            if isinstance(alias, str) and alias != node.name:
                self.aliases.setdefault(alias, node.name)
        known = {n.name for n in self.nodes} | set(self.aliases)
        self.steps = with_provenance(parsed, source, [], {}, known or None)
        self.inputs = parsed.inputs
        self.filename = code.co_filename
        self.code = code
        linemap = [(at, t) for at, t in (getattr(compiled, "cache_linemap", None) or [])
                   if isinstance(at, int) and isinstance(t, str)]
        self.regions = _regions(self.steps, linemap)
        self.places = _trace_places(self.nodes, self.forward_gm)
        self._index()

    def node_named(self, name: str) -> object | None:
        """The node a comment's name stands for: its own, or the one recomputed from it."""
        by_name = {n.name: n for n in self.nodes}
        return by_name.get(name) or by_name.get(self.aliases.get(name, ""))

    def user_places(self, step: CodeStep) -> list[tuple[str, int]]:
        """The lines of the nodes inductor names for the step (each node's own
        stack trace); where it names none (a C++ kernel) or none is known
        here (AOT's cache: no account), the lines of its line map's traces,
        matched to this process's nodes."""
        out: list[tuple[str, int]] = []
        for name in step.nodes:
            place = node_frame(self.node_named(name))
            if place is not None and place not in out:
                out.append(place)
        if out or step.kind is not StepKind.KERNEL:
            return out
        for key in self.regions.get(step.line, ()):
            place = self.places.get(key)
            if place is not None and place not in out:
                out.append(place)
        return out

    def place_of(self, node_name: str, before: CodeStep, frame_locals: dict) -> NodePlace:
        """As the forward's, for a node a kernel is named as computing (an
        extern kernel's last node); the nodes only C++ kernels compute are
        named by no kernel here."""
        if not any(_computes(k, node_name) for k in self.kernels_of(node_name)):
            return NodePlace(Where.UNNAMED)
        return super().place_of(node_name, before, frame_locals)


def _regions(steps: list[CodeStep], linemap: list[tuple[int, str]]) -> dict[int, tuple[str, ...]]:
    """kernel line -> the trace keys the line map records for it: those
    between the previous kernel call and this one. An extern kernel enters
    its node's context before the C++ kernel waiting before it is flushed
    for it (its code written): the last entry of a C++ kernel's region where
    a commented kernel follows is that kernel's (as with_provenance reads
    the forward's, here by position: in a backward many nodes share a trace)."""
    kernels = [s for s in steps if s.kind is StepKind.KERNEL]
    found: dict[int, list[str]] = {}
    previous = 0
    for step in kernels:
        found[step.line] = [trace_key(t) for at, t in linemap if previous < at <= step.line]
        previous = step.line
    for step, following in zip(kernels, kernels[1:]):
        own = found[step.line]
        if step.provenance != "comment" and following.provenance == "comment" and len(own) > 1:
            found[following.line].insert(0, own.pop())
    return {line: tuple(dict.fromkeys(keys)) for line, keys in found.items()}


def _trace_places(nodes: list[SavedNode], forward_gm: object) -> dict[str, tuple[str, int]]:
    """trace_key(stack trace) -> the user line, from this process's own nodes:
    the backward's account, then dynamo's forward graph."""
    out: dict[str, tuple[str, int]] = {}
    forward = list(getattr(getattr(forward_gm, "graph", None), "nodes", None) or ())
    for node in [*nodes, *forward]:
        trace = getattr(node, "meta", {}).get("stack_trace")
        place = node_frame(node)
        if isinstance(trace, str) and place is not None:
            out.setdefault(trace_key(trace), place)
    return out


def inductor_backward(cls: type, name: str, number: int, backend: str,
                      forward_gm: object) -> BackwardOutputCode | None:
    """The backward of graph `number` where inductor compiled (or will compile)
    it: its output code read where compiled_bw is set (None where that is not
    inductor's), else one that waits for its `call` to start. NoOutputCode
    where it cannot be stepped."""
    graph = BackwardOutputCode(name, number, "backward", backend, None, None, [], cls=cls,
                               forward_gm=forward_gm)
    compiled_bw = vars(cls).get("compiled_bw")
    if compiled_bw is None:
        return graph
    compiled = compiled_backward(compiled_bw)
    if compiled is None:
        return None
    if cuda_graph_replay(compiled):
        raise NoOutputCode(f"backward of graph {number} runs as a CUDA graph replay "
                           "(mode=\"reduce-overhead\"): no kernels to step between")
    graph.load(compiled)
    return graph
