"""Which step of an inductor graph's output code computes a user line's
work (issue 50: `b FILE:LINE` in inductor graphs).

A line's nodes are dynamo's FX nodes whose stack trace's user frame is that
line (lookup.node_frame). Which kernel computes a node comes from
inductor's own records only (inductor_steps.OutputCodeGraph: each kernel's
`nodes`, from its source-node comment or the compiled graph's
cache_linemap):

- a kernel that names the node computes it (an extern kernel's comment
  names, before its own node, nodes of its inputs' kernels: it computes only
  its last, inductor_steps._computes);
- a node no kernel names was fused, never stored: inductor's line map keeps
  the stack trace of the last FX node of each scheduled node, and a node
  inlined into the kernel of a node computed from it is recomputed there.
  It is computed by each kernel that names a node reached from it through
  nodes no kernel names (its users, breadth first, up to the first named
  ones; a named user's buffer is what later kernels read, not the node).

A line's stop is the first such kernel in the output code's order: where
the graph first runs work of that line.

An inductor backward (inductor_backward.BackwardOutputCode) is read by
lines, not by nodes: many of its nodes share one forward line's stack
trace and its C++ kernels name no node, so the forward's reading (fused
nodes found through their users) would name nodes no record names there.
A backward kernel computes work of a line where inductor's comment names,
as the node it computes (`_computes`), a node whose user frame is that
line; or, naming no node with a stack trace here, where its line map's
traces for it have that line (`user_places`): then no node is claimed
(`LineStop.linemap`). Nothing here runs or changes anything; it reads
the OutputCodeGraph.
"""
from __future__ import annotations

from typing import Any, Callable, Collection, NamedTuple

from dyndbg.dynamo.graphs.inductor_backward import BackwardOutputCode
from dyndbg.dynamo.graphs.inductor_steps import BufferState, OutputCodeGraph, Where, _computes
from dyndbg.dynamo.graphs.lookup import node_frame
from dyndbg.dynamo.graphs.output_code import CodeStep, StepKind

COMPUTED_OPS = ("call_function", "call_method", "call_module")
FileMatches = Callable[[str], bool]


class Computes(NamedTuple):
    """One node of a line that a kernel computes: named by inductor for the
    kernel (`via` ""), or fused into it, inductor naming `via`, a node
    computed from it, for the kernel."""

    node: str
    via: str = ""
    # the kernel's line map records the node's line, among nodes it does not
    # tell apart (CodeStep.lines): it computes work of the line, maybe not this node
    by_line: bool = False


class LineStop(NamedTuple):
    """Where a line's work first runs in an inductor graph: the kernel step
    and the nodes of the line it computes."""

    step: CodeStep
    computes: tuple[Computes, ...]
    place: tuple[str, int]           # the line's (file, line), as the nodes' stack trace says
    linemap: bool = False            # a backward's kernel naming no node: its line map's lines


def computing_kernels(graph: OutputCodeGraph, node_name: str) -> list[tuple[CodeStep, str | None]]:
    """(kernel, via) for each kernel step that computes node `node_name`,
    in the output code's order: via "" where inductor names the node for the
    kernel, else the node reached from it that inductor names there; via
    None where the kernel's line map records the node's line only (among
    nodes it does not tell apart: it may compute another node of the line)."""
    named = [k for k in graph.kernels_of(node_name) if _computes(k, node_name)]
    if named:
        return [(k, "") for k in named]
    by_line = graph.line_kernels(node_name)
    if by_line:
        return [(k, None) for k in by_line]
    by_name = {n.name: n for n in graph.nodes}
    node = by_name.get(node_name)
    if node is None:
        return []
    found: dict[int, tuple[CodeStep, str]] = {}
    queue = list(getattr(node, "users", {}) or ())
    seen: set[str] = set()
    while queue:
        user = queue.pop(0)
        if user.name in seen or getattr(user, "op", "") not in COMPUTED_OPS:
            continue
        seen.add(user.name)
        kernels = [k for k in graph.kernels_of(user.name) if _computes(k, user.name)]
        for kernel in kernels:
            found.setdefault(kernel.line, (kernel, user.name))
        if not kernels and not graph.line_kernels(user.name):
            # (a user only a line map records, among its line's nodes: which
            # kernel computes it is not known, nor so where this node is)
            queue.extend(user.users)
    return [found[line] for line in sorted(found)]


def line_nodes(graph: OutputCodeGraph, file_matches: FileMatches, line: int) -> list[Any]:
    """The FX nodes (computing ones, graph order) whose user line is FILE:LINE."""
    out = []
    for node in graph.nodes:
        if getattr(node, "op", None) not in COMPUTED_OPS:
            continue
        place = node_frame(node)
        if place is not None and place[1] == line and file_matches(place[0]):
            out.append(node)
    return out


def first_stop(graph: OutputCodeGraph, file_matches: FileMatches, line: int) -> LineStop | None:
    """The first kernel step computing a node of FILE:LINE, with the line's
    nodes it computes; None where no kernel computes any (the line is not
    this graph's, or its nodes run no kernel: views inductor reinterprets)."""
    if isinstance(graph, BackwardOutputCode):
        return next((found for step in graph.steps
                     if (found := _backward_stop(graph, step, file_matches, line)) is not None),
                    None)
    nodes = line_nodes(graph, file_matches, line)
    by_kernel: dict[int, tuple[CodeStep, list[Computes]]] = {}
    for node in nodes:
        for kernel, via in computing_kernels(graph, node.name):
            by_kernel.setdefault(kernel.line, (kernel, []))[1].append(
                Computes(node.name, via or "", by_line=via is None))
    if not by_kernel:
        return None
    kernel, computes = by_kernel[min(by_kernel)]
    place = node_frame(next(n for n in nodes if n.name == computes[0].node))
    assert place is not None
    return LineStop(kernel, tuple(computes), place)


def stop_at(graph: OutputCodeGraph, step: object, file_matches: FileMatches,
            line: int) -> LineStop | None:
    """What of FILE:LINE the step `step` computes (a stop there for a line
    breakpoint): None where it computes none of the line's nodes."""
    if not isinstance(step, CodeStep) or step.kind is not StepKind.KERNEL:
        return None
    if isinstance(graph, BackwardOutputCode):
        return _backward_stop(graph, step, file_matches, line)
    nodes = line_nodes(graph, file_matches, line)
    computes = []
    for node in nodes:
        found = [v for k, v in computing_kernels(graph, node.name) if k.line == step.line]
        if found:
            computes.append(Computes(node.name, found[0] or "", by_line=found[0] is None))
    if not computes:
        return None
    place = node_frame(next(n for n in nodes if n.name == computes[0].node))
    assert place is not None
    return LineStop(step, tuple(computes), place)


def _backward_stop(graph: BackwardOutputCode, step: CodeStep, file_matches: FileMatches,
                   line: int) -> LineStop | None:
    """What of FILE:LINE a backward's kernel step computes, by inductor's
    records: the nodes its comment names as computed there whose stack
    trace's user frame is the line; where it names no node with a stack
    trace here, the line among those its line map records (no node)."""
    if step.kind is not StepKind.KERNEL:
        return None
    known = [(name, node_frame(graph.node_named(name))) for name in step.nodes]
    if any(place is not None for _, place in known):
        computes = [(name, place) for name, place in known if place is not None
                    and place[1] == line and file_matches(place[0]) and _computes(step, name)]
        if not computes:
            return None
        return LineStop(step, tuple(Computes(name) for name, _ in computes), computes[0][1])
    place = next((p for p in graph.user_places(step) if p[1] == line and file_matches(p[0])),
                 None)
    return None if place is None else LineStop(step, (), place, linemap=True)


def condition_names(graph: OutputCodeGraph, step: object, frame_locals: dict,
                    wanted: Collection[str] | None = None) -> dict:
    """The names a condition sees before `step` of inductor's `call`: the
    inputs it still holds (by the output code's names, `arg0_1`, and
    dynamo's, `l_x_`), the buffers written so far (`buf0`; not one only
    allocated: its memory holds what the allocator left), and each of
    dynamo's nodes whose value such a buffer holds by inductor's records
    (`relu`; a node fused into a kernel, never stored, is not there, nor
    one whose buffer `p` can only infer). `wanted`: the names the condition
    reads (its code's co_names), where known: only those nodes are looked
    for (each costs a walk of the output code's steps)."""
    names: dict = {}
    before = step if isinstance(step, CodeStep) else None
    for held in graph.held(before, frame_locals):
        if held.state is BufferState.NOT_COMPUTED:
            continue
        names[held.name] = held.value
        if held.label:
            names.setdefault(held.label, held.value)
    if before is None:
        return names
    for node in graph.nodes:
        if getattr(node, "op", "") in ("placeholder", "output") or node.name in names \
                or (wanted is not None and node.name not in wanted):
            continue
        place = graph.place_of(node.name, before, frame_locals)
        if place.where is Where.BUFFER and not place.via:   # via: a buffer inferred, not named
            names[node.name] = place.value
    return names
