"""`catch nan`: stop right after the first FX node (or inductor kernel)
whose output holds a NaN or an Inf (issue 50).

While an enabled `catch nan` exists (only then: nothing is watched
otherwise), every compiled graph whose code can be watched (eager,
aot_eager's forward, inductor's output code: dynamo/graphs/stepping.py's
runnable_graph) has its code watched (GraphWatches), those compiled so far
and, as dynamo adds generated code, the new ones. A lazy GraphModule
(AOT's) makes its code at its first call: `_LazyGraphModule._lazy_forward`
is watched until it has, then its code. aot_eager's and inductor's backwards
come through catch backward's watch of CompiledFunction.backward
(graph_backward.py), each backward's code watched as it starts.

At each line of a watched graph's frame, the node(s) that ran since the
last line are checked (dynamo/graphs/nan_check.py: one sum a floating
tensor, isfinite where it is not finite); inductor: the buffers each
kernel step wrote. The first with a NaN or an Inf is a GraphStop (reason
BREAKPOINT, the catchpoint in it), once per run of the graph; `s` from
there steps the graph on from the next node (GraphStepper.adopt). A graph
whose backend gives no way in is checked at its outputs in generated code
(NanCatchTarget): the instruction after its call stops.

The values are read from the graph frame's locals only: the graph computes
what it computes. An input of the node is held from the line before it ran
(FX frees a value on the line of its last use) until the next line.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from dyndbg.cpython import CALL_OPNAMES
from dyndbg.dynamo.compiles import GeneratedCode
from dyndbg.dynamo.graphs import nan_check
from dyndbg.dynamo.graphs.inductor_steps import OutputCodeGraph
from dyndbg.dynamo.graphs.output_code import StepKind
from dyndbg.dynamo.graphs.stepping import GraphCode, NoWayIn, SteppedGraph, runnable_graph
from dyndbg.engine.breakpoints import Breakpoint, BreakpointTable
from dyndbg.engine.codeinfo import CodeInfo, Instr
from dyndbg.engine.graph_stepping import GraphStepper
from dyndbg.engine.graph_watches import GraphWatches, SaidOnce
from dyndbg.engine.stop import GraphStop, HeldStop, StopReason
from dyndbg.engine.targets import CatchTarget, StackReader, _called_function

COMPUTED = ("call_function", "call_method", "call_module")


class NanFound(NamedTuple):
    """What `catch nan` found: the node (or inductor kernel step) that just
    ran, its inputs as they were before it ran, its value (the buffer
    `output` of a kernel) and which elements are bad."""

    node: object
    inputs: list[tuple[str, object]]
    output: str
    value: object
    bad: list[nan_check.BadValues]


@dataclass
class NanCatchTarget(CatchTarget):
    """`catch nan`: stop right after the first node of a compiled graph whose
    output holds a NaN or an Inf (engine/nan_catch.py). A graph whose
    backend gives no way in (its global's name in `opaque`) is checked at
    its outputs instead, in generated code: its call is confirmed on the
    stack, and the instruction after it stops where the result holds one."""

    event: str = "nan"
    graph_time = True
    checked_when_reached = True
    opaque: set[str] = field(default_factory=set)     # graph globals with no way in
    # id(frame) -> (graph global, offset of the instruction after its call)
    _called: dict[int, tuple[str, int]] = field(default_factory=dict)
    # id(code) -> offset of a call -> offset of the instruction after it
    _after: dict[int, dict[int, int]] = field(default_factory=dict)
    # what the last stop found: (graph global, [(output index, bad values)])
    found: tuple[str, list] | None = None

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if not self.opaque or not any(n in self.opaque for n in entry.code.co_names):
            return set()
        out: set[int] = set()
        after = self._after.setdefault(id(entry.code), {})
        instructions = info.instructions
        for i, instr in enumerate(instructions[:-1]):
            if instr.opname in CALL_OPNAMES:
                after[instr.offset] = instructions[i + 1].offset
                out |= {instr.offset, instructions[i + 1].offset}
        return out

    def confirm(self, frame: types.FrameType, entry: GeneratedCode, instr: Instr,
                stack: StackReader) -> bool:
        if instr.opname in CALL_OPNAMES:
            function = _called_function(instr, stack)
            name = next((n for n in frame.f_code.co_names if n in self.opaque
                         and function is not None and frame.f_globals.get(n) is function), None)
            after = self._after.get(id(frame.f_code), {}).get(instr.offset)
            if name is not None and after is not None:
                self._called[id(frame)] = (name, after)
            return False
        called = self._called.get(id(frame))
        if called is None or called[1] != instr.offset:
            return False
        del self._called[id(frame)]
        from dyndbg.dynamo.graphs.nan_check import bad_outputs
        values = stack()
        if not values:
            return False
        bad = bad_outputs(values[-1])
        if not bad:
            return False
        self.found = (called[0], bad)
        return True

    def describe(self) -> str:
        return "catch nan"



class _Run(NamedTuple):
    graph: SteppedGraph
    done: int                             # nodes below this index are checked
    inputs: list[tuple[str, object]]      # of node `done`, held before it ran


class NanCatcher:
    """Watches every steppable graph's code while `catch nan` is set."""

    def __init__(self, watches: Callable[[], GraphWatches], breakpoints: BreakpointTable,
                 stepper: GraphStepper, held: HeldStop, frontend: object,
                 message: Callable[[str], None], backend_of: Callable[[str], str | None],
                 is_generated: Callable[[types.CodeType], bool],
                 evaluate: Callable[[types.FrameType, str], object]) -> None:
        self._watches = watches
        self.breakpoints = breakpoints
        self.stepper = stepper
        self.held = held
        self.frontend = frontend
        self.message = message
        self.backend_of = backend_of
        self.is_generated = is_generated
        self.evaluate = evaluate
        self.armed = False
        self._graphs: dict[int, SteppedGraph] = {}    # id(code) -> its graph, watched
        self._lazy: dict[int, GraphCode] = {}         # id(gm) -> its graph, code not made yet
        self._lazy_code: types.CodeType | None = None  # _lazy_forward's, watched while _lazy
        # a backward starting whose GraphModule is compiled in this call: any
        # call is offered (the None watch) until its code starts, or the call ends
        self._backward: SteppedGraph | None = None
        self._seen: dict[str, int] = {}               # global -> id(value) looked at
        self._opaque: set[str] = set()                # globals with no way in
        self._runs: dict[int, _Run] = {}              # id(frame) -> its run so far
        self._once = SaidOnce()                      # lines said once a session
        # id(graph) -> line -> (its node's index, its inputs' names)
        self._lines: dict[int, dict[int, tuple[int, tuple[str, ...]]]] = {}
        self._key: tuple[int, int] = (-1, -1)

    def catchpoints(self) -> list[Breakpoint]:
        return [bp for bp in self.breakpoints
                if bp.enabled and isinstance(bp.target, NanCatchTarget)]

    # -- arming -------------------------------------------------------------------------
    def sync(self, compiled: int) -> list[str]:
        """Watch every steppable graph's code while an enabled `catch nan`
        exists; `compiled`: how many compiles have ended (after a new one:
        look again). The lines to say (each once a session)."""
        key = (self.breakpoints.version, compiled)
        if key == self._key:
            return []
        self._key = key
        if not self.catchpoints():
            self.disarm()
            return []
        self.armed = True
        said: list[str] = []
        for name, value in nan_check.graph_globals():
            if self._seen.get(name) == id(value):
                continue
            self._seen[name] = id(value)
            try:
                graph = runnable_graph(name, value, self.backend_of(name))
            except NoWayIn as why:
                said.append(f"dyndbg: catch nan: {str(why).replace('; stepping over', '')}; "
                            "its outputs are checked after its call instead")
                self._opaque.add(name)
                continue
            if not self._watch(graph):
                said.append(f"dyndbg: catch nan: the tracing mechanism ({self._watches().name}) "
                            "cannot watch this graph's code; nothing is checked")
                break
        for bp in self.catchpoints():     # checked in generated code (targets.py)
            target = bp.target
            assert isinstance(target, NanCatchTarget)
            if target.opaque != self._opaque:
                target.opaque = set(self._opaque)
                self.breakpoints.changed()
        return [line for line in said if self._once(line)]

    def wants_backward(self) -> bool:
        return self.armed

    def backward_starts(self, graph: SteppedGraph) -> None:
        """catch backward's watch (graph_backward.py): a compiled backward
        starts; its GraphModule's code, or inductor's output code, watched
        (made in this call: any call is offered until it starts)."""
        made = graph.code is not None if isinstance(graph, OutputCodeGraph) else graph.gm is not None
        if made:
            self._watch(graph)
            return
        if self._backward is None and not self._watches().watch_graph(None, self):
            return
        self._backward = graph

    def backward_ends(self) -> None:
        if self._backward is not None:
            self._backward = None
            self._watches().unwatch_graph(None, self)

    def _watch(self, graph: SteppedGraph) -> bool:
        code = graph.code
        if code is None and isinstance(graph, GraphCode):
            code = nan_check.made_forward_code(graph.gm)
        if code is not None:
            if id(code) in self._graphs:
                return True     # a backward's, again
            graph.code = code
            self._graphs[id(code)] = graph
            return self._watches().watch_graph(code, self)
        if not isinstance(graph, GraphCode):
            return True         # an output code with no `call`: nothing to watch
        self._lazy[id(graph.gm)] = graph
        if self._lazy_code is None:
            self._lazy_code = nan_check.lazy_forward_code()
            if self._lazy_code is None or not self._watches().watch_graph(self._lazy_code, self):
                self._lazy_code = None
                return False
        return True

    def disarm(self) -> None:
        watches = self._watches()
        for graph in self._graphs.values():
            watches.unwatch_graph(graph.code, self)
        if self._lazy_code is not None:
            watches.unwatch_graph(self._lazy_code, self)
        self.backward_ends()
        self._graphs.clear()
        self._lazy.clear()
        self._seen.clear()
        self._opaque.clear()
        self._runs.clear()
        self._lines.clear()
        self._lazy_code = None
        self.armed = False
        self._key = (-1, -1)


    # -- the mechanism's events (under ENGINE_LOCK) ---------------------------------------
    def on_graph_start(self, frame: types.FrameType) -> bool:
        if not self.armed or self.held.current is not None:
            return False    # at a prompt: an expression runs the graph
        code = frame.f_code
        if code is self._lazy_code:
            return id(frame.f_locals.get("self")) in self._lazy
        graph = self._graphs.get(id(code))
        if graph is None:
            graph = self._backward
            if graph is None or not graph.is_frame(frame):
                return False
            # the backward's code, from now on (GraphWatches moves this watch onto it)
            self._backward = None
            graph.code = code
            self._graphs[id(code)] = graph
        self._runs[id(frame)] = _Run(graph, 0, [])
        return True

    def on_graph_line(self, frame: types.FrameType) -> None:
        """Before a node runs: the node(s) run since the last line checked."""
        if not self.armed:
            return
        if frame.f_code is self._lazy_code:
            self._lazy_made(frame)
            return
        run = self._runs.get(id(frame))
        if run is None:
            return
        graph = run.graph
        index, names = self._line_of(graph, frame.f_lineno)
        if index < run.done:
            return
        frame_locals = frame.f_locals
        found = self._check(graph, run, index, frame_locals)
        if found is not None:
            del self._runs[id(frame)]       # one stop a run: what follows holds it too
            self._stop(frame, graph, found)
            return
        self._runs[id(frame)] = _Run(graph, index, [(n, frame_locals.get(n)) for n in names])

    def _line_of(self, graph: SteppedGraph, lineno: int) -> tuple[int, tuple[str, ...]]:
        """(index of the node, or inductor step, the line starts, its inputs'
        names); -1 for none: found once a line (the events come at every
        line of every run)."""
        lines = self._lines.setdefault(id(graph), {})
        found = lines.get(lineno)
        if found is None:
            node = graph.node_at(lineno)
            if isinstance(graph, OutputCodeGraph):
                index = next((i for i, s in enumerate(graph.steps) if s is node), -1)
                names = tuple(getattr(node, "reads", ()))
            else:
                index = graph.index_of(node) if node is not None else -1
                names = tuple(arg.name for arg in getattr(node, "all_input_nodes", ()))
            found = lines[lineno] = (index, names)
        return found

    def on_graph_return(self, frame: types.FrameType) -> None:
        self._runs.pop(id(frame), None)

    def _lazy_made(self, frame: types.FrameType) -> None:
        """In `_lazy_forward`: once its GraphModule has made its code, watched."""
        gm = frame.f_locals.get("self")
        graph = self._lazy.get(id(gm))
        if graph is None or graph.gm is not gm:
            return
        code = nan_check.made_forward_code(gm)
        if code is None:
            return
        del self._lazy[id(gm)]
        self._watch(graph)
        if not self._lazy and self._lazy_code is not None:
            self._watches().unwatch_graph(self._lazy_code, self)
            self._lazy_code = None

    def _check(self, graph: SteppedGraph, run: _Run, index: int,
               frame_locals: dict) -> NanFound | None:
        """The first node from `run.done` up to `index` (excluded) that ran and
        holds a NaN or an Inf."""
        if isinstance(graph, OutputCodeGraph):
            return self._check_kernels(graph, run, index, frame_locals)
        for i in range(run.done, index):
            node = graph.nodes[i]
            if node.op not in COMPUTED:
                continue
            value = frame_locals.get(node.name)
            bad = nan_check.bad_values(value)
            if bad:
                inputs = run.inputs if i == run.done else []
                return NanFound(node, inputs, node.name, value, bad)
        return None

    def _check_kernels(self, graph: OutputCodeGraph, run: _Run, index: int,
                       frame_locals: dict) -> NanFound | None:
        """inductor: the buffers each kernel step from `run.done` up to
        `index` wrote (not an allocation's: its memory is not written yet;
        nor one it wrote through a view: the rest of it may not be, and a
        NaN there would be the allocator's, not the program's)."""
        for i in range(run.done, index):
            step = graph.steps[i]
            if step.kind is not StepKind.KERNEL:
                continue
            for name in dict.fromkeys((*step.writes, *step.defines)):
                if name in step.partly:
                    continue
                value = frame_locals.get(name)
                bad = nan_check.bad_values(value)
                if bad:
                    inputs = run.inputs if i == run.done else []
                    return NanFound(step, inputs, name, value, bad)
        return None

    def _stop(self, frame: types.FrameType, graph: SteppedGraph, found: NanFound) -> None:
        """The stop, if a catchpoint's condition and ignore count let it; the
        stepper takes the frame on (`s` from here: before the next node)."""
        reached = self.catchpoints()
        stopping = self.breakpoints.take([(bp, None) for bp in reached],
                                         lambda expr: self.evaluate(frame, expr), self.message)
        if not stopping:
            return
        caller = frame.f_back
        while caller is not None and not self.is_generated(caller.f_code):
            caller = caller.f_back
        stop = GraphStop(frame, graph, found.node, caller, StopReason.BREAKPOINT, stopping,
                         found=found)
        self.stepper.adopt(graph, caller, frame)
        with self.held.holding(stop):
            self.frontend.interact_graph(stop)  # type: ignore[attr-defined]  # the engine's Frontend
