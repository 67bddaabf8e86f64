"""Breakpoints: where (a target), and bdb's bookkeeping (condition, ignore,
temporary, enabled, hits).

A target says which instructions of a generated code object it arms
(`offsets`), and may confirm a hit against the live stack (`confirm`), e.g.
that the callable about to be called really is graph 2. Targets name code
that may not exist yet: they are pending until dynamo compiles matching code.

- InstructionTarget: one instruction of one code object (`b 12`, `b @34`)
- LineTarget: where generated code enters a source line (`b file.py:9`)
- GraphCallTarget: calls of compiled graphs (`b graph 2`, `b __compiled_fn_*`)
- ResumeTarget: entry to resume functions (`b resume`, `b torch_dynamo_resume_in_f*`)
- FunctionTarget: entry to the transformed code of a user function (`b f`)
- CatchTarget: `catch compile|recompile|graph-break`
- MarkerTarget: torch's `<BREAKPOINT>` markers (breakpoint 0, built in)
"""
from __future__ import annotations

import fnmatch
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Callable

from dyndbg.cpython import CALL_OPNAMES, MARKER_LOAD, SILENT_OPNAMES, call_site
from dyndbg.dynamo.markers import breakpoint_marker
from dyndbg.dynamo.names import GRAPH_NAME, RESUME_GLOBAL, graph_number
from dyndbg.dynamo.registry import GeneratedCode, is_resume_name
from dyndbg.engine.codeinfo import CodeInfo, Instr


StackReader = Callable[[], "list[object] | None"]   # reads the value stack on demand


def entry_offset(info: CodeInfo) -> int | None:
    """The first instruction that can stop (RESUME never does)."""
    for instr in info.instructions:
        if instr.opname not in SILENT_OPNAMES:
            return instr.offset
    return None


def call_offsets(info: CodeInfo) -> set[int]:
    return {i.offset for i in info.instructions if i.opname in CALL_OPNAMES}


class Target:
    # True where offsets() are candidates and confirm() decides when reached
    # (listings mark those `B1?`).
    checked_when_reached = False

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        raise NotImplementedError

    def confirm(self, frame: types.FrameType, entry: GeneratedCode, instr: Instr,
                stack: StackReader) -> bool:
        return True

    def describe(self) -> str:
        raise NotImplementedError


@dataclass
class InstructionTarget(Target):
    code: types.CodeType      # strong reference: its id() stays valid
    offset: int
    index: int
    where: str                # e.g. "f [0/0]"

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        return {self.offset} if entry.code is self.code else set()

    def describe(self) -> str:
        return f"{self.where} instr {self.index} @{self.offset}"


@dataclass
class LineTarget(Target):
    filename: str             # as typed
    line: int

    def file_matches(self, co_filename: str) -> bool:
        if os.path.isabs(self.filename) or os.path.exists(self.filename):
            return os.path.realpath(co_filename) == os.path.realpath(self.filename)
        return co_filename == self.filename or co_filename.endswith(os.sep + self.filename)

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if not self.file_matches(entry.code.co_filename):
            return set()
        return set(info.line_entries(self.line))

    def describe(self) -> str:
        return f"{self.filename}:{self.line}"


class MarkerTarget(Target):
    """The `LOAD_CONST <BREAKPOINT>` that torch's bytecode_debugger.breakpoint()
    leaves in generated code: dyndbg stops there as torch's debugger would."""

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if not entry.has_marker:
            return set()
        marker = breakpoint_marker()
        return {i.offset for i in info.instructions
                if i.opname == MARKER_LOAD and i.argval is marker}

    def describe(self) -> str:
        return "torch's <BREAKPOINT> markers (bytecode_debugger.breakpoint())"


def _called_function(instr: Instr, stack: StackReader) -> object:
    if instr.opname not in CALL_OPNAMES:
        return None
    values = stack()
    site = call_site(instr.opname, instr.arg, values) if values is not None else None
    return None if site is None else site.function


@dataclass
class GraphCallTarget(Target):
    """Calls of compiled graphs whose global name matches `pattern`."""

    checked_when_reached = True

    pattern: str              # fnmatch pattern on the global name, or a graph number
    number: int | None = None

    def name_matches(self, name: str) -> bool:
        if not GRAPH_NAME.fullmatch(name):
            return False
        if self.number is not None:
            return graph_number(name) == self.number
        return fnmatch.fnmatchcase(name, self.pattern)

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if not any(self.name_matches(n) for n in entry.code.co_names):
            return set()
        return call_offsets(info)   # which call is the graph's is confirmed on the stack

    def confirm(self, frame: types.FrameType, entry: GeneratedCode, instr: Instr,
                stack: StackReader) -> bool:
        function = _called_function(instr, stack)
        return function is not None and any(
            frame.f_globals.get(n) is function for n in frame.f_code.co_names
            if self.name_matches(n))

    def describe(self) -> str:
        return f"graph {self.number}" if self.number is not None else self.pattern


@dataclass
class ResumeTarget(Target):
    """Entry to resume functions: all, by code name, or by `__resume_at_*` global."""

    pattern: str = "*"        # on the resume function's name, or on its global name

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if not entry.is_resume:
            return set()
        if not self.pattern.startswith("__resume_at_") and \
                not fnmatch.fnmatchcase(entry.function, self.pattern):
            return set()
        offset = entry_offset(info)
        return set() if offset is None else {offset}

    def confirm(self, frame: types.FrameType, entry: GeneratedCode, instr: Instr,
                stack: StackReader) -> bool:
        if not self.pattern.startswith("__resume_at_"):
            return True
        # The global holds the resume function; the running code is it or its transform.
        codes = (entry.code, entry.original)
        return any(getattr(value, "__code__", None) in codes
                   for name, value in frame.f_globals.items()
                   if RESUME_GLOBAL.fullmatch(name) and fnmatch.fnmatchcase(name, self.pattern))

    def describe(self) -> str:
        return "resume" if self.pattern == "*" else self.pattern


def module_name_of(filename: str) -> str | None:
    """The name of the loaded module whose file is `filename` (`__main__` for a script)."""
    real = os.path.realpath(filename)
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and os.path.realpath(path) == real:
            return name
    return None


@dataclass
class FunctionTarget(Target):
    """Entry to the transformed code of a user function: `f`, `Net.forward`, `mod.f`."""

    pattern: str

    def names_for(self, entry: GeneratedCode) -> list[str]:
        names = [entry.function, entry.qualname]
        module = module_name_of(entry.code.co_filename)
        if module is not None:
            names.append(f"{module}.{entry.qualname}")
        return names

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if entry.kind != "transformed" or entry.is_resume:
            return set()
        if not any(fnmatch.fnmatchcase(n, self.pattern) for n in self.names_for(entry)):
            return set()
        offset = entry_offset(info)
        return set() if offset is None else {offset}

    def describe(self) -> str:
        return self.pattern


@dataclass
class CatchTarget(Target):
    """`catch compile`: first run of each code object compiled after the
    catchpoint was set;
    `catch recompile`: the same for compile ids after the first (0/1, ...);
    `catch graph-break`: each call from a frame's code into a resume function;
    `catch exception`: every exception raised in generated code (all generated
    frames are traced while it is enabled)."""

    event: str                                  # compile, recompile, graph-break, exception
    since: int = 0                              # registry serials from here are "new"
    caught: set[int] = field(default_factory=set)

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if self.event == "exception":
            return set()  # not an instruction: the engine stops at exception events
        if self.event == "graph-break":
            has_resume = any(RESUME_GLOBAL.fullmatch(n) for n in entry.code.co_names)
            return call_offsets(info) if has_resume else set()
        if entry.kind != "transformed" or entry.compile_id is None:
            return set()
        if self.event == "recompile" and entry.compile_id.endswith("/0"):
            return set()
        offset = entry_offset(info)
        return set() if offset is None else {offset}

    def confirm(self, frame: types.FrameType, entry: GeneratedCode, instr: Instr,
                stack: StackReader) -> bool:
        if self.event == "graph-break":
            code = getattr(_called_function(instr, stack), "__code__", None)
            return code is not None and is_resume_name(code.co_name)
        if entry.serial < self.since or id(entry.code) in self.caught:
            return False  # compiled before the catchpoint, or already caught
        self.caught.add(id(entry.code))   # once per compiled code object
        return True

    def describe(self) -> str:
        return f"catch {self.event}"


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
            if instr.opname in SILENT_OPNAMES:
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
class Breakpoint:
    number: int
    target: Target
    temporary: bool = False
    enabled: bool = True
    condition: str | None = None
    ignore: int = 0
    hits: int = 0

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


class BreakpointTable:
    def __init__(self) -> None:
        self._by_number: dict[int, Breakpoint] = {}
        self._next_number = 1
        self._offsets_cache: dict[int, dict[int, list[Breakpoint]]] = {}
        self._armed_cache: dict[int, dict[int, list[Breakpoint]]] = {}
        self.version = 0    # bumped by every change, for caches derived from the table

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(self._by_number.values(), key=lambda b: b.number))

    def __len__(self) -> int:
        return len(self._by_number)

    def add(self, target: Target, temporary: bool = False,
            condition: str | None = None) -> Breakpoint:
        bp = Breakpoint(self._next_number, target, temporary, condition=condition)
        self._by_number[bp.number] = bp
        self._next_number += 1
        self.changed()
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
                for offset in bp.target.offsets(entry, info):
                    cached.setdefault(offset, []).append(bp)
            self._offsets_cache[id(entry.code)] = cached
        return cached

    def armed(self, entry: GeneratedCode, info: CodeInfo) -> dict[int, list[Breakpoint]]:
        """offset -> enabled breakpoints there: where an opcode event can stop."""
        cached = self._armed_cache.get(id(entry.code))
        if cached is None:
            cached = {offset: [bp for bp in bps if bp.enabled]
                      for offset, bps in self.at_code(entry, info).items()
                      if any(bp.enabled for bp in bps)}
            self._armed_cache[id(entry.code)] = cached
        return cached

    def catches_exceptions(self) -> bool:
        return any(bp.enabled and isinstance(bp.target, CatchTarget)
                   and bp.target.event == "exception" for bp in self)

    def watches_resume_calls(self) -> bool:
        """Some enabled breakpoint could stop in a resume function."""
        return any(bp.enabled and isinstance(bp.target, (ResumeTarget, LineTarget))
                   for bp in self)

    def hit(self, entry: GeneratedCode, info: CodeInfo, frame: types.FrameType, instr: Instr,
            stack: StackReader, evaluate: Callable[[str], object],
            report: Callable[[str], None]) -> list[Breakpoint]:
        """The breakpoints that take effect at this instruction (bdb's rules).

        Hits count every time an enabled breakpoint is reached; a condition that
        raises counts as true, as in pdb, with one message.
        """
        effective: list[Breakpoint] = []
        for bp in self.at_code(entry, info).get(instr.offset, ()):
            if not bp.enabled or not bp.target.confirm(frame, entry, instr, stack):
                continue
            bp.hits += 1
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
