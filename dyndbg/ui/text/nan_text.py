"""A `catch nan` stop, as text (no I/O; pure but for linecache).

    Catchpoint 1 (nan), hit 1: node log of graph 1 made nan
    [graph 1 eager forward] after node 5/9 log: call_function torch.log
      at prog.py:10: y = torch.log(x - 1)
      in  sub = Tensor f32[3, 4] cpu [...]
      out log = Tensor f32[3, 4] cpu [...]
      nan at [0, 3], [1, 3] (2 of 12)
"""
from __future__ import annotations

from dyndbg.dynamo.graphs.nan_check import BadValues
from dyndbg.dynamo.graphs.output_code import CodeStep
from dyndbg.dynamo.graphs.stepping import NodeStep
from dyndbg.ui.text.graph_steps import place_text, value_text
from dyndbg.ui.text.kernel_steps import computes_text


def kinds(bad: list[BadValues]) -> str:
    """`nan`, `inf`, `nan and inf`: what the node's output holds."""
    nan = any(b.nan for b in bad)
    inf = any(b.inf for b in bad)
    return "nan and inf" if nan and inf else "nan" if nan else "inf"


def _indices(at: list[list[int]]) -> str:
    return ", ".join("[" + ", ".join(str(i) for i in index) + "]" for index in at)


def bad_lines(bad: list[BadValues]) -> list[str]:
    """`nan at [0, 3], [1, 3] (2 of 12)`, one per kind and tensor; a tuple's
    element named first: `[1]: inf at [0] (1 of 4)`."""
    lines = []
    for b in bad:
        head = f"{b.where}: " if b.where else ""
        for kind, count, at in (("nan", b.nan, b.nan_at), ("inf", b.inf, b.inf_at)):
            if count:
                more = ", …" if count > len(at) else ""
                lines.append(f"{head}{kind} at {_indices(at)}{more} ({count} of {b.total})")
    return lines


def caught_line(number: int, hits: int, node: str, graph: int, bad: list[BadValues],
                what: str = "node") -> str:
    return f"Catchpoint {number} (nan), hit {hits}: {what} {node} of graph {graph} made {kinds(bad)}"


def stop_lines(tag: str, step: NodeStep, inputs: list[tuple[str, object]], value: object,
               bad: list[BadValues]) -> list[str]:
    """The node that just ran, its user line, its inputs (as before it ran),
    its output and which of its elements are bad."""
    position = f"node {step.index + 1}/{step.count}" if step.index >= 0 else "node"
    lines = [f"{tag} after {position} {step.name}: {step.op} {step.target}",
             "  " + place_text(step.place, step)]
    for name, held in inputs:
        lines.append(f"  in  {name} = {value_text(held)}")
    lines.append(f"  out {step.name} = {value_text(value)}")
    lines += ["  " + line for line in bad_lines(bad)]
    return lines


def kernel_lines(tag: str, step: CodeStep, index: int, count: int,
                 places: list[tuple[str, int]], inputs: list[tuple[str, object]],
                 output: str, value: object, bad: list[BadValues],
                 backward: bool = False) -> list[str]:
    """inductor: the kernel step that just ran, the FX nodes inductor says it
    computes and their user lines (in a backward, the forward lines they
    differentiate), its inputs, the buffer it wrote that holds the bad elements."""
    kind = step.kernel_kind.value if step.kernel_kind is not None else "kernel"
    lines = [f"{tag} after step {index + 1}/{count} {step.kernel}: {kind}"]
    lines.append("  " + computes_text(step, places))
    lines += ["  " + place_text(place, backward=backward) for place in places]
    lines.append(f"  code: {step.text}")
    for name, held in inputs:
        lines.append(f"  in  {name} = {value_text(held)}")
    lines.append(f"  out {output} = {value_text(value)}")
    lines += ["  " + line for line in bad_lines(bad)]
    return lines


def output_lines(name: str, bad: list[tuple[int, BadValues]]) -> list[str]:
    """A graph checked at its outputs (its backend gives no way in), after its call:
    `graph 3 output 0 holds nan and inf`, then the bad elements."""
    from dyndbg.dynamo.names import graph_number
    lines = []
    for index, values in bad:
        lines.append(f"graph {graph_number(name)} output {index} holds {kinds([values])} "
                     "(its backend gives no way in: checked after its call)")
        lines += ["  " + line for line in bad_lines([values])]
    return lines
