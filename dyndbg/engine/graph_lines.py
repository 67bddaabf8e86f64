"""`b FILE:LINE` inside compiled graphs (issue 50): each graph whose FX
nodes come from that line (forward, and AOT's backward, whose nodes keep the
forward's stack trace) is a location N.M of the breakpoint, as gdb places
one in every inlined copy; the breakpoint stops before the first node of
that line each time the graph runs.

Locations are found when the breakpoints change and after each compile
(a pending breakpoint resolves when a graph holding its line is compiled).
While no graph location is armed (enabled, of an enabled breakpoint) the
tracing mechanism watches nothing; while one is, it watches only the codes
of the graphs holding armed lines (GraphWatches.watch_graph), and in those frames
only the lines up to the last armed node. At an armed node the breakpoint's
hit is counted and its condition (the graph frame's node values as names)
and ignore count applied; if it stops, the graph stepper
(graph_stepping.py) takes the frame over, so `s`/`n` go on node by node.

Only the graph frame's locals are read: the graph computes what it computes.
"""
from __future__ import annotations

import types
from typing import Callable, NamedTuple

from dyndbg.dynamo import Registry
from dyndbg.dynamo.graphs import line_places
from dyndbg.dynamo.graphs.stepping import GraphCode
from dyndbg.engine.breakpoints import Breakpoint, BreakpointTable, Location
from dyndbg.engine.graph_stepping import GraphStepper
from dyndbg.engine.stop import HeldStop
from dyndbg.engine.targets import LineTarget
from dyndbg.engine.graph_watches import GraphWatches, SaidOnce


class GraphKey(NamedTuple):
    """One graph that runs: its `__compiled_fn_*` global and its part."""

    name: str
    part: str            # "forward" or "backward"


def graph_where(graph: GraphCode) -> str:
    """A graph location as `b` lists it: `graph 1 aot_eager forward`,
    `backward of graph 1 aot_eager` (as the graph stop's tag says it)."""
    if graph.part == "backward":
        return f"backward of graph {graph.number} {graph.backend}"
    return f"graph {graph.number} {graph.backend} {graph.part}"


def _line_target(bp: Breakpoint) -> bool:
    return type(bp.target) is LineTarget


class GraphLineBreaks:
    """Watches the graphs holding armed line breakpoints (GraphEvents)."""

    def __init__(self, tracer: Callable[[], GraphWatches], breakpoints: BreakpointTable,
                 stepper: GraphStepper, held: HeldStop, message: Callable[[str], None],
                 registry: Registry, backend_of: Callable[[str], str | None],
                 evaluate: Callable[[types.FrameType, str], object]) -> None:
        self._tracer = tracer
        self.breakpoints = breakpoints
        self.stepper = stepper
        self.held = held
        self.message = message
        self.registry = registry            # the generated code seen: graph globals it calls
        self.backend_of = backend_of
        self.evaluate = evaluate            # a condition, in the graph's frame
        self.graphs: dict[GraphKey, GraphCode] = {}
        self._seen = (-1, -1)               # (table version, compiled) last resolved
        self._armed: dict[GraphKey, GraphCode] = {}
        # what the tracer watches for us: id(code) (None: a code not made yet) -> code
        self._watching: dict[int | None, types.CodeType | None] = {}
        self._once = SaidOnce()                      # lines said once a session
        # the graph frame running now, its graph, and its armed nodes not reached yet
        self._frame: types.FrameType | None = None
        self._graph: GraphCode | None = None
        self._pending: dict[str, list[tuple[Breakpoint, Location]]] = {}
        self._nodes_cache: dict[GraphKey, tuple[int, GraphCode, dict]] = {}
        stepper.on_leave = self._left

    # -- locations ------------------------------------------------------------------
    def wanted(self) -> list[Breakpoint]:
        return [bp for bp in self.breakpoints if _line_target(bp)]

    def resolve(self) -> None:
        """Number the graph locations of every `b FILE:LINE` (cheap when neither
        the table nor the generated code changed since)."""
        seen = (self.breakpoints.version, len(self.registry.by_id))
        if seen == self._seen:
            return
        self._seen = seen
        wanted = self.wanted()
        if not wanted:
            return
        names = [name for entry in self.registry.entries() for name in entry.code.co_names]
        for name, value in line_places.graph_globals(names):
            if any(key.name == name for key in self.graphs):
                continue
            for graph in line_places.graph_parts(name, value, self.backend_of(name)):
                self.graphs[GraphKey(name, graph.part)] = graph
        for key, graph in self.graphs.items():
            nodes = line_places.line_nodes(graph)
            for bp in wanted:
                target = bp.target
                if line_places.first_node_of(nodes, target.file_matches, target.line) is not None:  # type: ignore[attr-defined]  # a LineTarget
                    bp.graph_location(key, graph_where(graph))

    def _armed_nodes(self, graph: GraphCode, key: GraphKey
                     ) -> dict[str, list[tuple[Breakpoint, Location]]]:
        """node name -> the armed breakpoints (with their location) stopping
        before it; found once per table version (each run of the graph asks)."""
        cached = self._nodes_cache.get(key)
        if cached is not None and cached[0] == self.breakpoints.version and cached[1] is graph:
            return dict(cached[2])
        nodes = line_places.line_nodes(graph)
        armed: dict[str, list[tuple[Breakpoint, Location]]] = {}
        for bp in self.wanted():
            location = bp.graph_location_at(key)
            if not bp.enabled or location is None or not location.enabled:
                continue
            name = line_places.first_node_of(nodes, bp.target.file_matches, bp.target.line)  # type: ignore[attr-defined]  # a LineTarget
            if name is not None:
                armed.setdefault(name, []).append((bp, location))
        if graph.nodes:      # a backward's nodes are known once it compiled
            self._nodes_cache[key] = (self.breakpoints.version, graph, armed)
        return dict(armed)

    # -- watching -------------------------------------------------------------------
    def sync(self) -> str:
        """Resolve, then watch the graphs with armed locations and nothing else.
        "" or the one line saying why it cannot."""
        self.resolve()
        armed = {key: graph for key, graph in self.graphs.items()
                 if self._armed_nodes(graph, key)} if self.wanted() else {}
        self._armed = armed
        return self.rewatch()

    def rewatch(self) -> str:
        """Watch the armed graphs' codes (again: the graph stepper, leaving a
        graph it stepped, unwatches its code)."""
        if self.stepper.graph is not None:
            return ""     # stepping a graph: its code is the stepper's until it leaves
        tracer = self._tracer()
        codes = {}
        for graph in self._armed.values():
            code = line_places.code_of(graph)
            codes[None if code is None else id(code)] = code
        for key, code in self._watching.items():
            if key not in codes:
                tracer.unwatch_graph(code, self)
        self._watching = {}
        for key, code in codes.items():
            if not tracer.watch_graph(code, self):
                return self._once(f"dyndbg: the tracing mechanism ({tracer.name}) cannot "
                                  "watch this graph's code: a breakpoint inside it will not "
                                  "stop there")
            self._watching[key] = code
        return ""

    def _left(self, graph: object, running: types.FrameType | None) -> None:
        """The stepper left a graph: its code is watched again; if its frame
        runs on (`c`, `r` at a stop in it), its armed nodes after the current
        one stop it still, as later breakpoints in a function do."""
        if running is None or self._frame is not None:
            self.rewatch()
            return
        # the same graph, or `catch backward`'s own copy of one of ours
        found = next(((k, g) for k, g in self._armed.items()
                      if g is graph or g.code is running.f_code
                      or (g.code is None and g.is_frame(running))), None)
        if found is not None and found[1].code is None:
            found[1].code = running.f_code
        self.rewatch()
        if found is None:
            return
        key, mine = found
        here = mine.index_of(mine.node_at(running.f_lineno))
        pending = {name: reached for name, reached in self._armed_nodes(mine, key).items()
                   if mine.index_of(_node_named(mine, name)) > here}
        if pending:
            self._frame, self._graph, self._pending = running, mine, pending
            self._tracer().adopt(running, self)    # its next lines come here too
            running.f_trace_lines = True

    def disarm(self) -> None:
        tracer = self._tracer()
        for code in self._watching.values():
            tracer.unwatch_graph(code, self)
        self._watching = {}
        self._armed = {}
        self._seen = (-1, -1)
        self._frame = self._graph = None
        self._pending = {}


    # -- the mechanism's events (under ENGINE_LOCK) -------------------------------------
    def on_graph_start(self, frame: types.FrameType) -> bool:
        code = frame.f_code
        if not code.co_filename.startswith("<eval_with_key>"):
            return False
        if self.held.current is not None or self.stepper.graph is not None or \
                self._frame is not None:
            return False   # at a prompt (an expression runs a graph), or in a graph already
        for key, graph in self._armed.items():
            if graph.code is code or (graph.code is None and graph.is_frame(frame)):
                break
        else:
            return False
        if graph.code is None:
            graph.code = code       # made as it started; the mechanism keys it from now on
            self._watching.pop(None, None)
            self._watching[id(code)] = code
        pending = self._armed_nodes(graph, key)
        if not pending:
            return False
        self._frame, self._graph, self._pending = frame, graph, pending
        return True

    def on_graph_line(self, frame: types.FrameType) -> None:
        graph = self._graph
        if frame is not self._frame or graph is None:
            return
        if None not in self._watching and any(g.code is None for g in self._armed.values()):
            self.rewatch()      # another lazy graph still waits for its code
        node = graph.node_at(frame.f_lineno)
        reached = self._pending.pop(str(getattr(node, "name", "")), None) if node else None
        if not reached:
            return
        stopping = self.breakpoints.take(reached, lambda expr: self.evaluate(frame, expr),
                                         self.message)
        if not self._pending:
            frame.f_trace_lines = False      # no armed node left in this run
        if not stopping:
            return
        self._frame = self._graph = None
        caller = self._generated_caller(frame) if graph.part == "forward" else None
        caller = caller or frame.f_back
        if caller is None or not self.stepper.enter(graph, caller, lambda _frame: stopping) \
                or not self.stepper.on_graph_start(frame):
            self.stepper.leave()
            return
        # this line and the rest of the frame's events go to the stepper too
        # (GraphWatches serves this line to a watcher adopted while serving it):
        # it stops here, `s` steps on, the frame's return ends it
        self._tracer().adopt(frame, self.stepper)
        frame.f_trace_lines = True

    def _generated_caller(self, frame: types.FrameType) -> types.FrameType | None:
        """The innermost generated frame a forward graph's frame runs under."""
        back = frame.f_back
        while back is not None and id(back.f_code) not in self.registry.by_id:
            back = back.f_back
        return back

    def on_graph_return(self, frame: types.FrameType) -> None:
        if frame is self._frame:
            self._frame = self._graph = None
            self._pending = {}



def _node_named(graph: GraphCode, name: str) -> object | None:
    return next((n for n in graph.nodes if getattr(n, "name", None) == name), None)
