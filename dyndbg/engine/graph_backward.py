"""`catch backward [N]`: stop when a compiled graph's backward starts inside
`loss.backward()`, before its first FX node (issue 50).

While an enabled `catch backward` exists (only then: nothing is watched
otherwise), the tracing mechanism watches one code object, AOT autograd's
`CompiledFunction.backward`, which autograd calls for every compiled
graph's backward (dynamo/graphs/backward.py). When it starts for a graph a
catchpoint names, the graph stepper (graph_stepping.py) is pointed at that
graph's backward GraphModule (aot_eager) or inductor's output code for it
(dynamo/graphs/inductor_backward.py), as `s` at a forward graph's call
points it at the forward's: its first node's (or output-code step's) line
stops, if the catchpoint's condition and ignore count let it (counted as a
hit there); then `s`/`n` step its nodes or kernels and `r`/`c` run on.
Where the backward is compiled in this call, its code is recognized as it
starts (any call is offered meanwhile: Tracer.watch_graph(None)). Before
that compile, the backward graph's nodes, with their stack traces, are
kept (inductor_backward.save_account): AOT strips them as it caches it.

Only the frames are read: the backward computes what it computes.
"""
from __future__ import annotations

import types
from typing import Callable

from dyndbg.dynamo.graphs import backward
from dyndbg.dynamo.graphs.inductor_backward import save_account
from dyndbg.dynamo.graphs.stepping import NoWayIn, SteppedGraph
from dyndbg.engine.breakpoints import Breakpoint, BreakpointTable
from dyndbg.engine.graph_stepping import GraphStepper
from dyndbg.engine.stop import HeldStop
from dyndbg.engine.targets import BackwardCatchTarget
from dyndbg.engine.graph_watches import GraphWatches, SaidOnce


class BackwardCatcher:
    """Watches `CompiledFunction.backward` while `catch backward` is set."""

    def __init__(self, tracer: Callable[[], GraphWatches], breakpoints: BreakpointTable,
                 stepper: GraphStepper, held: HeldStop, message: Callable[[str], None],
                 backend_of: Callable[[str], str | None],
                 evaluate: Callable[[types.FrameType, str], object]) -> None:
        self._tracer = tracer
        self.breakpoints = breakpoints
        self.stepper = stepper
        self.held = held
        self.message = message
        self.backend_of = backend_of
        self.evaluate = evaluate                     # a condition, in the graph's frame
        self._code: types.CodeType | None = None    # watched now
        self._version = -1
        self._once = SaidOnce()                      # lines said once a session
        # the backward being waited for: (CompiledFunction, global, graph number)
        self._waiting: tuple[type, str, int] | None = None
        # `catch nan` (nan_catch.py): whether it checks backwards now, and told
        # of each backward graph as it starts and of the end of its call
        self.nan_wants: Callable[[], bool] = lambda: False
        self.nan_start: Callable[[SteppedGraph], None] = lambda graph: None
        self.nan_end: Callable[[], None] = lambda: None

    def catchpoints(self) -> list[Breakpoint]:
        return [bp for bp in self.breakpoints
                if bp.enabled and isinstance(bp.target, BackwardCatchTarget)]

    def sync(self) -> str:
        """Watch while an enabled `catch backward` exists, else not (cheap when
        the table did not change). "" or the one line saying why it cannot."""
        if self._version == self.breakpoints.version:
            return ""
        self._version = self.breakpoints.version
        wanted = bool(self.catchpoints()) or self.nan_wants()
        if wanted == (self._code is not None):
            return ""
        if not wanted:
            self.disarm()
            return ""
        found, code = backward.backward_entry_code()
        if found is backward.Entry.NOT_LOADED:
            self._version = -1      # no graph compiled by AOT yet: again after each compile
            return ""
        if code is None:
            return self._once("dyndbg: catch backward: this torch's AOT autograd has no "
                              "CompiledFunction.backward dyndbg knows; it cannot stop")
        tracer = self._tracer()
        if not tracer.watch_graph(code, self):
            return self._once(f"dyndbg: catch backward: the tracing mechanism ({tracer.name}) "
                              "cannot watch AOT autograd's backward here; it will not stop")
        self._code = code
        return ""

    def disarm(self) -> None:
        if self._code is not None:
            self._tracer().unwatch_graph(self._code, self)
            self._code = None
        self._version = -1


    # -- the mechanism's events for CompiledFunction.backward (under ENGINE_LOCK) ----
    def on_graph_start(self, frame: types.FrameType) -> bool:
        """A compiled backward starts: whether a catchpoint names its graph;
        if so the stepper watches its GraphModule (and this frame's end)."""
        if self.held.current is not None or self.stepper.graph is not None:
            return False   # at a prompt (an expression ran backward), or in a graph already
        try:
            cls = backward.function_class(frame)
            found = backward.graph_of(cls) if cls is not None else None
        except Exception as error:  # noqa: BLE001 - a torch change: said once, no stop
            said = self._once(f"dyndbg: catch backward: could not read which graph's backward "
                              f"runs ({type(error).__name__}: {error}); no stop")
            if said:
                self.message(said)
            return False
        if found is None:
            return False
        name, number = found
        try:
            save_account(cls)  # type: ignore[arg-type]  # found above
        except Exception:  # noqa: BLE001 - a torch change: its kernels' lines are not known
            pass
        nan = self.nan_wants()      # then its return is wanted too (nan_end)
        if nan:
            try:
                self.nan_start(backward.backward_graph(cls, name, number, self.backend_of(name)))  # type: ignore[arg-type]  # found above
            except NoWayIn:
                pass    # said below where a catch backward names it
        reached = [bp for bp in self.catchpoints() if bp.target.matches(number)]  # type: ignore[attr-defined]  # a BackwardCatchTarget
        if not reached:
            return nan
        try:
            graph = backward.backward_graph(cls, name, number, self.backend_of(name))  # type: ignore[arg-type]  # found above
        except NoWayIn:
            self._no_way_in(cls, name, number)  # type: ignore[arg-type]  # found above
            return nan

        self._waiting = (cls, name, number)     # type: ignore[assignment]  # found above

        def first(graph_frame: types.FrameType) -> list[Breakpoint]:
            return self.breakpoints.take([(bp, None) for bp in reached],
                                         lambda expr: self.evaluate(graph_frame, expr),
                                         self.message)
        return self.stepper.enter(graph, frame, first) or nan

    def on_graph_line(self, frame: types.FrameType) -> None:
        pass

    def on_graph_return(self, frame: types.FrameType) -> None:
        """CompiledFunction.backward returns: a backward graph not entered
        (its code never ran) is no longer waited for."""
        self.nan_end()
        if self.stepper.caller is frame:
            entered = self.stepper.inside
            self.stepper.leave()
            waiting, self._waiting = self._waiting, None
            if not entered and waiting is not None:
                self._no_way_in(*waiting)   # compiled just now, with no GraphModule to step

    def _no_way_in(self, cls: type, name: str, number: int) -> None:
        try:
            backward.backward_graph(cls, name, number, self.backend_of(name))
        except NoWayIn as why:
            said = self._once(f"dyndbg: {why}")
            if said:
                self.message(said)

