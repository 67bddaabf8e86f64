"""The seam between the engine and a tracing mechanism.

A mechanism (settrace.py, monitoring.py) delivers events of dynamo-generated
frames to the engine (`EventSink`); the engine drives it through `Tracer`:
what to trace is the policy's (`EventSink.policy`, policy.py), how is the
mechanism's. `make_tracer` picks one for this Python.
"""
from __future__ import annotations

import collections
import os
import types
from typing import TYPE_CHECKING, Callable, NamedTuple, Protocol

from dyndbg.cpython.tracing import monitoring_available, monitoring_tool_holder

if TYPE_CHECKING:
    from dyndbg.dynamo import DynamoHooks, GeneratedCode, Registry
    from dyndbg.engine.conditions import Conditions
    from dyndbg.engine.fast_paths import FastPaths
    from dyndbg.engine.policy import TracePolicy

# DYNDBG_TRACER=settrace forces the sys.settrace mechanism where sys.monitoring
# exists (for comparison and tests); =monitoring asks for sys.monitoring.
TRACER_VARIABLE = "DYNDBG_TRACER"


class FastRecord(NamedTuple):
    """FastPaths.record: recording one code's instructions in the
    mechanism, without the engine (the compiled core)."""

    record: Callable[[types.FrameType, object], int]   # History's compiled record(frame, spec)
    spec: object                                        # its spec for the code
    armed: dict[int, object]                            # offsets that go to on_instruction
    after: Callable[[int], None]                        # History.after_record(result)


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
    def suspend(self) -> None:
        """Dynamo starts compiling: nothing of dyndbg runs under it."""
    def resume(self) -> None: ...


def make_tracer(sink: EventSink, note: Callable[[str], None]) -> Tracer:
    """sys.monitoring where this Python has it and its debugger slot is free,
    else sys.settrace; `note` says why when the choice is not the default."""
    from dyndbg.engine.settrace import SettraceTracer
    wanted = os.environ.get(TRACER_VARIABLE, "")
    if wanted not in ("", "settrace", "monitoring"):
        note(f"dyndbg: {TRACER_VARIABLE}={wanted!r} is not 'settrace' or 'monitoring'; ignored")
        wanted = ""
    if wanted != "settrace" and monitoring_available():
        holder = monitoring_tool_holder()
        if holder is None:
            from dyndbg.engine.monitoring import MonitoringTracer
            return MonitoringTracer(sink)
        note(f"dyndbg: sys.monitoring's debugger slot is held by {holder!r}; "
             "tracing with sys.settrace instead (slower)")
    elif wanted == "monitoring":
        note("dyndbg: sys.monitoring needs Python 3.12 or newer; tracing with sys.settrace")
    return SettraceTracer(sink)
