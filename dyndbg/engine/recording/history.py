"""The recorded history (`record on`): every instruction that runs in
dynamo-generated frames, with the value stack and the locals as they were
before it ran, in a ring buffer bounded in records and in the memory of
kept tensor copies (recorded_values.py says what is kept of a value).

Records form one timeline; each names the record of its caller's call
(the generated frame below it), so a past point has a `where`.
"""
from __future__ import annotations

import collections
import enum
import operator
import types
from typing import TYPE_CHECKING, Iterator, NamedTuple

from dyndbg import cores
from dyndbg.cpython import (NULL, StackUnavailable, event_depths, instruction_start,
                            read_frame_slots, slot_names)
from dyndbg.cpython.opcodes import KEEPS_VALUES_OPNAMES
from dyndbg.dynamo import GeneratedCode
from dyndbg.engine.codeinfo import CodeInfo, Instr
from dyndbg.dynamo.tensor_copy import PLAIN_TENSOR_TYPES
from dyndbg.engine.recording.recorded_values import (AS_IS, CONTAINER_BOUNDS, TOKEN_CHECKS,
                                                     VOLATILE, Limits, ValueKeeper, _Copy, _Items)

if TYPE_CHECKING:
    from dyndbg.engine.recording._history import Recorder

DEFAULT_SIZE = 300_000               # records
DEFAULT_COPY_LIMIT = 65_536          # elements of a tensor copied
DEFAULT_MEMORY = 512 * 1024 * 1024   # bytes of tensor copies


class Record(NamedTuple):
    """One instruction, as the stop display would have shown it before it ran
    (engine/recording/_record.c builds it by index)."""

    seq: int                   # its place in the timeline (never reused)
    frame_id: int              # id() of the frame (a frame's records share it)
    entry: GeneratedCode
    instr: Instr
    stack: tuple               # kept values, bottom to top
    slots: tuple               # kept values of the frame's locals (NULL: unbound)
    caller: int                # seq of the caller's record (its call), -1 if none
    globals: dict              # the frame's module globals (for `p` at this point)

    def locals(self) -> dict[str, object]:
        names = slot_names_of(self.entry)[0]
        return {name: value for name, value in zip(names, self.slots) if value is not NULL}


_new_record = tuple.__new__


class RecordInfo(NamedTuple):
    """`info record`: what is held and the bounds."""

    on: bool
    records: int
    first: int | None          # seq of the oldest record held
    last: int | None
    dropped: int               # records that went to keep the bounds
    copies: int
    bytes: int
    size: int
    memory: int
    copy_limit: int
    unreadable: int            # instructions whose frame could not be read


class RecordResult(enum.Enum):
    """What record() did (engine/recording/_record.c returns the same values)."""

    RECORDED = 0
    CHECK_BOUNDS = 1         # recorded; a bound may be passed (the compiled core: is)
    UNREADABLE = 2           # the frame's slots could not be read
    NOT_AN_INSTRUCTION = 3   # f_lasti is no instruction's start


# As plain ints: compared at every recorded instruction.
_CHECK_BOUNDS = RecordResult.CHECK_BOUNDS.value
_UNREADABLE = RecordResult.UNREADABLE.value
_NOT_AN_INSTRUCTION = RecordResult.NOT_AN_INSTRUCTION.value


class RecordSpec(NamedTuple):
    """What recording needs of a code object, computed once (entry.extra):
    record()'s spec (engine/recording/_record.c reads it by index)."""

    entry: GeneratedCode
    instructions: dict[int, Instr]      # by offset
    names: int                          # local, cell and free slots
    celled: tuple[int, ...]             # those holding a cell
    depths: dict[int, int] | None       # for the compiled reader (cpython.event_depths)


def _spec(entry: GeneratedCode, info: CodeInfo) -> RecordSpec:
    names, celled = slot_names_of(entry)
    return RecordSpec(entry, {instr.offset: instr for instr in info.instructions}, len(names),
                 tuple(sorted(celled)), event_depths(entry.code))


def slot_names_of(entry: GeneratedCode) -> tuple[tuple[str, ...], frozenset[int]]:
    """slot_names of the entry's code, computed once per code."""
    names = entry.extra.get("slot_names")
    if names is None:
        names = entry.extra["slot_names"] = slot_names(entry.code)
    return names


def _sweep_after(size: int) -> int:
    """How many records are dropped before the keeper forgets the copies that
    only they held (a sweep walks every copy: not at each drop)."""
    return max(1024, size // 16)


class _Track:
    """A live recorded frame: its slots at its newest record and what was
    kept of them (the next record reuses what did not change)."""

    __slots__ = ("caller", "newest", "raw", "kept", "tokens", "locals", "opname")

    def __init__(self, caller: int) -> None:
        self.caller = caller          # seq of the caller's record when the frame started
        self.newest = -1
        self.raw: list = []
        self.kept: list = []
        self.tokens: list = []
        self.locals: tuple = ()
        self.opname = ""              # of the newest record's instruction


class History:
    def __init__(self) -> None:
        self.on = False
        self._records: collections.deque[Record] = collections.deque()
        self._keeper = ValueKeeper(Limits(DEFAULT_COPY_LIMIT, DEFAULT_MEMORY))
        self._next = 0                # the Python core's seq counter (next_seq)
        self.tracks: dict[int, _Track] = {}  # id(live recorded frame) -> what it last kept
        self.dropped = 0
        self.unreadable = 0
        self._dropped_since_sweep = 0
        compiled = cores.history()
        # The compiled record reads and sets a track's fields directly.
        self._track_type = _Track if compiled is None else compiled.Track
        self._recorder: Recorder | None = None if compiled is None else compiled.Recorder(
            self, self._records, self.tracks, self._new_track, self._keeper.keep, Record,
            KEEPS_VALUES_OPNAMES, NULL, StackUnavailable, _Copy, VOLATILE, AS_IS,
            self._keeper.copies_by_id, frozenset(PLAIN_TENSOR_TYPES), _Items,
            CONTAINER_BOUNDS)
        self.resize(DEFAULT_SIZE)     # size and what follows from it, the recorder's too

    # -- settings -------------------------------------------------------------------
    @property
    def copy_limit(self) -> int:
        return self._keeper.limits.copy_elements

    @copy_limit.setter
    def copy_limit(self, elements: int) -> None:
        self._keeper.limits = self._keeper.limits._replace(copy_elements=elements)

    @property
    def memory(self) -> int:
        return self._keeper.limits.memory_bytes

    @memory.setter
    def memory(self, nbytes: int) -> None:
        self._keeper.limits = self._keeper.limits._replace(memory_bytes=nbytes)
        self._trim()

    def resize(self, size: int) -> None:
        self.size = size
        if self._recorder is not None:
            self._recorder.size = size    # the compiled record's copy of the bound
        self._sweep_after = _sweep_after(size)
        self._trim()

    # -- recording (the hot path) ------------------------------------------------------
    def record(self, frame: types.FrameType, entry: GeneratedCode, info: CodeInfo) -> None:
        """Before the instruction at frame.f_lasti runs."""
        spec = self.spec(entry, info)
        if self._recorder is not None:
            result = self._recorder.record(frame, spec)
        else:
            result = self._record(frame, spec)
        if result:
            self.after_record(result)

    @staticmethod
    def spec(entry: GeneratedCode, info: CodeInfo) -> RecordSpec:
        """What recording needs of the entry's code (computed once)."""
        spec = entry.extra.get("record_spec")
        if spec is None:
            spec = entry.extra["record_spec"] = _spec(entry, info)
        return spec

    def entry_points(self) -> list:
        """What the compiled core calls from a trace function with no Python
        frame of dyndbg's below: dynamo must skip these (hooks.shield)."""
        return [self._new_track, self._keeper.keep, self.after_record, *TOKEN_CHECKS]

    @property
    def compiled_record(self):
        """The compiled core's record(frame, spec), or None on the Python core."""
        return None if self._recorder is None else self._recorder.record

    def after_record(self, result: int) -> None:
        """What a record() result other than RECORDED asks for."""
        if result == _CHECK_BOUNDS:
            if len(self._records) > self.size or self._keeper.bytes > self.memory or \
                    self._dropped_since_sweep > self._sweep_after:
                self._trim()
        elif result == _UNREADABLE:
            self.unreadable += 1

    def _record(self, frame: types.FrameType, spec: RecordSpec) -> int:
        """The pure-Python core's record (engine/recording/_record.c does these steps in C)."""
        entry, instructions, count, celled, _ = spec
        instr = instructions.get(frame.f_lasti)
        if instr is None:
            return _NOT_AN_INSTRUCTION
        try:
            slots = read_frame_slots(frame)
        except StackUnavailable:
            return _UNREADABLE
        for i in celled:
            value = slots[i]
            if type(value) is types.CellType:
                try:
                    slots[i] = value.cell_contents
                except ValueError:   # an empty cell: unbound
                    slots[i] = NULL
        key = id(frame)
        track = self.tracks.get(key)
        if track is None:
            track = self._new_track(frame)
        seq = self._next
        kept = track.kept
        self._keeper.keep_all(slots, seq, track.raw, kept, track.tokens,
                              track.opname in KEEPS_VALUES_OPNAMES)
        track.raw = slots
        track.opname = instr.opname
        local_values = tuple(kept[:count])
        previous = track.locals
        if len(previous) == count and all(map(operator.is_, local_values, previous)):
            local_values = previous        # the same kept objects: one tuple shared
        track.locals = local_values
        track.newest = seq
        # tuple.__new__: a NamedTuple's own constructor is a Python function, slower.
        self._records.append(_new_record(Record, (seq, key, entry, instr, tuple(kept[count:]),
                                                  local_values, track.caller, frame.f_globals)))
        self._next = seq + 1
        return _CHECK_BOUNDS

    def _new_track(self, frame: types.FrameType) -> _Track:
        """A frame recorded for the first time."""
        track = self.tracks[id(frame)] = self._track_type(self._caller_of(frame))
        return track

    def _caller_of(self, frame: types.FrameType) -> int:
        """The newest record of the innermost recorded frame below `frame`."""
        back = frame.f_back
        while back is not None:
            track = self.tracks.get(id(back))
            if track is not None:
                return track.newest
            back = back.f_back
        return -1

    def pause(self) -> None:
        """`record off`: what is held stays; the live frames are forgotten
        (their ends are no longer seen, and a later frame may reuse an id)."""
        self.on = False
        self.tracks.clear()

    def _trim(self) -> None:
        records = self._records
        over = len(records) - self.size
        if over > 0:
            self._drop(over)
        while self._keeper.bytes > self.memory and records:
            self._drop(max(1, len(records) // 16))
            self._sweep()
        if self._dropped_since_sweep > self._sweep_after:
            self._sweep()

    def _drop(self, count: int) -> None:
        count = min(count, len(self._records))
        for _ in range(count):
            self._records.popleft()
        self.dropped += count
        self._dropped_since_sweep += count

    def _sweep(self) -> None:
        self._keeper.sweep(self._records[0].seq if self._records else self.next_seq)
        self._dropped_since_sweep = 0

    # -- reading -----------------------------------------------------------------------
    @property
    def next_seq(self) -> int:
        """The seq the next record gets (the compiled core counts it in C)."""
        return self._next if self._recorder is None else self._recorder.next

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, position: int) -> Record:
        """Oldest first: 0 is the oldest record held, -1 the newest."""
        return self._records[position]

    def __iter__(self) -> Iterator[Record]:
        return iter(self._records)

    def by_seq(self, seq: int) -> Record | None:
        if not self._records or seq < self._records[0].seq or seq > self._records[-1].seq:
            return None
        return self._records[seq - self._records[0].seq]

    def newest_of(self, frame: types.FrameType) -> Record | None:
        track = self.tracks.get(id(frame))
        return None if track is None else self.by_seq(track.newest)

    def stack_before(self, frame: types.FrameType) -> list[object] | None:
        """The stack recorded before the frame's current instruction (at an
        exception event f_lasti may point into that instruction's cache)."""
        record = self.newest_of(frame)
        if record is None:
            return None
        lasti = frame.f_lasti
        if record.instr.offset not in (lasti, instruction_start(frame.f_code, lasti)):
            return None
        return list(record.stack)

    def callers(self, record: Record) -> list[Record]:
        """The record and those of its callers' calls, innermost first, as far
        as they are held."""
        chain = [record]
        while chain[-1].caller >= 0:
            caller = self.by_seq(chain[-1].caller)
            if caller is None:
                break
            chain.append(caller)
        return chain

    def info(self) -> RecordInfo:
        records = self._records
        return RecordInfo(self.on, len(records), records[0].seq if records else None,
                          records[-1].seq if records else None, self.dropped,
                          self._keeper.copies, self._keeper.bytes, self.size, self.memory,
                          self.copy_limit, self.unreadable)

    def clear(self) -> None:
        self._records.clear()
        self._keeper.clear()
        self.tracks.clear()
