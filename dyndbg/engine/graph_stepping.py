"""Stepping into a compiled graph, node by node (StopKind.GRAPH, issue 50).

`s` at the CALL of a `__compiled_fn_*` global whose backend runs an FX
GraphModule (eager, aot_eager's forward) enters it: the tracing mechanism
watches that one code object (Tracer.watch_graph); each of its line events
before a stepped FX node is a GraphStop. `s`/`n` there go to the next node,
`r` runs to the graph's end, `c` continues; in each case once the graph
returns the engine is back in its step mode, so with `s`, `n` and `r` the
next stop is the generated instruction after the call.

The graph that runs is the program's own: only line events are read and
its frame's locals looked at, never written.
"""
from __future__ import annotations

import types
from typing import Callable, Protocol

from dyndbg.dynamo.graphs.stepping import SteppedGraph
from dyndbg.engine.breakpoints import Breakpoint
from dyndbg.engine.stop import GraphStop, HeldStop, StopReason
from dyndbg.engine.graph_watches import GraphWatches


class GraphFrontend(Protocol):
    def interact_graph(self, stop: GraphStop) -> None: ...


class GraphStepper:
    """The graph entered by `s` at its call, while it runs (one at a time)."""

    def __init__(self, tracer: Callable[[], GraphWatches], frontend: GraphFrontend,
                 held: HeldStop) -> None:
        self._tracer = tracer
        self.frontend = frontend
        self.held = held
        self.graph: SteppedGraph | None = None
        self.caller: types.FrameType | None = None    # the generated frame that calls it
        self.frame: types.FrameType | None = None     # the graph's frame, once started
        self.stepping = False                         # stop before each node
        # `catch backward`: at the first node, the catchpoints that stop (none: no stop)
        self.first: Callable[[types.FrameType], list[Breakpoint]] | None = None
        # told once it leaves a graph, with its frame if that runs on (`c`, `r`):
        # graph_lines.py watches its code again, and its later armed nodes
        self.on_leave: Callable[[SteppedGraph, types.FrameType | None], object] | None = None

    def enter(self, graph: SteppedGraph, caller: types.FrameType,
              first: Callable[[types.FrameType], list[Breakpoint]] | None = None) -> bool:
        """Stop before the first node of the next run of `graph` called from
        `caller` (through torch's wrappers); False where the tracing mechanism
        cannot watch its code. `first`: a catchpoint's, deciding at the first
        node whether to stop at all (then with those breakpoints)."""
        self.leave()
        if not self._tracer().watch_graph(graph.code, self):
            return False
        self.graph, self.caller, self.frame, self.stepping = graph, caller, None, True
        self.first = first
        return True

    def finish(self) -> None:
        """`r`/`c` in the graph: no more stops in it; it runs to its end."""
        self.stepping = False
        frame = self.frame
        if frame is not None and not self._tracer().shared(frame, self):
            frame.f_trace_lines = False
        self.leave(frame)

    def leave(self, running: types.FrameType | None = None) -> None:
        graph = self.graph
        if graph is not None:
            self._tracer().unwatch_graph(graph.code, self)
        self.graph = self.caller = self.frame = None
        self.stepping = False
        self.first = None
        if graph is not None and self.on_leave is not None:
            self.on_leave(graph, running)

    def adopt(self, graph: SteppedGraph, caller: types.FrameType | None,
              frame: types.FrameType) -> None:
        """Step on in `frame`, a run of `graph` under way (`catch nan` stopped
        in it): its next node's line stops if the stop ends with `s`."""
        self.leave()
        self._tracer().adopt(frame, self)
        self.graph, self.caller, self.frame, self.stepping = graph, caller, frame, True

    @property
    def inside(self) -> bool:
        return self.frame is not None

    # -- the mechanism's events (under ENGINE_LOCK) ---------------------------------
    def on_graph_start(self, frame: types.FrameType) -> bool:
        """The graph's code starts: the frame stepped into if called, through
        torch's wrappers, from the generated frame that was at the call."""
        if self.graph is None or self.frame is not None or not self.graph.is_frame(frame):
            return False
        back = frame.f_back
        while back is not None and back is not self.caller:
            back = back.f_back
        if back is None:
            return False   # the same graph called from elsewhere (another thread)
        self.frame = frame
        self.graph.code = frame.f_code   # for a lazy GraphModule, made as it started
        return True

    def on_graph_line(self, frame: types.FrameType) -> None:
        graph = self.graph
        if graph is None or frame is not self.frame or not self.stepping:
            return
        node = graph.node_at(frame.f_lineno)
        if node is None or not graph.stepped(node):
            return
        stop = GraphStop(frame, graph, node, self.caller)
        if self.first is not None:
            first, self.first = self.first, None
            stop.breakpoints = first(frame)
            if not stop.breakpoints:      # a condition or an ignore count: no stop
                self.finish()
                return
            stop.reason = StopReason.BREAKPOINT
        with self.held.holding(stop):
            self.frontend.interact_graph(stop)

    def on_graph_return(self, frame: types.FrameType) -> None:
        if frame is self.frame:
            self.leave()
