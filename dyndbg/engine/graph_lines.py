"""`b FILE:LINE` inside compiled graphs (issue 50): each graph whose FX
nodes come from that line (forward, and AOT's backward, whose nodes keep the
forward's stack trace; inductor's output code, whose kernels compute them)
is a location N.M of the breakpoint, as gdb places one in every inlined
copy; the breakpoint stops before the first node of that line each time the
graph runs (in an inductor graph, before the first step of the output
code's `call`, a kernel, computing one: dynamo/graphs/kernel_lines.py; in
inductor's backward, the first whose comment names a node of the line as
computed there or, naming none, whose line map records the line).

Inductor's backward is compiled inside the first backward(): until then it
is a location where the graph AOT will compile holds the line (listed as
not compiled yet), watched as None (any call offered) while armed; its
`call` recognized as it starts, its kernels are read and its stop found.

Locations are found when the breakpoints change and after each compile
(a pending breakpoint resolves when a graph holding its line is compiled).
While no graph location is armed (enabled, of an enabled breakpoint) the
tracing mechanism watches nothing; while one is, it watches only the codes
of the graphs holding armed lines (GraphWatches.watch_graph), and in those frames
only the lines up to the last armed node. At an armed node the breakpoint's
hit is counted and its condition (the graph frame's node values as names;
in inductor's `call`, `condition_names`) and ignore count applied; if it
stops, the graph stepper (graph_stepping.py) takes the frame over, so
`s`/`n` go on node by node (kernel by kernel).

Only the graph frame's locals are read: the graph computes what it computes.
"""
from __future__ import annotations

import functools
import types
from typing import Callable, NamedTuple

from dyndbg.dynamo import Registry
from dyndbg.dynamo.graphs import kernel_lines, line_places
from dyndbg.dynamo.graphs.inductor_backward import BackwardOutputCode
from dyndbg.dynamo.graphs.inductor_steps import OutputCodeGraph
from dyndbg.dynamo.graphs.line_places import StopKey
from dyndbg.dynamo.graphs.stepping import SteppedGraph
from dyndbg.engine.breakpoints import Breakpoint, BreakpointTable, Location
from dyndbg.engine.conditions import GraphEvaluate
from dyndbg.engine.graph_stepping import GraphStepper
from dyndbg.engine.stop import HeldStop
from dyndbg.engine.targets import LineTarget
from dyndbg.engine.graph_watches import GraphWatches, SaidOnce


class GraphKey(NamedTuple):
    """One graph that runs: its `__compiled_fn_*` global and its part."""

    name: str
    part: str            # "forward" or "backward"


def graph_where(graph: SteppedGraph) -> str:
    """A graph location as `b` lists it: `graph 1 aot_eager forward`,
    `backward of graph 1 aot_eager`, `graph 2 inductor forward` (as the
    graph stop's tag says it)."""
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
                 evaluate: GraphEvaluate) -> None:
        self._tracer = tracer
        self.breakpoints = breakpoints
        self.stepper = stepper
        self.held = held
        self.message = message
        self.registry = registry            # the generated code seen: graph globals it calls
        self.backend_of = backend_of
        self.evaluate = evaluate            # a condition, in the graph's frame
        self.graphs: dict[GraphKey, SteppedGraph] = {}
        self._seen = (-1, -1)               # (table version, compiled) last resolved
        self._armed: dict[GraphKey, SteppedGraph] = {}
        # what the tracer watches for us: id(code) (None: a code not made yet) -> code
        self._watching: dict[int | None, types.CodeType | None] = {}
        self._once = SaidOnce()                      # lines said once a session
        # the graph frame running now, its graph, and its armed nodes not reached yet
        self._frame: types.FrameType | None = None
        self._graph: SteppedGraph | None = None
        self._pending: dict[StopKey, list[tuple[Breakpoint, Location]]] = {}
        self._nodes_cache: dict[GraphKey, tuple[int, SteppedGraph, dict]] = {}
        self._first_cache: dict[tuple[GraphKey, str], StopKey | None] = {}
        self._codes: set[int] = set()       # id() of the armed graphs' codes
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
            for bp in wanted:
                where = self._where(graph, key, bp)
                if where is not None:
                    bp.graph_location(key, where).where = where

    def _where(self, graph: SteppedGraph, key: GraphKey, bp: Breakpoint) -> str | None:
        """The location bp's line has in the graph, as `b` lists it; None: none.
        An inductor backward not compiled yet is one where the graph AOT will
        compile holds the line: whether a kernel computes it is known when
        it compiles (at the first backward(), its `call` starting)."""
        if self._first_stop(graph, key, bp) is not None:
            return graph_where(graph)
        target = bp.target
        assert isinstance(target, LineTarget)
        if isinstance(graph, BackwardOutputCode) and graph.code is None:
            if not line_places.traced_holds(graph, target.file_matches, target.line):
                return None
            return (graph_where(graph) + " (not compiled yet: it stops only if one of its "
                    "kernels computes the line, read at its first backward())")
        if bp.graph_location_at(key) is not None:    # listed before it compiled
            return graph_where(graph) + " (none of its kernels computes the line)"
        return None

    def _waits(self, graph: SteppedGraph, key: GraphKey) -> bool:
        """An inductor backward not compiled yet with an armed location: watched
        (as None) until its `call` starts, its kernels read then."""
        if not isinstance(graph, BackwardOutputCode) or graph.code is not None:
            return False
        return any(bp.enabled and (loc := bp.graph_location_at(key)) is not None and loc.enabled
                   for bp in self.wanted())

    def _first_stop(self, graph: SteppedGraph, key: GraphKey, bp: Breakpoint) -> StopKey | None:
        """The stop of bp's line in this graph (found once a graph and line)."""
        target = bp.target
        line = (key, target.describe())
        if line in self._first_cache:
            return self._first_cache[line]
        assert isinstance(target, LineTarget)
        stop = line_places.first_stop(graph, target.file_matches, target.line)
        if line_places.settled(graph):   # a backward's: of the graph AOT will compile, until then
            self._first_cache[line] = stop
        return stop

    def _armed_nodes(self, graph: SteppedGraph, key: GraphKey
                     ) -> dict[StopKey, list[tuple[Breakpoint, Location]]]:
        """stop key (node name, output code line) -> the armed breakpoints
        (with their location) stopping before it; found once per table
        version (each run of the graph asks)."""
        cached = self._nodes_cache.get(key)
        if cached is not None and cached[0] == self.breakpoints.version and cached[1] is graph:
            return dict(cached[2])
        armed: dict[StopKey, list[tuple[Breakpoint, Location]]] = {}
        for bp in self.wanted():
            location = bp.graph_location_at(key)
            if not bp.enabled or location is None or not location.enabled:
                continue
            stop = self._first_stop(graph, key, bp)
            if stop is not None:
                armed.setdefault(stop, []).append((bp, location))
        if line_places.settled(graph):      # a backward's nodes are known once it compiled
            self._nodes_cache[key] = (self.breakpoints.version, graph, armed)
        return dict(armed)

    # -- watching -------------------------------------------------------------------
    def sync(self) -> str:
        """Resolve, then watch the graphs with armed locations and nothing else.
        "" or the one line saying why it cannot."""
        self.resolve()
        armed = {key: graph for key, graph in self.graphs.items()
                 if self._armed_nodes(graph, key) or self._waits(graph, key)} \
            if self.wanted() else {}
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
        self._codes = {key for key in codes if key is not None}
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
        pending = {stop: reached for stop, reached in self._armed_nodes(mine, key).items()
                   if line_places.stop_index(mine, stop) > here}
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
        self._codes = set()


    # -- the mechanism's events (under ENGINE_LOCK) -------------------------------------
    def on_graph_start(self, frame: types.FrameType) -> bool:
        code = frame.f_code
        if id(code) not in self._codes and not code.co_filename.startswith("<eval_with_key>") \
                and not (code.co_name == "call" and None in self._watching):
            return False      # neither an armed graph's code nor a lazy graph's, made now
        if self.held.current is not None or self.stepper.graph is not None or \
                self._frame is not None:
            return False   # at a prompt (an expression runs a graph), or in a graph already
        for key, graph in self._armed.items():
            if graph.code is code or (graph.code is None and graph.is_frame(frame)):
                break
        else:
            return False
        if graph.code is None or id(code) not in self._codes:
            graph.code = code       # made as it started; the mechanism keys it from now on
            self._watching.pop(None, None)
            self._watching[id(code)] = code
            self._codes.add(id(code))
            self._seen = (-1, -1)   # its locations' labels, read again (an inductor backward's)
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
        stop = line_places.stop_key(graph, node) if node is not None else None
        reached = self._pending.pop(stop, None) if stop is not None else None
        if not reached:
            return
        stopping = self.breakpoints.take(
            reached, lambda expr: self._condition(frame, graph, node, expr), self.message)
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
        # this line and the rest of the frame's events go to the stepper (it
        # watched the code only now, the frame had started): it stops here, `s`
        # steps on, the frame's return ends it
        frame.f_trace_lines = True
        self._tracer().serve(frame, self.stepper)

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

    def _condition(self, frame: types.FrameType, graph: SteppedGraph, node: object,
                   expression: str) -> object:
        """A condition in the graph's frame: an FX graph's locals are its node
        values; inductor's `call`, condition_names' (what it holds now)."""
        if isinstance(graph, OutputCodeGraph):
            names = kernel_lines.condition_names(graph, node, frame.f_locals,
                                                 _names_read(expression))
            try:
                return self.evaluate(frame, expression, names)
            except NameError as error:
                if error.name not in {getattr(n, "name", None) for n in graph.nodes}:
                    raise
                raise NameError(f"{error.name!r} is a node of graph {graph.number} that no buffer "
                                "holds before this step (fused into a kernel, not computed yet, "
                                f"or freed: `p {error.name}` there says which)") from None
        return self.evaluate(frame, expression)


@functools.lru_cache(maxsize=64)
def _names_read(expression: str) -> frozenset[str] | None:
    """The names a condition's code reads (None: it does not compile; its
    evaluation says why)."""
    try:
        return frozenset(compile(expression, "<condition>", "eval").co_names)
    except SyntaxError:
        return None
