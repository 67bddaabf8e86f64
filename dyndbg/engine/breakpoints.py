"""Breakpoints: where (a target), and bdb's bookkeeping (condition, ignore,
temporary, enabled, hits).

A target either names one instruction of one code object (`b 12`, `b @34`) or
a source line (`b file.py:9`), which matches where any generated code enters
that line (including code compiled later), as a pdb line breakpoint does.
"""
from __future__ import annotations

import os
import types
from dataclasses import dataclass
from typing import Callable

from dyndbg.engine.codeinfo import CodeInfo


@dataclass
class InstructionTarget:
    code: types.CodeType      # strong reference: its id() stays valid
    offset: int
    index: int
    where: str                # e.g. "f [0/0]"

    def matches(self, code: types.CodeType, info: CodeInfo) -> set[int]:
        return {self.offset} if code is self.code else set()

    def describe(self) -> str:
        return f"{self.where} instr {self.index} @{self.offset}"


@dataclass
class LineTarget:
    filename: str             # as typed
    line: int

    def file_matches(self, co_filename: str) -> bool:
        if os.path.isabs(self.filename) or os.path.exists(self.filename):
            return os.path.realpath(co_filename) == os.path.realpath(self.filename)
        return co_filename == self.filename or co_filename.endswith(os.sep + self.filename)

    def matches(self, code: types.CodeType, info: CodeInfo) -> set[int]:
        if not self.file_matches(code.co_filename):
            return set()
        return set(info.line_entries(self.line))

    def describe(self) -> str:
        return f"{self.filename}:{self.line}"


Target = InstructionTarget | LineTarget


@dataclass
class Breakpoint:
    number: int
    target: Target
    temporary: bool = False
    enabled: bool = True
    condition: str | None = None
    ignore: int = 0
    hits: int = 0

    def describe(self) -> str:
        kind = "tbreak" if self.temporary else "break"
        state = "enabled" if self.enabled else "disabled"
        text = f"{self.number:<4} {kind:<7}{state:<9} {self.target.describe()}"
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

    def get(self, number: int) -> Breakpoint | None:
        return self._by_number.get(number)

    def delete(self, number: int) -> Breakpoint | None:
        bp = self._by_number.pop(number, None)
        self.changed()
        return bp

    def changed(self) -> None:
        """Call after any change to a breakpoint's target or enabled state."""
        self._offsets_cache.clear()

    def at_code(self, code: types.CodeType, info: CodeInfo) -> dict[int, list[Breakpoint]]:
        """offset -> breakpoints there (enabled or not), cached per code object."""
        cached = self._offsets_cache.get(id(code))
        if cached is None:
            cached = {}
            for bp in self:
                for offset in bp.target.matches(code, info):
                    cached.setdefault(offset, []).append(bp)
            self._offsets_cache[id(code)] = cached
        return cached

    def has_enabled(self, code: types.CodeType, info: CodeInfo) -> bool:
        return any(bp.enabled for bps in self.at_code(code, info).values() for bp in bps)

    def hit(self, code: types.CodeType, info: CodeInfo, offset: int,
            evaluate: Callable[[str], object],
            report: Callable[[str], None]) -> list[Breakpoint]:
        """The breakpoints that take effect at this instruction (bdb's rules).

        Hits count every time an enabled breakpoint is reached; a condition that
        raises counts as true, as in pdb, with one message.
        """
        effective: list[Breakpoint] = []
        for bp in self.at_code(code, info).get(offset, ()):
            if not bp.enabled:
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
