"""Several watchers of one compiled graph's code (issue 50).

A tracing mechanism delivers a watched code's frames to one GraphEvents per
code (Tracer.watch_graph). The graph stepper (`s` at a graph's call),
`catch backward` and `catch nan` may want the same code at once: `catch
nan` watches every graph's code while it is set, and `s` enters one of
them. GraphWatches stands between them and the mechanism, through the
Tracer protocol alone: one dispatcher per code held by the mechanism, the
frame's events handed to each watcher that took the frame in its
on_graph_start, `first` (catch nan, which checks the node just run before
the stepper stops before the next) before the others.
"""
from __future__ import annotations

import types
from typing import Callable

from dyndbg.engine.tracing.tracer import GraphEvents, Tracer


class SaidOnce:
    """What a graph watcher says once a session (the mechanism cannot watch,
    a backend gives no way in): the line the first time, "" after."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def __call__(self, line: str) -> str:
        if line in self._said:
            return ""
        self._said.add(line)
        return line


class GraphWatches:
    """watch_graph/unwatch_graph for many watchers, over one Tracer."""

    def __init__(self, tracer: Callable[[], Tracer]) -> None:
        self._tracer = tracer
        self._watchers: dict[int | None, list[GraphEvents]] = {}
        self._dispatch: dict[int | None, _Dispatch] = {}
        self._frames: dict[int, list[GraphEvents]] = {}   # id(frame) -> who took it
        self.first: GraphEvents | None = None             # served before the others
        # the frame whose line _line hands out now, and who had it so far
        self._serving: tuple[int, list[GraphEvents]] | None = None

    @property
    def name(self) -> str:
        return self._tracer().name

    def watch_graph(self, code: types.CodeType | None, events: GraphEvents) -> bool:
        key = None if code is None else id(code)
        if key not in self._dispatch:
            dispatch = _Dispatch(self)
            if not self._tracer().watch_graph(code, dispatch):
                return False
            self._dispatch[key] = dispatch
        watchers = self._watchers.setdefault(key, [])
        if not any(w is events for w in watchers):
            watchers.append(events)
        return True

    def unwatch_graph(self, code: types.CodeType | None, events: GraphEvents) -> None:
        key = None if code is None else id(code)
        watchers = [w for w in self._watchers.get(key, []) if w is not events]
        if watchers:
            self._watchers[key] = watchers
            return
        self._watchers.pop(key, None)
        if self._dispatch.pop(key, None) is not None:
            self._tracer().unwatch_graph(code)

    def watching(self, code: types.CodeType, events: GraphEvents) -> bool:
        return any(w is events for w in self._watchers.get(id(code), ()))

    def shared(self, frame: types.FrameType, events: GraphEvents) -> bool:
        """Whether a watcher other than `events` gets this frame's events."""
        return any(w is not events for w in self._frames.get(id(frame), ()))

    def adopt(self, frame: types.FrameType, events: GraphEvents) -> None:
        """`events` gets the rest of a frame already running (a stop inside
        it from another watcher, `s` from there)."""
        taken = self._frames.setdefault(id(frame), [])
        if not any(w is events for w in taken):
            taken.append(events)

    def _order(self, watchers: list[GraphEvents]) -> list[GraphEvents]:
        return sorted(watchers, key=lambda w: w is not self.first)

    # -- the dispatcher's events -------------------------------------------------------
    def _start(self, dispatch: "_Dispatch", frame: types.FrameType) -> bool:
        code = frame.f_code
        keyed = self._watchers.get(id(code), [])
        waiting = list(self._watchers.get(None, []))
        taken = [w for w in self._order(keyed + waiting) if w.on_graph_start(frame)]
        if not taken:
            return False
        self._frames[id(frame)] = taken
        moved = [w for w in waiting if any(w is t for t in taken)]
        if moved:
            # as the mechanism does for its own None key: the code, from now on
            self._watchers[None] = [w for w in waiting if not any(w is m for m in moved)]
            if not self._watchers[None]:
                del self._watchers[None]
            for w in moved:
                self._watchers.setdefault(id(code), []).append(w)
            if id(code) not in self._dispatch:
                fresh = _Dispatch(self)
                self._tracer().watch_graph(code, fresh)
                self._dispatch[id(code)] = fresh
            if dispatch is self._dispatch.get(None):
                # a fresh one at None (or none): the mechanism must not move this one
                # onto the code, where the code's own dispatcher is now
                del self._dispatch[None]
                if None in self._watchers:
                    again = _Dispatch(self)
                    self._tracer().watch_graph(None, again)
                    self._dispatch[None] = again
                else:
                    self._tracer().unwatch_graph(None)
            elif None not in self._watchers and self._dispatch.pop(None, None) is not None:
                self._tracer().unwatch_graph(None)     # nobody waits on any code now
        return True

    def serve(self, frame: types.FrameType, events: GraphEvents) -> None:
        """`events` gets this frame's current line now and the rest of its
        events (a line breakpoint stopping there hands the frame to the
        stepper), this line once: served here, not again by _line's loop,
        where it may have come before, doing nothing then."""
        self.adopt(frame, events)
        serving = self._serving
        if serving is not None and serving[0] == id(frame):
            serving[1].append(events)
        events.on_graph_line(frame)

    def _line(self, frame: types.FrameType) -> None:
        taken = self._frames.get(id(frame))
        served: list[GraphEvents] = []
        outer, self._serving = self._serving, (id(frame), served)
        try:
            if taken is not None and len(taken) == 1 and self.first is taken[0]:
                served.append(taken[0])
                taken[0].on_graph_line(frame)     # catch nan alone: the common case, quickly
                if len(taken) == 1:
                    return
            while True:     # one adopted meanwhile (catch nan's stop, then `s`) gets this line too
                pending = [w for w in self._order(self._frames.get(id(frame), []))
                           if not any(w is s for s in served)]
                if not pending:
                    return
                served.append(pending[0])
                pending[0].on_graph_line(frame)
        finally:
            self._serving = outer

    def _return(self, frame: types.FrameType) -> None:
        for watcher in list(self._frames.pop(id(frame), ())):
            watcher.on_graph_return(frame)


class _Dispatch:
    """What the mechanism holds for one watched code (or None)."""

    def __init__(self, watches: GraphWatches) -> None:
        self._watches = watches

    def on_graph_start(self, frame: types.FrameType) -> bool:
        return self._watches._start(self, frame)

    def on_graph_line(self, frame: types.FrameType) -> None:
        self._watches._line(frame)

    def on_graph_return(self, frame: types.FrameType) -> None:
        self._watches._return(frame)
