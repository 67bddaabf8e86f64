"""Breakpoints: where (a target, targets.py), and bdb's bookkeeping
(condition, ignore, temporary, enabled, hits); the places each resolved to,
numbered as gdb numbers locations (N.M); which events a frame needs for its
armed instructions to stop (ArmingPlan)."""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Callable, Iterable, NamedTuple, Sequence

from dyndbg.dynamo.compiles import GeneratedCode
from dyndbg.engine.codeinfo import CodeInfo, Instr
from dyndbg.engine.targets import (CatchTarget, LineTarget, MarkerTarget, ResumeTarget,
                                   StackReader, Target)


class ConditionCheck(NamedTuple):
    """BreakpointTable.condition_checks: what the compiled core needs to
    evaluate a breakpoint's condition and count a hit where it is false
    (engine/tracing/_fast_paths.h; it checks that the breakpoint is still enabled
    and has this condition)."""

    breakpoint: Breakpoint
    location: Location | None
    expression: str
    code: types.CodeType


class ArmingPlan:
    """Which events a frame needs for its armed instructions to stop.

    A line event fires when execution enters an instruction whose line differs
    from the previous one's: it reaches an armed instruction that starts a run
    of its line and is no jump target. Any other armed instruction needs
    opcode events while its line executes (its line is "hot"); one with no
    line at all needs them throughout.
    """

    def __init__(self, offsets: set[int], info: CodeInfo) -> None:
        self.offsets = offsets
        self.line_of = {i.offset: i.line for i in info.instructions}
        reached_by_line: set[int] = set()
        previous: int | None = None
        for instr in info.instructions:
            if instr.silent:
                continue  # a frame's first line event comes after RESUME (measured)
            if instr.line is not None and instr.line != previous and not instr.is_jump_target:
                reached_by_line.add(instr.offset)
            previous = instr.line
        unreached = [o for o in offsets if o not in reached_by_line]
        self.hot_lines = {self.line_of.get(o) for o in unreached}
        self.all_opcodes = None in self.hot_lines
        # Past its last armed instruction, straight-line code can stop no more.
        self.last_armed = max(offsets, default=-1)
        self.loops = info.has_backward_jump

    def done_after(self, offset: int) -> bool:
        return not self.loops and offset >= self.last_armed


@dataclass
class Location:
    """One place a breakpoint resolved to: a code object, or for torch's
    markers one marker instruction in it, or a compiled graph holding a
    line's nodes (engine/graph_lines.py: no generated code, `code` None)."""

    number: int                     # M in N.M, in the order the places resolved
    where: str                      # `f [0/0]`, `f [0/0] instr 12`, `graph 1 eager forward`
    code: types.CodeType | None     # held, so that its id() stays this code's
    enabled: bool = True
    hits: int = 0


def _location_enabled(location: Location | None) -> bool:
    return location is None or location.enabled


@dataclass
class Breakpoint:
    number: int
    target: Target
    temporary: bool = False
    enabled: bool = True
    condition: str | None = None
    ignore: int = 0
    hits: int = 0
    # (id(code), offset of one marker or None) -> its location, in the order they
    # resolved; a graph's: ("graph", its key)
    _places: dict[tuple[object, object], Location] = field(default_factory=dict, repr=False)

    @property
    def locations(self) -> list[Location]:
        return list(self._places.values())

    def resolve(self, entry: GeneratedCode, info: CodeInfo, offsets: Iterable[int]) -> None:
        """Number the places this breakpoint has in `entry`, once each."""
        if isinstance(self.target, CatchTarget):
            return   # catchpoints have no places
        places: list[tuple[int | None, str]]
        if isinstance(self.target, MarkerTarget):
            places = [(offset, f"{entry.label()} instr {info.index_of(offset)}")
                      for offset in sorted(offsets)]
        else:
            places = [(None, entry.label())]
        for offset, where in places:
            key = (id(entry.code), offset)
            if key not in self._places:
                self._places[key] = Location(len(self._places) + 1, where, entry.code)

    def graph_location(self, key: object, where: str) -> Location:
        """The location of a compiled graph holding this breakpoint's line, numbered once."""
        place = ("graph", key)
        if place not in self._places:
            self._places[place] = Location(len(self._places) + 1, where, None)
        return self._places[place]

    def graph_location_at(self, key: object) -> Location | None:
        return self._places.get(("graph", key))

    def location_at(self, code: types.CodeType, offset: int) -> Location | None:
        places = self._places
        return places.get((id(code), offset)) or places.get((id(code), None))

    def enabled_at(self, code: types.CodeType, offset: int) -> bool:
        return self.enabled and _location_enabled(self.location_at(code, offset))

    @property
    def kind(self) -> str:
        if isinstance(self.target, CatchTarget):
            return "catch"
        return "tbreak" if self.temporary else "break"

    def describe(self, resolution: str = "") -> str:
        state = "enabled" if self.enabled else "disabled"
        text = f"{self.number:<4} {self.kind:<7}{state:<9} {self.target.describe()}"
        if resolution:
            text += f"  [{resolution}]"
        if self.condition:
            text += f"  if {self.condition}"
        if self.ignore:
            text += f"  (ignore next {self.ignore})"
        if self.hits:
            text += f"  hit {self.hits} time{'s' if self.hits != 1 else ''}"
        return text


KnownCode = Callable[[], Iterable[tuple[GeneratedCode, CodeInfo]]]


class BreakpointTable:
    def __init__(self, known_code: KnownCode = lambda: ()) -> None:
        # The generated code seen so far, in the order it was registered: a new
        # breakpoint's places there are numbered in that order.
        self._known_code = known_code
        self._by_number: dict[int, Breakpoint] = {}
        self._next_number = 1
        self._offsets_cache: dict[int, dict[int, list[Breakpoint]]] = {}
        self._armed_cache: dict[int, dict[int, list[Breakpoint]]] = {}
        self.version = 0    # bumped by every change, for caches derived from the table

    def __iter__(self):
        return iter(sorted(self._by_number.values(), key=lambda b: b.number))

    def __len__(self) -> int:
        return len(self._by_number)

    def add(self, target: Target, temporary: bool = False,
            condition: str | None = None) -> Breakpoint:
        bp = Breakpoint(self._next_number, target, temporary, condition=condition)
        self._by_number[bp.number] = bp
        self._next_number += 1
        self.changed()
        for entry, info in self._known_code():
            self.at_code(entry, info)
        return bp

    def add_marker_breakpoint(self) -> Breakpoint:
        """Breakpoint 0: torch's markers (numbered apart from the user's, from 1)."""
        bp = Breakpoint(0, MarkerTarget())
        self._by_number[0] = bp
        self.changed()
        return bp

    def get(self, number: int) -> Breakpoint | None:
        return self._by_number.get(number)

    def delete(self, number: int) -> Breakpoint | None:
        bp = self._by_number.pop(number, None)
        self.changed()
        return bp

    def changed(self) -> None:
        """Call after any change to a breakpoint's target or enabled state."""
        self._offsets_cache.clear()
        self._armed_cache.clear()
        self.version += 1

    def at_code(self, entry: GeneratedCode, info: CodeInfo) -> dict[int, list[Breakpoint]]:
        """offset -> breakpoints armed there (enabled or not), cached per code object."""
        cached = self._offsets_cache.get(id(entry.code))
        if cached is None:
            cached = {}
            for bp in self:
                offsets = bp.target.offsets(entry, info)
                if offsets:
                    bp.resolve(entry, info, offsets)
                for offset in offsets:
                    cached.setdefault(offset, []).append(bp)
            self._offsets_cache[id(entry.code)] = cached
        return cached

    def armed(self, entry: GeneratedCode, info: CodeInfo) -> dict[int, list[Breakpoint]]:
        """offset -> enabled breakpoints there: where an opcode event can stop."""
        cached = self._armed_cache.get(id(entry.code))
        if cached is None:
            code = entry.code
            cached = {}
            for offset, bps in self.at_code(entry, info).items():
                enabled = [bp for bp in bps if bp.enabled_at(code, offset)]
                if enabled:
                    cached[offset] = enabled
            self._armed_cache[id(entry.code)] = cached
        return cached

    def condition_checks(self, entry: GeneratedCode, info: CodeInfo,
                         plain_code: Callable[[str], types.CodeType | None]
                         ) -> dict[int, ConditionCheck]:
        """The armed offsets where the one enabled breakpoint stops only if its
        condition holds, and hit() would do nothing else first (a target with
        nothing to confirm, a condition that names neither __frame__ nor
        __stack__): there the compiled core evaluates the condition, and a
        false one only counts the hit."""
        checks = {}
        for offset, bps in self.armed(entry, info).items():
            bp = bps[0]
            if len(bps) != 1 or not bp.condition or type(bp.target).confirm is not Target.confirm:
                continue
            code = plain_code(bp.condition)
            if code is not None:
                checks[offset] = ConditionCheck(bp, bp.location_at(entry.code, offset),
                                                bp.condition, code)
        return checks

    def catches(self, event: str) -> bool:
        """An enabled `catch EVENT` (exception, recompile, graph-break, ...)."""
        return any(bp.enabled and isinstance(bp.target, CatchTarget)
                   and bp.target.event == event for bp in self)

    def catches_exceptions(self) -> bool:
        return self.catches("exception")

    def watches_resume_calls(self) -> bool:
        """Some enabled breakpoint could stop in a resume function."""
        return any(bp.enabled and isinstance(bp.target, (ResumeTarget, LineTarget))
                   and not bp.target.compile_time for bp in self)

    def hit(self, entry: GeneratedCode, info: CodeInfo, frame: types.FrameType, instr: Instr,
            stack: StackReader, evaluate: Callable[[str], object],
            report: Callable[[str], None]) -> list[Breakpoint]:
        """The breakpoints that take effect at this instruction (bdb's rules).

        Hits count every time an enabled breakpoint is reached; a condition that
        raises counts as true, as in pdb, with one message.
        """
        reached = []
        for bp in self.at_code(entry, info).get(instr.offset, ()):
            location = bp.location_at(entry.code, instr.offset)
            if not bp.enabled or not _location_enabled(location) or \
                    not bp.target.confirm(frame, entry, instr, stack):
                continue
            reached.append((bp, location))
        return self.take(reached, evaluate, report)

    def take(self, reached: Sequence[tuple[Breakpoint, Location | None]],
             evaluate: Callable[[str], object],
             report: Callable[[str], None]) -> list[Breakpoint]:
        """Of the enabled breakpoints reached (each with its location), those
        that stop: each hit counted, then its condition and ignore count
        applied; a temporary one that stops is deleted."""
        effective: list[Breakpoint] = []
        for bp, location in reached:
            bp.hits += 1
            if location is not None:
                location.hits += 1
            if bp.condition:
                try:
                    if not evaluate(bp.condition):
                        continue
                except Exception as error:  # noqa: BLE001 - user code
                    report(f"*** Error in condition of breakpoint {bp.number} "
                           f"({type(error).__name__}: {error}); stopping")
            if bp.ignore > 0:
                bp.ignore -= 1
                continue
            effective.append(bp)
        for bp in effective:
            if bp.temporary:
                self.delete(bp.number)
        return effective
