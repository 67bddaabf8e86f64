"""The seam between the engine and a tracing mechanism.

A mechanism (settrace.py, monitoring.py) delivers events of dynamo-generated
frames to the engine (`EventSink`); the engine drives it through `Tracer`:
what to trace is the policy's (`EventSink.policy`, policy.py), how is the
mechanism's. `choice.make_tracer` picks one for this Python. What both
mechanisms do alike is `MechanismBase`'s.
"""
from __future__ import annotations

import collections
import types
from typing import TYPE_CHECKING, Protocol

from dyndbg.engine.exceptions import PASSES_THROUGH

if TYPE_CHECKING:
    from dyndbg.dynamo import DynamoHooks, GeneratedCode, Registry
    from dyndbg.engine.conditions import Conditions
    from dyndbg.engine.fast_paths import FastPaths
    from dyndbg.engine.policy import TracePolicy

class EventSink(Protocol):
    """The engine, as a tracing mechanism sees it. Events come from whichever
    thread runs generated code; a mechanism calls these under
    threads.ENGINE_LOCK (one thread in the engine at a time)."""

    registry: "Registry"
    hooks: "DynamoHooks"
    policy: "TracePolicy"
    conditions: "Conditions"
    fast_paths: "FastPaths"     # what the compiled core may do without the engine
    detached: bool
    # What the engine keeps by id(frame), dicts and sets: a new frame may
    # reuse the id of one that ended (forget empties them of it).
    frame_keyed: tuple[dict | set, ...]

    def on_frame_start(self, frame: types.FrameType) -> None: ...
    def start_only_forgets(self, entry: "GeneratedCode") -> bool: ...
    def on_instruction(self, frame: types.FrameType) -> None: ...
    def on_exception(self, frame: types.FrameType, exc: BaseException) -> None: ...
    def on_return(self, frame: types.FrameType, value: object = None) -> None: ...
    def on_idle(self) -> None: ...
    def forget(self, frame: types.FrameType) -> None: ...
    def on_call_failed(self, caller: types.FrameType) -> None: ...
    def internal_error(self, where: str, error: BaseException) -> None: ...


class GraphEvents(Protocol):
    """Who is told of a watched graph code's frame (engine/graph_stepping.py):
    called under threads.ENGINE_LOCK."""

    def on_graph_start(self, frame: types.FrameType) -> bool: ...
    def on_graph_line(self, frame: types.FrameType) -> None: ...
    def on_graph_return(self, frame: types.FrameType) -> None: ...


class Tracer(Protocol):
    """A tracing mechanism, as the engine drives it."""

    name: str                                     # "settrace" or "sys.monitoring"
    events: collections.Counter[str]              # events received, by kind
    # True where generated code can only be seen starting through torch's C
    # callback (or, without it, a global trace function).
    needs_code_callback: bool

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def code_added(self, entry: "GeneratedCode") -> None:
        """The registry has a new generated code object (compiled, or first seen)."""
    def code_starting(self, code: types.CodeType) -> None:
        """torch's C callback: registered generated code is about to run."""
    def retrace(self) -> None:
        """The mode or the breakpoints changed: every generated frame gets the
        tracing it needs now."""
    def keep(self, frame: types.FrameType) -> None:
        """The engine holds state for this frame (it stopped there): tell it
        when the frame returns."""
    def step_into(self, frames: list[types.FrameType]) -> None:
        """Stop at the next instruction of these live generated frames (step mode is set)."""
    def watch_graph(self, code: types.CodeType | None, events: GraphEvents) -> bool:
        """Deliver the start, line events and return of `code`'s next frame (a
        compiled graph's code, not generated code) to `events`; code None: any
        call is offered to events.on_graph_start (the code is made as the graph
        starts). False where this mechanism (or core) cannot. Several codes may
        be watched at once (`catch backward` watches AOT's
        CompiledFunction.backward, whose on_graph_start may watch its graph's
        code, or None, meanwhile): a frame of a watched code goes to its own
        events, never to None's. While any code is watched its calls are seen
        in the watching thread even where no generated frame runs (a
        backward runs inside `loss.backward()`)."""
    def unwatch_graph(self, code: types.CodeType | None) -> None: ...
    def suspend(self) -> None:
        """Dynamo starts compiling: nothing of dyndbg runs under it."""
    def resume(self) -> None: ...


class MechanismBase:
    """What both mechanisms share: a trace function's failure, handed here
    by their Python trace functions and by their compiled filters."""

    sink: EventSink

    def _fail(self, error: BaseException) -> None:
        if isinstance(error, PASSES_THROUGH):
            raise error
        self.sink.internal_error("trace", error)
