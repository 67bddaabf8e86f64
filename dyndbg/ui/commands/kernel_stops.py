"""The looking commands at a stop inside an inductor graph (issue 50): before
one step of its output code's `call`. graph_stops.py's commands hand over
here when the graph stepped is an OutputCodeGraph; running commands (s, n,
r, c) are the same for every graph."""
from __future__ import annotations

from dyndbg.dynamo.graphs import kernel_lines
from dyndbg.dynamo.graphs.inductor_steps import BufferState, OutputCodeGraph
from dyndbg.dynamo.graphs.output_code import CodeStep
from dyndbg.engine.stop import GraphStop
from dyndbg.engine.targets import LineTarget
from dyndbg.ui.commands.host import Host
from dyndbg.ui.text import kernel_steps
from dyndbg.ui.text.parsing import CommandError
from dyndbg.ui.text.values import safe_repr


def _step(stop: GraphStop) -> CodeStep:
    step = stop.node
    assert isinstance(step, CodeStep)
    return step


def print_stop(host: Host, stop: GraphStop, graph: OutputCodeGraph) -> None:
    step = _step(stop)
    held = graph.held(step, stop.frame.f_locals)
    lines = kernel_steps.stop_lines(stop.tag, step, graph.index_of(step), len(graph.stops),
                                    graph.user_places(step), held,
                                    backward=graph.part == "backward")
    code = next(i for i, line in enumerate(lines) if line.startswith("  code: "))
    lines[code:code] = line_breakpoint_lines(stop, graph, step)
    for line in lines:
        host.write(line)


def line_breakpoint_lines(stop: GraphStop, graph: OutputCodeGraph, step: CodeStep) -> list[str]:
    """For each `b FILE:LINE` that stops here, what of its line the kernel computes."""
    out: list[str] = []
    for bp in stop.breakpoints:
        target = bp.target
        if type(target) is LineTarget:
            found = kernel_lines.stop_at(graph, step, target.file_matches, target.line)
            if found is not None:
                out.extend(kernel_steps.line_lines(bp.number, found))
    return out


def toolbar(stop: GraphStop, graph: OutputCodeGraph) -> str:
    step = _step(stop)
    return kernel_steps.toolbar_text(stop.tag, step, graph.index_of(step), len(graph.stops))


def print_locals(host: Host, stop: GraphStop, graph: OutputCodeGraph) -> None:
    for line in kernel_steps.held_lines(graph.held(_step(stop), stop.frame.f_locals)):
        host.write(line)


def print_value(host: Host, stop: GraphStop, graph: OutputCodeGraph, name: str) -> None:
    """`p NAME`: an input or buffer of `call`, or one of dynamo's nodes."""
    step = _step(stop)
    held = {h.name: h for h in graph.held(step, stop.frame.f_locals)}
    if name in held:
        found = held[name]
        if found.state is BufferState.NOT_COMPUTED:
            host.write(f"{name}: allocated, not computed yet")
        else:
            host.write(safe_repr(found.value))
        return
    if name in {n.name for n in graph.nodes}:
        if getattr(next(n for n in graph.nodes if n.name == name), "op", "") == "placeholder":
            raise CommandError(f"{name} is an input of graph {graph.number}: `locals` lists the "
                               "inputs the output code still holds")
        shown = kernel_steps.place_lines(name, graph.place_of(name, step, stop.frame.f_locals))
        if isinstance(shown, str):
            host.write(shown)
        else:
            host.write(shown[0])
            host.write(safe_repr(shown[1]))
        return
    if graph.part == "backward" and not graph.nodes and any(name in s.nodes for s in graph.steps):
        raise CommandError(f"{name}: inductor's comments name it, but AOT's cache had this "
                           "backward compiled: no graph of it with its nodes is in this process; "
                           "`locals` shows the buffers")
    raise CommandError(f"graph {graph.number} has no node, input or buffer {name!r} held now")


def print_list(host: Host, stop: GraphStop, graph: OutputCodeGraph) -> None:
    host.write(f"{graph.filename}:")
    for line in kernel_steps.list_lines(graph.steps, _step(stop)):
        host.write(line)
