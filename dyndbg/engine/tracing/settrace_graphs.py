"""Stepping into a compiled graph under sys.settrace (issue 50).

A graph's frame runs no generated code: while a graph is watched (`s` has
entered one, or `catch backward`, a line breakpoint inside a graph or
`catch nan` watches one), and only then, the global trace offers each
frame of a watched code to who watches it (tracer.GraphEvents), by code
identity; the frame it takes gets line events, each before its FX node (or
output-code step) runs, and its return. Key None: a lazy graph whose code
is not made yet: every call is offered until one is taken, whose code is
watched from then on.

monitoring_graphs.py does the same under sys.monitoring. Every trace
function here catches everything into the tracer's `_fail`.
"""
from __future__ import annotations

import collections
import threading
import types
from typing import Callable

from dyndbg.engine.threads import ENGINE_LOCK
from dyndbg.engine.tracing.tracer import GraphEvents
from dyndbg.faults import FAULTS_ON, maybe_fault


class TracedGraphs:
    """The graph codes watched, by id (None: a lazy graph's code, not made
    yet), each with who is told; and the thread whose trace the watch keeps."""

    def __init__(self, events: collections.Counter[str],
                 fail: Callable[[BaseException], None]) -> None:
        self._events = events
        self._fail = fail
        # Read by the global trace, whose graph part is skipped while it is empty.
        self.codes: dict[int | None, GraphEvents] = {}
        self.pinned: int | None = None

    def watch(self, code: types.CodeType | None, events: GraphEvents) -> bool:
        """Whether this is the first watched code and this thread now keeps
        the trace for the watch (its caller counts it as one of the thread's frames)."""
        first = not self.codes and self.pinned is None
        if first:
            self.pinned = threading.get_ident()
        self.codes[None if code is None else id(code)] = events
        return first

    def unwatch(self, code: types.CodeType | None) -> bool:
        """Whether the last watched code went and this thread kept the trace
        for the watch (unwatched from another thread, the pin stays there)."""
        self.codes.pop(None if code is None else id(code), None)
        if not self.codes and self.pinned == threading.get_ident():
            self.pinned = None
            return True
        return False

    def start(self, frame: types.FrameType):
        """A watched graph's frame starts: its trace function if who watches
        it takes the frame, else None."""
        try:
            with ENGINE_LOCK:
                graphs = self.codes
                events = graphs.get(id(frame.f_code))
                keyed = events is not None
                if events is None:
                    events = graphs.get(None)
                if events is None or not events.on_graph_start(frame):
                    return None
                if not keyed and graphs.get(None) is events:
                    # its code, made as it started, from now on
                    graphs[id(frame.f_code)] = graphs.pop(None)
                frame.f_trace_lines = True
                frame.f_trace_opcodes = False
                return self.trace
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
            return None

    def trace(self, frame: types.FrameType, event: str, arg: object) -> None:
        """The local trace of a graph's frame being stepped."""
        try:
            with ENGINE_LOCK:
                graphs = self.codes
                events = graphs.get(id(frame.f_code)) or graphs.get(None)
                if events is None:
                    frame.f_trace_lines = False
                    return
                if event == "line":
                    self._events["graph line"] += 1
                    if FAULTS_ON:
                        maybe_fault("graph")
                    events.on_graph_line(frame)
                elif event == "return":
                    events.on_graph_return(frame)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
