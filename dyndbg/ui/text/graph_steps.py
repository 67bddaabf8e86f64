"""A stop inside a compiled graph, as text (no I/O; pure but for linecache).

    [graph 1 forward] node 6/11 linear: call_function torch._C._nn.linear
      at prog.py:10: h = torch.relu(s.l1(x))
      in  l_x_ = Tensor f32[3, 8] cpu [1.541, -0.2934, …]

    [backward of graph 1 aot_eager] node 17/25 threshold_backward: call_function …
      grad of prog.py:10 (forward node relu): h = torch.relu(s.l1(x))
"""
from __future__ import annotations

import linecache
import os

from dyndbg.dynamo.graphs.stepping import MISSING, NodeStep, target_text
from dyndbg.ui.text.values import summarize


def place_text(place: tuple[str, int] | None, step: NodeStep | None = None,
               backward: bool = False) -> str:
    """`at prog.py:10: h = torch.relu(s.l1(x))`, or that torch kept no line;
    in a backward (`step`'s part, or `backward`: an inductor backward's
    kernel), the forward line it differentiates:
    `grad of prog.py:10 (forward node relu): h = torch.relu(s.l1(x))`."""
    backward = backward or (step is not None and step.part == "backward")
    if place is None:
        return ("for no line of yours" if backward else "at no line of yours") + \
            " (torch kept no stack trace for this node)"
    path, line = place
    source = linecache.getline(path, line).strip()
    where = f"{os.path.basename(path)}:{line}"
    if backward:
        forward = step.forward if step is not None else ""
        where = f"grad of {where}" + (f" (forward node {forward})" if forward else "")
    else:
        where = f"at {where}"
    return where + (f": {source}" if source else "")


def value_text(value: object, width: int | None = None) -> str:
    if value is MISSING:
        return "not held by the graph's frame"
    return summarize(value, width)


def stop_lines(tag: str, step: NodeStep) -> list[str]:
    """The lines a graph stop prints: the node, its user line, its inputs."""
    position = f"node {step.index + 1}/{step.count}" if step.index >= 0 else "node"
    head = f"{tag} {position} {step.name}: {step.op} {step.target}"
    lines = [head, "  " + place_text(step.place, step)]
    if step.op == "output":
        lines[0] = f"{tag} {position} output: the graph returns"
        if step.part == "backward":
            lines[1] = "  the gradients of its forward's inputs, in their order (None: none)"
    for name, value in step.inputs:
        lines.append(f"  in  {name} = {value_text(value)}")
    return lines


def toolbar_text(tag: str, step: NodeStep) -> str:
    """The toolbar's place at a graph stop: `graph 1 eager forward | node 6/11 linear`."""
    position = f"node {step.index + 1}/{step.count}" if step.index >= 0 else "node"
    return f"{tag.strip('[]')} | {position} {step.name}"


def node_line(node: object) -> str:
    """One node as `l` lists it at a graph stop (and the editor's disassembly):
    `relu                 call_function  torch.ops.aten.relu.default`."""
    return f"{node.name:<20} {node.op:<14} {target_text(node.target)}"  # type: ignore[attr-defined]  # an FX node


def values_lines(values: list[tuple[str, object]]) -> list[str]:
    """`locals` at a graph stop: each value computed and still held."""
    if not values:
        return ["no node value is held yet"]
    width = max(len(name) for name, _ in values)
    return [f"{name.ljust(width)} = {value_text(value)}" for name, value in values]
