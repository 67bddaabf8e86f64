"""Requests at a stop inside a compiled graph (issue 50): before one FX node
of the program's own graph runs, entered by stepIn at the graph's call.

The stack trace has the graph as a frame above the generated frame that
called it: its source is the user's file and line the node comes from (the
node's stack trace), so the editor highlights the user's line. Its scope
"Graph values" holds what the graph has computed so far and still holds,
the inputs included; the node's own inputs come first in "Node inputs".
next and stepIn run the node and stop before the next one (after the last,
at the generated instruction after the call), stepOut runs the rest of the
graph and stops there, continue runs on, whatever the granularity (a node,
or an output-code step, is the graph's instruction). The graph frame's
instruction pointer is its node's row in the graph's own address window
(addresses.py): `disassemble` there lists the graph's nodes, or its output
code's steps, as `l` does, each at its user line. The debug console runs the
prompt's graph-stop commands (`locals`, `p NODE`, `l`). What only makes
sense for generated code is refused with the reason.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

from dyndbg.dap.addresses import GraphRow, disassemble_graph, graph_address, graph_serial
from dyndbg.dap.code_requests import disassemble_request
from dyndbg.dap.protocol import RequestError
from dyndbg.dap.stop_requests import console, family_handler, stack_trace, variables_of
from dyndbg.dap.variables import References, variable
from dyndbg.dynamo.graphs import kernel_lines
from dyndbg.dynamo.graphs.inductor_steps import OutputCodeGraph
from dyndbg.dynamo.graphs.lookup import node_frame
from dyndbg.dynamo.graphs.stepping import MISSING, SteppedGraph, node_step
from dyndbg.engine.stop import GraphStop
from dyndbg.engine.targets import LineTarget
from dyndbg.ui.text.graph_steps import node_line
from dyndbg.ui.text.kernel_steps import step_line

if TYPE_CHECKING:
    from dyndbg.dap.hub import Hub

# Frame ids of graph stops: apart from those of generated-code stops (counted
# from 1) and of compile stops (from 1 << 30), so that no id is taken for a
# frame of another kind of stop.
GRAPH_FRAME = 1 << 29        # the graph, before its node
CALLER_FRAME = GRAPH_FRAME + 1   # the generated frame that called it

NOT_GENERATED = "the program is inside compiled graph {n}, between its nodes"
REFUSED = {
    "stepBack": "stepBack: the recording holds generated code only; " + NOT_GENERATED,
    "reverseContinue": "reverseContinue: the recording holds generated code only; "
                       + NOT_GENERATED,
    "exceptionInfo": "exceptionInfo: not stopped at an exception; " + NOT_GENERATED,
    "goto": "goto: a graph runs its nodes in order; " + NOT_GENERATED,
}


def stop_description(stop: GraphStop, shown: str) -> str:
    """The stopped event's description: the stop's own line of what the
    prompt printed for it (`shown`), after any catchpoint's line."""
    lines = shown.splitlines()
    return next((line for line in lines if line.startswith(stop.tag)), stop.tag)


def stop_place(stop: GraphStop) -> tuple[str, int] | None:
    """The user's (file, line) a graph stop shows: at an inductor graph's
    stop of a gutter breakpoint, its line, where the kernel computes nodes
    of it (not the first line the kernel computes); else user_place's."""
    graph = stop.graph
    if isinstance(graph, OutputCodeGraph):
        for bp in stop.breakpoints:
            target = bp.target
            if type(target) is LineTarget:
                found = kernel_lines.stop_at(graph, stop.node, target.file_matches, target.line)
                if found is not None:
                    return found.place
    return user_place(graph, stop.node)


def user_place(graph: SteppedGraph, step: object) -> tuple[str, int] | None:
    """The user's (file, line) of an FX node, or of the first node an
    inductor step computes; None where torch kept none."""
    if isinstance(graph, OutputCodeGraph):
        places = graph.user_places(step)  # type: ignore[arg-type]  # a CodeStep
        return places[0] if places else None
    return node_frame(step)


def graph_rows(graph: SteppedGraph) -> list:
    """What a graph's disassembly lists, a row each, in the order of
    `index_of`: its FX nodes, or its output code's steps (the stops)."""
    return graph.stops if isinstance(graph, OutputCodeGraph) else list(graph.nodes)


def graph_window(graph: SteppedGraph) -> int:
    """The graph's address window (addresses.graph_serial)."""
    return graph_serial(graph.number, graph.part == "backward")


def graph_row(graph: SteppedGraph, step: object) -> GraphRow:
    """A row of the graph's disassembly: as `l` lists it, at its user line."""
    text = step_line(step) if isinstance(graph, OutputCodeGraph) else node_line(step)  # type: ignore[arg-type]  # a CodeStep
    return GraphRow(text, user_place(graph, step))


def step_inputs(stop: GraphStop) -> list[tuple[str, object]]:
    """What the node (or the inductor step) about to run takes, as held now."""
    found = stop.found
    if found is not None:       # `catch nan`: after the node ran, its inputs as before it and its output
        return [*found.inputs, (found.output, found.value)]  # type: ignore[attr-defined]  # a NanFound
    held = stop.frame.f_locals
    graph = stop.graph
    if isinstance(graph, OutputCodeGraph):
        names = [*stop.node.reads, *stop.node.writes]  # type: ignore[attr-defined]  # a CodeStep
        return [(name, held[name]) for name in dict.fromkeys(names) if name in held]
    step = node_step(graph, stop.node, held)
    return [(name, value) for name, value in step.inputs if value is not MISSING]


class GraphStopRequests:
    def __init__(self, requests: "Hub", refs: References) -> None:
        self.requests = requests
        self.refs = refs          # shared with the other stops: no reuse

    @property
    def session(self):
        return self.requests.session

    def checked_stop(self) -> GraphStop:
        stop = self.requests.graph_stop
        if stop is None:
            raise RequestError("not stopped inside a compiled graph")
        return stop

    def handler(self, command: str) -> Callable[[dict], dict | None] | None:
        """This family's handler for `command` at a graph stop, a refusal for
        what needs generated code, or None (the usual one serves)."""
        why = REFUSED.get(command)
        return family_handler(self, command, None if why is None else
                              lambda: why.format(n=self.checked_stop().graph.number))

    # -- frames ----------------------------------------------------------------------------
    def r_stackTrace(self, arguments: dict) -> dict:
        stop = self.checked_stop()
        graph: dict[str, Any] = {"id": GRAPH_FRAME, "column": 1,
                                 "name": f"{stop.tag} {stop.node.name}"}  # type: ignore[attr-defined]  # an FX node or a CodeStep
        index = stop.graph.index_of(stop.node)
        if index >= 0:
            graph["instructionPointerReference"] = graph_address(graph_window(stop.graph), index)
        place = stop_place(stop)
        if place is not None:
            path, line = place
            graph.update(self.requests.code.file_source(path))
            graph["line"] = line
        else:   # torch kept no stack trace for this node: no line of the user's
            graph.update({"line": 0, "presentationHint": "label"})
        frames = [graph]
        caller = stop.caller
        if caller is not None:
            engine = self.requests.engine
            entry = engine.entry_for(caller.f_code)
            instr = None if entry is None else engine.info_for(entry).containing(caller.f_lasti)
            if entry is not None and instr is not None:
                frames.append(self.requests.code.frame_dict(CALLER_FRAME, entry.label(), entry,
                                                            instr, caller.f_code.co_filename))
        return stack_trace(frames, arguments)

    # -- the graph's steps as instructions ------------------------------------------------------
    def r_disassemble(self, arguments: dict) -> dict:
        """The graph's rows in its own window; any other address (the calling
        frame's generated code) as at any stop."""
        request = disassemble_request(arguments)
        stop = self.checked_stop()
        graph = stop.graph
        window = graph_window(graph)
        if request.serial != window:
            return self.requests.code.r_disassemble(arguments)
        rows = graph_rows(graph)
        return {"instructions": disassemble_graph(
            window, len(rows), lambda i: graph_row(graph, rows[i]), stop.tag.strip("[]"),
            request.byte, request.offset, request.instruction_offset, request.instruction_count)}

    # -- scopes and variables ----------------------------------------------------------------
    def r_scopes(self, arguments: dict) -> dict:
        stop = self.checked_stop()
        frame_id = arguments.get("frameId")
        if frame_id == CALLER_FRAME and stop.caller is not None:
            names = sorted(stop.caller.f_locals.items())
            return {"scopes": [self._scope("Locals", "locals", names)]}
        if frame_id not in (None, GRAPH_FRAME):
            raise RequestError(f"no frame {frame_id!r} at this stop (frame ids die on resume)")
        inputs = step_inputs(stop)
        held = stop.graph.values(stop.frame.f_locals)
        return {"scopes": [self._scope("Node inputs", "arguments", inputs),
                           self._scope("Graph values", "locals", held)]}

    def _scope(self, name: str, hint: str, items: Sequence[tuple[str, object]]) -> dict:
        return {"name": name, "presentationHint": hint, "expensive": False,
                "variablesReference": self.refs.scope(list(items)),
                "namedVariables": len(items)}

    def r_variables(self, arguments: dict) -> dict:
        self.checked_stop()
        return variables_of(self.refs, arguments, "when the graph goes on")

    # -- evaluation ------------------------------------------------------------------------
    def r_evaluate(self, arguments: dict) -> dict:
        expression = arguments.get("expression")
        if not isinstance(expression, str):
            raise RequestError("'expression' must be a string")
        stop = self.checked_stop()
        if (arguments.get("context") or "repl") == "repl":
            return console(self.requests, expression)
        # hover and watch: a value the graph's frame holds (a node's, a
        # buffer's, an input's), read, nothing run
        name = expression.strip()
        value = dict(stop.graph.values(stop.frame.f_locals)).get(name, MISSING)
        if value is MISSING:
            raise RequestError(f"{name}: graph {stop.graph.number} holds no value of that "
                               "name now (not computed yet, freed, or no such node; the "
                               f"debug console's `p {name}` says which)")
        result = variable("", value, self.refs)
        return {"result": result["value"], "type": result.get("type", ""),
                "variablesReference": result["variablesReference"]}

    # -- running on ------------------------------------------------------------------------
    def r_continue(self, arguments: dict) -> dict:
        self.checked_stop()
        self.session.graph_commands.run_on()
        return {"allThreadsContinued": False}

    def r_next(self, arguments: dict) -> None:
        self.checked_stop()
        self.session.graph_commands.next_node()

    r_stepIn = r_next

    def r_stepOut(self, arguments: dict) -> None:
        self.checked_stop()
        self.session.graph_commands.run_to_end()

    def r_pause(self, arguments: dict) -> None:
        """Already stopped."""
