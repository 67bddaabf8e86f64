"""Stepping into a compiled graph under sys.monitoring (issue 50).

A graph's frame runs no generated code: while `s` has entered a graph, and
only then, that graph's code object alone gets LINE, PY_START and PY_RETURN
under the debugger's tool id (MonitoringTracer.watch_graph), and those
events go, by code identity, to the graph stepper (tracer.GraphEvents), as
settrace_graphs.py does.

A GraphModule that torch makes lazily (AOT's) has no code object until its
first call (watch key None): while such a graph is watched, PY_START is on
globally, each frame that starts is offered to the stepper, the one it
takes has its code watched from then on, and every other code answers
DISABLE (until the engine's next restart_events). PY_UNWIND, an event that
can only be global, is on while any graph is watched: an exception leaving
the graph's frame ends it as a return does. With nothing watched, nothing
here is instrumented.

Every callback catches everything into the tracer's `_fail`.
"""
from __future__ import annotations

import sys
import types
from typing import Callable

from dyndbg.engine.threads import ENGINE_LOCK
from dyndbg.engine.tracing.tracer import EventSink, GraphEvents
from dyndbg.faults import FAULTS_ON, maybe_fault

_M = sys.monitoring
_E = _M.events
DISABLE = _M.DISABLE
# A watched graph's code: its lines, its start (the frame the stepper takes), its return.
GRAPH_LOCAL_EVENTS = _E.LINE | _E.PY_START | _E.PY_RETURN


class MonitoredGraphs:
    """The graph codes being stepped into, by id (None: a lazy graph's code,
    not made yet), each with its code object (held: its id stays its own)
    and who is told."""

    def __init__(self, tool: int, sink: EventSink, events: dict[str, int],
                 fail: Callable[[BaseException], None], changed: Callable[[], None]) -> None:
        self._tool = tool
        self._sink = sink
        self._events = events
        self._fail = fail
        self._changed = changed     # the global events to set changed (global_events)
        # Read by the tracer's callbacks, whose graph part is skipped while it is empty.
        self.watched: dict[int | None, tuple[types.CodeType | None, GraphEvents]] = {}

    @property
    def global_events(self) -> int:
        """The global events the watched graphs need (0 while none is)."""
        if not self.watched:
            return 0
        return _E.PY_UNWIND | (_E.PY_START if None in self.watched else 0)

    def watch(self, code: types.CodeType | None, events: GraphEvents) -> None:
        if code is not None:
            _M.set_local_events(self._tool, code, GRAPH_LOCAL_EVENTS)
        self.watched[None if code is None else id(code)] = (code, events)
        self._changed()

    def unwatch(self, code: types.CodeType | None) -> None:
        known = self.watched.pop(None if code is None else id(code), None)
        if known is not None and known[0] is not None:
            _M.set_local_events(self._tool, known[0], 0)
        self._changed()

    def clear(self) -> None:
        """The tracer stops: every graph code's events go."""
        for code, _ in self.watched.values():
            if code is not None:
                _M.set_local_events(self._tool, code, 0)
        self.watched.clear()

    # -- the callbacks' graph part ------------------------------------------------------
    def on_start(self, code: types.CodeType, frame: types.FrameType) -> object:
        """PY_START of a code that is not generated while a graph is watched.
        DISABLE where it was offered as a lazy graph's code and not taken."""
        try:
            with ENGINE_LOCK:
                watched = self.watched
                known = watched.get(id(code))
                if self._sink.detached:
                    return None
                if known is not None:
                    known[1].on_graph_start(frame)
                    return None
                lazy = watched.get(None)
                if lazy is None:
                    return None    # not offered: a stray start (no graph is lazy)
                if not lazy[1].on_graph_start(frame):
                    return DISABLE
                now = watched.get(None)
                if now is not None and now[1] is lazy[1]:
                    # The lazy graph's code, made as it started: watched from now
                    # on (unless the one told moved it itself, as GraphWatches does).
                    del watched[None]
                    watched[id(code)] = (code, lazy[1])
                    _M.set_local_events(self._tool, code, GRAPH_LOCAL_EVENTS)
                self._changed()
                return None
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
            return None

    def on_line(self, code: types.CodeType, line: int) -> None:
        """LINE of a watched graph's code (the callback itself: its caller is the frame)."""
        try:
            with ENGINE_LOCK:
                known = self.watched.get(id(code))
                if known is None or self._sink.detached:
                    return
                self._events["graph line"] += 1
                if FAULTS_ON:
                    maybe_fault("graph")
                known[1].on_graph_line(sys._getframe(1))
        except BaseException as error:  # noqa: BLE001
            self._fail(error)

    def on_end(self, code: types.CodeType, frame: types.FrameType) -> bool:
        """PY_RETURN or PY_UNWIND: whether `code` is a watched graph's (then
        the stepper is told its frame ended)."""
        known = self.watched.get(id(code))
        if known is None:
            return False
        try:
            with ENGINE_LOCK:
                if not self._sink.detached:
                    known[1].on_graph_return(frame)
        except BaseException as error:  # noqa: BLE001
            self._fail(error)
        return True
