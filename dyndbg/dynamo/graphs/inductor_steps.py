"""An inductor graph as it runs, step by step (issue 50): the output code's
`call`, its buffers and the FX nodes each kernel computes.

Measured on torch 2.13 CPU: the `__compiled_fn_*` global leads (wrapper
edges, lookup._neighbours) to inductor's `CompiledFxGraph`: under no_grad
directly, in training as `CompiledFunction.compiled_fw` (the backward's,
`compiled_bw`, compiled at the first backward(): inductor_backward.py).
It holds:
- `current_callable`: the bound method `Runner.call` of the output code
  module (a plain module-level `call` on older torch); the code object
  stepped is its `__func__.__code__` (the `compiled_fn_runner` attribute is
  the same Runner);
- `source_code`: the text of that module (co_filename's file, same lines);
- `cache_linemap`: [(output code line, the stack trace of the last FX node
  of each scheduled node)], what torch's profiler maps kernels back with.

Values are read from the `call` frame's locals (the program's own tensors)
between its steps; nothing here calls, recompiles or writes anything.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from dyndbg.dynamo.graphs.compiled_fx import call_code, compiled_forward, cuda_graph_replay
from dyndbg.dynamo.graphs.lookup import node_frame
from dyndbg.dynamo.graphs.output_code import (CodeStep, KernelKind, StepKind, parse, trace_key,
                                               with_provenance)

class NoOutputCode(Exception):
    """An inductor graph whose output code cannot be stepped (one line)."""


class BufferState(Enum):
    INPUT = "input"
    COMPUTED = "computed"
    NOT_COMPUTED = "not computed yet"


class Held(NamedTuple):
    """A name the `call` frame holds at a stop, and what it is."""

    name: str
    state: BufferState
    value: object
    writer: CodeStep | None       # the kernel whose output it holds
    label: str = ""               # an input's dynamo placeholder name


class Where(Enum):
    BUFFER = "buffer"             # a buffer holds the node's value
    NOT_YET = "not computed yet"
    FUSED = "fused"               # computed inside a kernel, never stored
    FREED = "freed"
    UNKNOWN = "unknown"
    UNNAMED = "unnamed"           # a backward's: no kernel is named as computing it
    LINE_ONLY = "line only"       # kernels compute work of its line, which of its line's nodes unknown


class NodePlace(NamedTuple):
    where: Where
    kernel: CodeStep | None = None
    buffer: str = ""
    value: object = None
    via: str = ""                 # the user node whose kernel names it (FUSED, or an inferred BUFFER)


@dataclass
class OutputCodeGraph:
    """An inductor graph: its output code's `call`, step by step. The same
    face as stepping.GraphCode for the stepper (code, is_frame, node_at,
    stepped, index_of, values); `nodes` are dynamo's FX nodes (the names
    inductor's records use), `steps` the statements of `call` (CodeStep)."""

    name: str                 # the `__compiled_fn_*` global
    number: int               # graph N
    part: str                 # "forward", or "backward" (inductor_backward.py)
    backend: str
    gm: object = field(repr=False)           # dynamo's GraphModule (node names, stack traces)
    code: types.CodeType | None = field(repr=False)   # the output code's `call`
    nodes: list = field(default_factory=list, repr=False)
    steps: list[CodeStep] = field(default_factory=list, repr=False)
    inputs: tuple[str, ...] = ()
    filename: str = ""

    @property
    def stops(self) -> list[CodeStep]:
        return [s for s in self.steps if s.stops]

    def __post_init__(self) -> None:
        self._index()

    def _index(self) -> None:
        """Each stop's step by its line (again once the steps are read)."""
        self._by_line: dict[int, CodeStep] = {}
        for step in self.steps:
            if step.stops:
                self._by_line.setdefault(step.line, step)

    def node_at(self, lineno: int | None) -> object | None:
        """The step that starts at line `lineno` of the output code (each line event)."""
        return self._by_line.get(lineno) if lineno is not None else None

    def is_frame(self, frame: types.FrameType) -> bool:
        return frame.f_code is self.code

    def stepped(self, node: object) -> bool:
        return isinstance(node, CodeStep) and node.stops

    def index_of(self, node: object) -> int:
        stops = self.stops
        return stops.index(node) if node in stops else -1

    def input_label(self, name: str) -> str:
        placeholders = [n.name for n in self.nodes if getattr(n, "op", "") == "placeholder"]
        if name in self.inputs and len(placeholders) == len(self.inputs):
            return placeholders[self.inputs.index(name)]
        return ""

    def _states(self, before: CodeStep | None) -> dict[str, tuple[BufferState, CodeStep | None]]:
        """Each buffer defined before step `before`: computed or not, and the
        kernel whose output it holds (aliases and views share their base's)."""
        states: dict[str, tuple[BufferState, CodeStep | None]] = {}
        for step in self.steps:
            if step is before or (before is not None and step.line >= before.line):
                break
            if step.kind is StepKind.ALLOC:
                for name in step.defines:
                    states[name] = (BufferState.NOT_COMPUTED, None)
            elif step.kind in (StepKind.ALIAS, StepKind.REINTERPRET):
                base = states.get(step.source, (BufferState.INPUT, None))
                for name in step.defines:
                    states[name] = base
            elif step.kind is StepKind.KERNEL:
                written = list(step.writes)
                if not written and step.kernel_kind is not KernelKind.EXTERN:
                    # a triton kernel says not which it writes: the fresh buffers it takes
                    written = [n for n in step.reads if states.get(n, (None,))[0] is BufferState.NOT_COMPUTED]
                for name in written:
                    states[name] = (BufferState.COMPUTED, step)
        return states

    def held(self, before: CodeStep | None, frame_locals: dict) -> list[Held]:
        """The inputs still held and the buffers made so far, at the stop
        before step `before`, with the frame's values; a buffer that is an
        input reused (`buf3 = relu; del relu  # reuse`, a kernel then writes
        it in place) as that input until a kernel writes it."""
        out = [Held(n, BufferState.INPUT, frame_locals[n], None, self.input_label(n))
               for n in self.inputs if n in frame_locals]
        sources = {name: step.source for step in self.steps
                   if step.kind in (StepKind.ALIAS, StepKind.REINTERPRET)
                   and (before is None or step.line < before.line) for name in step.defines}
        for name, (state, writer) in self._states(before).items():
            if name not in frame_locals or name in self.inputs:
                continue
            if state is not BufferState.INPUT:
                out.append(Held(name, state, frame_locals[name], writer))
                continue
            base, seen = name, {name}
            while base in sources and base not in self.inputs and sources[base] not in seen:
                base = sources[base]
                seen.add(base)
            if base in self.inputs:
                out.append(Held(name, state, frame_locals[name], None, self.input_label(base) or base))
        return out

    def values(self, frame_locals: dict) -> list[tuple[str, object]]:
        return [(h.name, h.value) for h in self.held(None, frame_locals)
                if h.state is not BufferState.NOT_COMPUTED]

    def user_places(self, step: CodeStep) -> list[tuple[str, int]]:
        """The user lines of the nodes a step computes, in order, once each
        (each node's own stack trace), then those of the line map's traces
        whose nodes it does not tell apart (CodeStep.lines)."""
        by_name = {n.name: n for n in self.nodes}
        out: list[tuple[str, int]] = []
        for name in step.nodes:
            place = node_frame(by_name[name]) if name in by_name else None
            if place is not None and place not in out:
                out.append(place)
        for key in step.lines:
            place = self.trace_place(key)
            if place is not None and place not in out:
                out.append(place)
        return out

    def trace_nodes(self, key: str) -> list[str]:
        """dynamo's nodes whose stack trace has this trace_key, in graph order."""
        return [n.name for n in self.nodes if getattr(n, "op", "") not in ("placeholder", "output")
                and isinstance(n.meta.get("stack_trace"), str)
                and trace_key(n.meta["stack_trace"]) == key]

    def trace_place(self, key: str) -> tuple[str, int] | None:
        by_name = {n.name: n for n in self.nodes}
        names = self.trace_nodes(key)
        return node_frame(by_name[names[0]]) if names else None

    def line_kernels(self, node_name: str) -> list[CodeStep]:
        """The kernels whose line map records the node's stack trace among
        traces it does not tell the nodes of apart (CodeStep.lines)."""
        node = next((n for n in self.nodes if n.name == node_name), None)
        trace = getattr(node, "meta", {}).get("stack_trace") if node is not None else None
        if not isinstance(trace, str):
            return []
        key = trace_key(trace)
        return [s for s in self.steps if s.kind is StepKind.KERNEL and key in s.lines]

    def kernels_of(self, node_name: str) -> list[CodeStep]:
        return [s for s in self.steps if s.kind is StepKind.KERNEL and node_name in s.nodes]

    def place_of(self, node_name: str, before: CodeStep, frame_locals: dict) -> NodePlace:
        """Where the value of dynamo's node `node_name` is at the stop before
        `before`. A kernel's output buffer holds the last of its nodes with
        that buffer's shape and dtype (dynamo's example value); its other
        nodes were fused into it, never stored. An extern kernel's source-node
        comment names, before its own node (the last), the nodes of its
        inputs' kernels too (`# relu, x, x_1, linear` for an addmm of a fused
        relu and max-pool): it computes none of those."""
        kernels = [k for k in self.kernels_of(node_name) if _computes(k, node_name)]
        if not kernels and self.line_kernels(node_name):
            return NodePlace(Where.LINE_ONLY, self.line_kernels(node_name)[0])
        if not kernels:
            inferred = self._unnamed_output(node_name, before, frame_locals)
            if inferred is not None:
                return inferred
            user, kernel = self._user_kernel(node_name)
            return NodePlace(Where.FUSED, kernel, via=user) if kernel else NodePlace(Where.UNKNOWN)
        pending = [k for k in kernels if k.line >= before.line]
        states = self._states(before)
        freed = None
        for kernel in kernels:
            if kernel.line >= before.line:
                continue
            written = [n for n, (_, writer) in states.items() if writer is kernel]
            held = [n for n in written if n in frame_locals]
            if not held:
                freed = freed or kernel
                continue
            buffer = self._holding(kernel, node_name, held, frame_locals)
            if buffer:
                return NodePlace(Where.BUFFER, kernel, buffer, frame_locals[buffer])
        if freed is not None:
            return NodePlace(Where.FREED, freed)
        inferred = self._unnamed_output(node_name, before, frame_locals)
        if inferred is not None:
            return inferred
        if pending and (len(pending) == len(kernels) or pending[0].nodes[-1] == node_name):
            return NodePlace(Where.NOT_YET, pending[0])
        return NodePlace(Where.FUSED, kernels[0])

    def _holding(self, kernel: CodeStep, node_name: str, buffers: list[str], frame_locals: dict) -> str:
        """The buffer among `buffers` (written by `kernel`) that holds node
        `node_name`'s value, "" where none does."""
        by_name = {n.name: n for n in self.nodes}
        same = [n for n in kernel.nodes if n in by_name and
                _same_kind(_example(by_name[n]), _example(by_name.get(node_name)))]
        if not same or same[-1] != node_name:
            return ""      # a later node of the kernel has its shape: this one is fused
        fits = [b for b in buffers if _same_kind(frame_locals[b], _example(by_name.get(node_name)))]
        return fits[-1] if fits else ""

    def _unnamed_output(self, node_name: str, before: CodeStep, frame_locals: dict) -> NodePlace | None:
        """A buffer that a kernel which ran wrote but for which inductor names
        no node, of this node's shape and dtype, where that kernel computes a
        user of the node (inductor's line map keeps one node per fused
        kernel: `cpp_fused_mean_relu_0` names mean, and also writes relu's
        buffer in place). Labelled as inferred."""
        by_name = {n.name: n for n in self.nodes}
        example = _example(by_name.get(node_name))
        found: list[NodePlace] = []
        states = self._states(before)
        for user, kernel in self._user_kernels(node_name):
            if kernel.line >= before.line:
                continue
            written = [n for n, (_, w) in states.items() if w is kernel and n in frame_locals]
            named = {self._holding(kernel, n, written, frame_locals) for n in kernel.nodes}
            for buffer in written:
                if buffer not in named and _same_kind(frame_locals[buffer], example) \
                        and getattr(example, "shape", None) is not None:
                    found.append(NodePlace(Where.BUFFER, kernel, buffer, frame_locals[buffer], via=user))
        return found[0] if len(found) == 1 else None

    def _user_kernels(self, node_name: str) -> list[tuple[str, CodeStep]]:
        """(user, a kernel naming it) for the node's users, breadth first."""
        by_name = {n.name: n for n in self.nodes}
        queue = list(getattr(by_name.get(node_name), "users", {}) or ())
        seen: set[str] = set()
        out: list[tuple[str, CodeStep]] = []
        while queue:
            user = queue.pop(0)
            if user.name in seen:
                continue
            seen.add(user.name)
            out.extend((user.name, k) for k in self.kernels_of(user.name))
            queue.extend(user.users)
        return out

    def _user_kernel(self, node_name: str) -> tuple[str, CodeStep | None]:
        """The first kernel naming a node computed from `node_name` (its users, breadth first)."""
        by_name = {n.name: n for n in self.nodes}
        queue = list(getattr(by_name.get(node_name), "users", {}) or ())
        seen: set[str] = set()
        while queue:
            user = queue.pop(0)
            if user.name in seen:
                continue
            seen.add(user.name)
            kernels = self.kernels_of(user.name)
            if kernels:
                return user.name, kernels[0]
            queue.extend(user.users)
        return "", None


def _computes(kernel: CodeStep, node_name: str) -> bool:
    """Whether `kernel` computes the node it names: for an extern kernel
    named by inductor's comment, only its last node."""
    if kernel.kernel_kind is KernelKind.EXTERN and kernel.provenance == "comment":
        return bool(kernel.nodes) and kernel.nodes[-1] == node_name
    return True


def _example(node: object) -> object:
    meta = getattr(node, "meta", {}) or {}
    value = meta.get("example_value")
    return meta.get("val") if value is None else value


def _same_kind(a: object, b: object) -> bool:
    """Same dtype and shape (a symbolic size matches any); True where either
    is not a tensor (nothing to tell them apart by)."""
    shape_a, shape_b = getattr(a, "shape", None), getattr(b, "shape", None)
    if shape_a is None or shape_b is None:
        return True
    if getattr(a, "dtype", None) != getattr(b, "dtype", None) or len(shape_a) != len(shape_b):
        return False
    for x, y in zip(shape_a, shape_b):
        try:
            if int(x) != int(y):
                return False
        except (TypeError, ValueError):     # symbolic: unknown here
            continue
    return True


def inductor_graph(name: str, number: int, value: object, backend: str, gm: object) -> OutputCodeGraph | None:
    """The output code of graph `name` when inductor compiled it (None when
    it did not); NoOutputCode saying why when it cannot be stepped."""
    compiled = compiled_forward(value)
    if compiled is None:
        return None
    if cuda_graph_replay(compiled):
        raise NoOutputCode(f"graph {number} runs as a CUDA graph replay (mode=\"reduce-overhead\"): "
                           "no kernels to step between")
    code = call_code(compiled)
    source = getattr(compiled, "source_code", None)
    if code is None or not isinstance(source, str):
        raise NoOutputCode(f"graph {number}: inductor's output code has no `call` to step here")
    parsed = parse(source)
    if parsed is None:
        raise NoOutputCode(f"graph {number}: inductor's output code could not be read")
    nodes = list(gm.graph.nodes) if gm is not None else []   # type: ignore[attr-defined]  # an fx.GraphModule
    traces: dict[str, tuple[str, ...]] = {}
    for node in nodes:
        trace = node.meta.get("stack_trace")
        if node.op not in ("placeholder", "output") and isinstance(trace, str):
            key = trace_key(trace)
            traces[key] = traces.get(key, ()) + (node.name,)
    linemap = [(int(at), str(t)) for at, t in (getattr(compiled, "cache_linemap", None) or [])
               if isinstance(at, int) and isinstance(t, str)]
    steps = with_provenance(parsed, source, linemap, traces, {n.name for n in nodes})
    return OutputCodeGraph(name, number, "forward", backend, gm, code, nodes,
                           steps=steps, inputs=parsed.inputs, filename=code.co_filename)
