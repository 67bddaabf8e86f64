"""A stop inside an inductor graph, as text (no I/O; pure but for linecache).

    [graph 1 inductor forward] step 4/9 cpp_fused_relu_0: cpp kernel
      computes h (inductor's line map)
      at into_graph.py:19: h = torch.relu(self.l1(x))
      code: cpp_fused_relu_0(buf1)
      out buf1 = Tensor f32[3, 16] cpu [...]  (holds linear, from extern_kernels.addmm)
"""
from __future__ import annotations

import os

from dyndbg.dynamo.graphs.inductor_steps import BufferState, Held, NodePlace, Where
from dyndbg.dynamo.graphs.kernel_lines import LineStop
from dyndbg.dynamo.graphs.output_code import CodeStep, StepKind
from dyndbg.ui.text.graph_steps import place_text
from dyndbg.ui.text.values import summarize


def head_text(tag: str, step: CodeStep, index: int, count: int) -> str:
    position = f"step {index + 1}/{count}"
    if step.kind is StepKind.KERNEL:
        kind = step.kernel_kind.value if step.kernel_kind is not None else "kernel"
        return f"{tag} {position} {step.kernel}: {kind}"
    if step.kind is StepKind.RETURN:
        return f"{tag} {position} return: the graph returns"
    return f"{tag} {position} {step.kind.value} {', '.join(step.defines)}"


def held_text(held: Held, width: int | None = None) -> str:
    """`Tensor f32[3] ...  (holds h, from cpp_fused_relu_0)` or its state."""
    if held.state is BufferState.NOT_COMPUTED:
        return "allocated, not computed yet"
    text = summarize(held.value, width)
    if held.state is BufferState.INPUT:
        return text + (f"  (input {held.label})" if held.label else "  (input)")
    if held.writer is not None:
        nodes = ", ".join(held.writer.nodes) or "no node inductor names"
        return f"{text}  (written by {held.writer.kernel}, which computes {nodes})"
    return text


def stop_lines(tag: str, step: CodeStep, index: int, count: int,
               places: list[tuple[str, int]], held: list[Held], backward: bool = False) -> list[str]:
    """The lines a stop before one output-code step prints: the kernel, the
    FX nodes inductor says it computes and their user lines (in a backward,
    the forward lines they differentiate), the statement, and the buffers it
    touches as they are now."""
    lines = [head_text(tag, step, index, count)]
    if step.kind is StepKind.KERNEL:
        lines.append("  " + computes_text(step, places))
        for place in places:
            lines.append("  " + place_text(place, backward=backward))
    lines.append(f"  code: {step.text}")
    by_name = {h.name: h for h in held}
    touched = [("in ", n) for n in step.reads] + [("out", n) for n in step.writes]
    if step.kind in (StepKind.REINTERPRET, StepKind.ALIAS) and step.source:
        touched = [("in ", step.source)]
    for role, name in touched:
        if name in by_name:
            lines.append(f"  {role} {name} = {held_text(by_name[name])}")
    return lines


def computes_text(step: CodeStep, places: list[tuple[str, int]]) -> str:
    """`computes h (inductor's line map)`; for a kernel inductor names no node
    for (a backward's C++ kernel), what its line map gives instead."""
    if step.nodes and step.lines:
        return (f"computes {', '.join(step.nodes)} (inductor's {step.provenance}), and other "
                "nodes of the lines below, which its line map records but does not name:")
    if step.nodes:
        return f"computes {', '.join(step.nodes)} (inductor's {step.provenance})"
    if places:
        return "computes nodes inductor does not name; lines its line map records for them:"
    return "computes no node inductor records"


def line_lines(number: int, line_stop: LineStop) -> list[str]:
    """At a stop of `b FILE:LINE` (breakpoint `number`) before a kernel: that
    the kernel computes the line's nodes, those fused in named with the node
    inductor records for the kernel that they are computed for."""
    file, line = line_stop.place
    head = f"  breakpoint {number}'s line {os.path.basename(file)}:{line}: "
    if line_stop.linemap and line_stop.step.nodes:   # their stack traces not read here
        return [head + "one of the lines its line map records for this kernel (the nodes "
                "inductor names for it have no stack trace this process kept)"]
    if line_stop.linemap:      # a backward's C++ kernel: no node named
        return [head + "one of the lines its line map records for this kernel "
                "(inductor names no node it computes)"]
    named = [c for c in line_stop.computes if not c.by_line]
    if not named:      # a forward kernel whose line map trace several of the line's nodes have
        unsure = ", ".join(c.node for c in line_stop.computes)
        return [head + "this kernel computes work of it (inductor's line map records the line, "
                f"not which of its nodes: {unsure})"]
    nodes = ", ".join(f"{c.node} (fused in for {c.via}, not materialized)" if c.via
                      else c.node for c in named)
    return [head + f"this kernel computes {nodes}"]


def toolbar_text(tag: str, step: CodeStep, index: int, count: int) -> str:
    return f"{tag.strip('[]')} | step {index + 1}/{count} {step.name}"


def held_lines(held: list[Held]) -> list[str]:
    """`locals` at an inductor stop: the inputs still held, the buffers made so far."""
    if not held:
        return ["the graph holds no input or buffer now"]
    width = max(len(h.name) for h in held)
    return [f"{h.name.ljust(width)} = {held_text(h)}" for h in held]


def place_lines(node: str, place: NodePlace) -> tuple[str, object] | str:
    """`p NODE`: (the line above its value, the value), or the one line saying
    why no value is shown."""
    kernel = place.kernel.kernel if place.kernel is not None else ""
    if place.where is Where.BUFFER and place.via:
        return (f"{node} is {place.buffer}, inferred: written by {kernel}, which computes its user "
                f"{place.via}; inductor names no node for that buffer, its shape and dtype are {node}'s:",
                place.value)
    if place.where is Where.BUFFER:
        return f"{node} is {place.buffer} (written by {kernel}):", place.value
    if place.where is Where.NOT_YET:
        return f"{node}: not computed yet ({kernel} computes it)"
    if place.where is Where.FUSED:
        via = f", which computes its user {place.via}" if place.via else ""
        return f"{node}: fused into {kernel}{via}, not materialized"
    if place.where is Where.FREED:
        return f"{node}: computed by {kernel}, its buffer since freed or reused"
    if place.where is Where.LINE_ONLY:
        return (f"{node}: inductor's line map records its line for {kernel}, not which of that "
                f"line's nodes it computes; no value is shown (`graph values {node}` computes "
                "it eagerly)")
    if place.where is Where.UNNAMED:
        return (f"{node}: inductor names no kernel of this backward as computing it (its C++ "
                "kernels carry no node names); `locals` shows the buffers")
    return f"{node}: inductor records no kernel for it in this graph"


def list_lines(steps: list[CodeStep], current: CodeStep) -> list[str]:
    """`l`: the output code's steps, `->` at the one about to run."""
    return [f"{'->' if step is current else '  '} {step_line(step)}" for step in steps]


def step_line(step: CodeStep) -> str:
    """One output-code statement as `l` lists it (and the editor's
    disassembly): its line, its text, the nodes inductor records for it
    (`  12 cpp_fused_relu_0(buf1)  # h`)."""
    nodes = f"  # {', '.join(step.nodes)}" if step.nodes else ""
    return f"{step.line:>4} {step.text}{nodes}"
