"""The commands at a stop inside a compiled graph (issue 50): before one FX
node of the program's own graph runs.

At such a stop these take the place of the commands of the same name; help,
quit and the breakpoint commands work as anywhere; the others (they look at
a generated frame's instructions) say what works here.
"""
from __future__ import annotations

from typing import Callable, Sequence

from dyndbg.dynamo.graphs.inductor_steps import OutputCodeGraph
from dyndbg.dynamo.graphs.stepping import MISSING, node_step
from dyndbg.engine.stop import GraphStop
from dyndbg.ui.commands import kernel_stops
from dyndbg.ui.text.breakpoint_text import deleted_at_stop
from dyndbg.ui.commands.host import Family, Host, commands_of, usage
from dyndbg.ui.text import graph_steps, nan_text
from dyndbg.ui.text.parsing import CommandError
from dyndbg.ui.text.values import safe_repr

ANYWHERE = {"break", "tbreak", "catch", "clear", "disable", "enable", "condition", "ignore",
            "info", "help", "alias", "unalias", "quit", "set"}
PROMPT = "(dyndbg graph) "


class GraphStopCommands:
    title = "in a graph"

    def __init__(self, host: Host) -> None:
        self.host = host

    @property
    def stop(self) -> GraphStop:
        stop = self.host.engine.held.graph
        if stop is None:
            raise CommandError("not stopped inside a compiled graph")
        return stop

    def command(self, name: str, families: Sequence[Family]) -> Callable[[str], None] | None:
        found = getattr(self, f"do_{name}", None)
        if found is not None:
            return found
        for family in families:
            found = getattr(family, f"do_{name}", None)
            if found is not None:
                break
        else:
            return None
        if found.__name__[3:] in ANYWHERE:
            return found

        def refuse(arg: str) -> None:
            raise CommandError(f"{name}: inside graph {self.stop.graph.number}, between its "
                               f"nodes (here: {self.commands_here()})")
        refuse.__name__ = found.__name__
        refuse.__doc__ = found.__doc__
        return refuse

    def commands_here(self) -> str:
        return (", ".join(usage(c) for c in commands_of(self))
                + "; as anywhere: " + ", ".join(sorted(ANYWHERE)))

    def print_stop(self, stop: GraphStop) -> None:
        if stop.found is not None:       # `catch nan`: after the node that made it
            return self._print_nan(stop)
        for bp in stop.breakpoints:      # `catch backward` at its first node; `b FILE:LINE`
            if bp.kind == "catch":
                self.host.write(f"Catchpoint {bp.number} (backward), hit {bp.hits}: "
                                f"backward of graph {stop.graph.number} starts")
            else:
                self.host.write(f"Breakpoint {bp.number} at {bp.target.describe()}, hit {bp.hits}")
        for line in deleted_at_stop(stop.breakpoints, self.host.engine.breakpoints):
            self.host.write(line)
        if isinstance(stop.graph, OutputCodeGraph):
            return kernel_stops.print_stop(self.host, stop, stop.graph)
        step = node_step(stop.graph, stop.node, stop.frame.f_locals)
        for line in graph_steps.stop_lines(stop.tag, step):
            self.host.write(line)

    def _print_nan(self, stop: GraphStop) -> None:
        found = stop.found
        graph = stop.graph
        if isinstance(graph, OutputCodeGraph):
            kernel = stop.node
            for bp in stop.breakpoints:
                self.host.write(nan_text.caught_line(bp.number, bp.hits, kernel.kernel,  # type: ignore[attr-defined]  # a CodeStep
                                                     graph.number, found.bad, "kernel"))  # type: ignore[attr-defined]  # a NanFound
            for line in nan_text.kernel_lines(stop.tag, kernel, graph.index_of(kernel),  # type: ignore[arg-type]  # a CodeStep
                                              len(graph.stops), graph.user_places(kernel),  # type: ignore[arg-type]  # a CodeStep
                                              found.inputs, found.output, found.value,  # type: ignore[attr-defined]  # a NanFound
                                              found.bad,  # type: ignore[attr-defined]  # a NanFound
                                              backward=graph.part == "backward"):
                self.host.write(line)
            return
        step = node_step(graph, stop.node, {})
        for bp in stop.breakpoints:
            self.host.write(nan_text.caught_line(bp.number, bp.hits, step.name,
                                                 stop.graph.number, found.bad))  # type: ignore[attr-defined]  # a NanFound
        for line in nan_text.stop_lines(stop.tag, step, found.inputs, found.value, found.bad):  # type: ignore[attr-defined]  # a NanFound
            self.host.write(line)

    # -- running (the prompt's commands below, the editor's requests) ------------------------
    def next_node(self) -> None:
        """Once this stop ends: the graph's next node (after its last, the
        generated instruction after the call)."""
        self.host.engine.set_step(1)

    def run_to_end(self) -> None:
        """Once this stop ends: no more stops in the graph; the generated
        instruction after its call (a backward, which no generated code
        calls: on until a breakpoint)."""
        backward = self.stop.graph.part == "backward"
        self.host.engine.graph_steps.finish()
        if backward:
            self.host.engine.set_continue()
        else:
            self.host.engine.set_step(1)

    def run_on(self) -> None:
        """Once this stop ends: the rest of the graph, and on until a breakpoint."""
        self.host.engine.graph_steps.finish()
        self.host.engine.set_continue()

    def do_step(self, arg: str) -> None:
        """s(tep) | n(ext)
        Run this node and stop before the graph's next one; after its last,
        at the generated instruction after the graph's call (after a
        backward's last: the next generated instruction to run)."""
        if arg.strip():
            raise CommandError("inside a graph, s and n take no count (one node at a time)")
        self.next_node()
        self.host.resume()

    do_s = do_n = do_next = do_step

    def do_return(self, arg: str) -> None:
        """r(eturn)
        Run the rest of the graph; stop at the generated instruction after its
        call. In a backward (autograd calls it, no generated code): as c."""
        self.run_to_end()
        self.host.resume()

    do_r = do_return

    def do_continue(self, arg: str) -> None:
        """c(ont(inue))
        Run the rest of the graph, and on until a breakpoint."""
        self.run_on()
        self.host.resume()

    do_c = do_cont = do_continue

    # -- looking --------------------------------------------------------------------------
    def do_locals(self, arg: str) -> None:
        """locals
        What the graph has computed so far and still holds, by node name
        (FX frees each value after its last use), inputs included."""
        stop = self.stop
        if isinstance(stop.graph, OutputCodeGraph):
            return kernel_stops.print_locals(self.host, stop, stop.graph)
        for line in graph_steps.values_lines(stop.graph.values(stop.frame.f_locals)):
            self.host.write(line)

    def do_p(self, arg: str) -> None:
        """p NODE | pp NODE
        The value node NODE computed (torch's repr), if the graph holds it."""
        name = arg.strip()
        if not name:
            raise CommandError("usage: p NODE")
        stop = self.stop
        if isinstance(stop.graph, OutputCodeGraph):
            return kernel_stops.print_value(self.host, stop, stop.graph, name)
        names = {n.name for n in stop.graph.nodes}
        if name not in names:
            raise CommandError(f"graph {stop.graph.number} has no node {name!r}")
        value = dict(stop.graph.values(stop.frame.f_locals)).get(name, MISSING)
        if value is MISSING:
            raise CommandError(f"{name}: not computed yet, or freed after its last use")
        self.host.write(safe_repr(value))

    do_pp = do_print = do_p

    def do_where(self, arg: str) -> None:
        """w(here) | bt
        The graph's node, above the generated frame that called it."""
        stop = self.stop
        caller = stop.caller
        if stop.graph.part == "backward":
            from dyndbg.dynamo.graphs.backward import autograd_caller
            caller = autograd_caller(stop.frame)
            if caller is not None:
                self.host.write(f"  {caller.f_code.co_name} at {caller.f_code.co_filename}:"
                                f"{caller.f_lineno}  (autograd runs the backward from here)")
        elif caller is not None:
            self.host.write(f"  {caller.f_code.co_name} at "
                            f"{caller.f_code.co_filename}:{caller.f_lineno}  (generated code)")
        what = "step" if isinstance(stop.graph, OutputCodeGraph) else "node"
        self.host.write(f"> {stop.tag} {what} {stop.node.name}")  # type: ignore[attr-defined]  # an FX node or a CodeStep

    do_w = do_bt = do_where

    def do_list(self, arg: str) -> None:
        """l(ist) | graph
        The graph's nodes, `->` at the one about to run."""
        stop = self.stop
        if isinstance(stop.graph, OutputCodeGraph):
            return kernel_stops.print_list(self.host, stop, stop.graph)
        for node in stop.graph.nodes:
            self.host.write(f"{'->' if node is stop.node else '  '} {graph_steps.node_line(node)}")

    do_l = do_ll = do_graph = do_list
