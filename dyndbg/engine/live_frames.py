"""What the engine keeps about a live generated frame, by id(frame), from
its start to its end: what it had bound at its start (its arguments and free
variables) as the guards saw them, whether it has stopped, the stacks read
(snapshots.py) and its recorded track (history.py).
A new frame may reuse the id of one that ended, so a frame's start and its
end both forget it, in Python here or in the compiled core (`keyed`, which
engine/tracing/_framebook.h empties the same way)."""
from __future__ import annotations

import types

from dyndbg.cpython import entry_names
from dyndbg.dynamo import GeneratedCode
from dyndbg.engine.recording.history import History
from dyndbg.engine.policy import keeps_entry_names
from dyndbg.engine.snapshots import Snapshots
from dyndbg.engine.stop import Stop


class LiveFrames:
    def __init__(self, snapshots: Snapshots, history: History) -> None:
        self.entry_locals: dict[int, dict] = {}   # id(frame) -> what it had bound at the start
        self.stopped_in: set[int] = set()         # ids of live frames that have stopped
        self.keyed: tuple[dict | set, ...] = (self.entry_locals, self.stopped_in,
                                              snapshots.by_frame, history.tracks)

    def start(self, frame: types.FrameType, entry: GeneratedCode | None) -> None:
        """A traced generated frame starts: what it has bound (its arguments
        and free variables), before the code or a closure changes them (where
        neither can, they are read at a stop instead, `at_stop`)."""
        self.forget(frame)
        if entry is None or not keeps_entry_names(entry):
            self.entry_locals[id(frame)] = dict(frame.f_locals)

    def forget(self, frame: types.FrameType) -> None:
        key = id(frame)
        for keyed in self.keyed:
            if isinstance(keyed, set):
                keyed.discard(key)
            else:
                keyed.pop(key, None)

    def has_stopped(self, frame: types.FrameType) -> bool:
        return id(frame) in self.stopped_in

    def at_stop(self, stop: Stop) -> None:
        """Fill in what the stop shows of the frame's history: whether it is the
        frame's first, and what the frame had bound at its start."""
        key = id(stop.frame)
        stop.first_in_frame = key not in self.stopped_in
        stop.entry_locals = self.entry_locals.get(key)
        if stop.entry_locals is None and keeps_entry_names(stop.entry):
            frame_locals = stop.frame.f_locals
            stop.entry_locals = {name: frame_locals[name] for name in
                                 entry_names(stop.frame.f_code) if name in frame_locals}
        self.stopped_in.add(key)

    def clear(self) -> None:
        self.entry_locals.clear()
        self.stopped_in.clear()
