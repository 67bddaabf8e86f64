"""What watches compiled graphs' code as it runs (issue 50), wired once for
the engine: the graph stepper (`s` at a graph's call, graph_stepping.py),
`catch backward` (graph_backward.py), `b FILE:LINE` inside graphs
(graph_lines.py) and `catch nan` (nan_catch.py), each watching graph codes
through GraphWatches (graph_watches.py: several watchers of one code) over
the tracing mechanism. Each watches only while it is asked to: with no
such breakpoint and nobody stepping, no graph code is watched.
"""
from __future__ import annotations

import types
from typing import Callable

from dyndbg.dynamo.compiles import Registry
from dyndbg.dynamo.graphs.stepping import NoWayIn, runnable_graph
from dyndbg.engine.breakpoints import BreakpointTable
from dyndbg.engine.conditions import GraphEvaluate
from dyndbg.engine.graph_backward import BackwardCatcher
from dyndbg.engine.graph_lines import GraphLineBreaks
from dyndbg.engine.graph_stepping import GraphFrontend, GraphStepper
from dyndbg.engine.graph_watches import GraphWatches
from dyndbg.engine.nan_catch import NanCatcher
from dyndbg.engine.stop import HeldStop
from dyndbg.engine.tracing.tracer import Tracer



class InsideGraphs:
    def __init__(self, tracer: Callable[[], Tracer], breakpoints: BreakpointTable,
                 held: HeldStop, frontend: GraphFrontend, message: Callable[[str], None],
                 registry: Registry, evaluate: GraphEvaluate) -> None:
        self._tracer = tracer
        self._message = message
        # Who watches which compiled graph's code (several at once), over the tracer.
        self.watches = GraphWatches(tracer)
        # Stops inside a compiled graph, node by node (`s` at its call).
        self.steps = GraphStepper(lambda: self.watches, frontend, held)
        # `catch backward`: watches AOT's CompiledFunction.backward while one is enabled.
        self.backward = BackwardCatcher(lambda: self.watches, breakpoints, self.steps, held,
                                        message, _graph_backend, evaluate)
        # `b FILE:LINE` inside compiled graphs: watches them while one is armed.
        self.lines = GraphLineBreaks(lambda: self.watches, breakpoints, self.steps, held,
                                     message, registry, _graph_backend, evaluate)
        # `catch nan`: watches every steppable graph's code while one is enabled.
        self.nan = NanCatcher(lambda: self.watches, breakpoints, self.steps, held, frontend,
                              message, _graph_backend, registry.is_generated, evaluate)
        self.watches.first = self.nan
        self.backward.nan_wants = self.nan.wants_backward
        self.backward.nan_start = self.nan.backward_starts
        self.backward.nan_end = self.nan.backward_ends
        self.compiles = 0                        # generated code objects added so far
        self._said_no_mechanism = False          # a mechanism that cannot: said once a session

    def sync(self) -> None:
        """A `catch backward`, `catch nan` or `b FILE:LINE` inside a graph set,
        disabled or cleared: watched from now on, or not (catch nan watches
        backwards through catch backward's watch)."""
        for line in self.nan.sync(self.compiles):
            self._message(line)
        for note in (self.backward.sync(), self.lines.sync()):
            if note:
                self._message(note)

    def code_added(self) -> None:
        """Dynamo made generated code: catch nan watches its graphs as they come."""
        self.compiles += 1
        if self.nan.armed:
            self.sync()

    def disarm(self) -> None:
        """Detached: nothing watched any more."""
        self.steps.finish()
        self.backward.disarm()
        self.lines.disarm()
        self.nan.disarm()

    def step_into(self, frame: types.FrameType, name: str, backend: str | None) -> str:
        """Enter the compiled graph global `name` at its call in `frame` (the
        engine has set step mode): "" when entered, else the one line saying
        why it is stepped over (where the mechanism cannot watch the graph's
        code, only the first time: that does not change within a session)."""
        try:
            graph = runnable_graph(name, frame.f_globals.get(name), backend)
        except NoWayIn as why:
            return str(why)
        if self.steps.enter(graph, frame):
            return ""
        if self._said_no_mechanism:   # said once: every later `s` would repeat it
            return ""
        self._said_no_mechanism = True
        return (f"graph {graph.number}: the {self._tracer().name} mechanism cannot step into "
                "this graph; stepping over (said once a session)")


def _graph_backend(name: str) -> str | None:
    from dyndbg.dynamo.graphs.views import graph_backend
    return graph_backend(name)
