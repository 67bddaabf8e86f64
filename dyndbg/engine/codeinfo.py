"""Instruction tables for code objects: index <-> offset, and source lines."""
from __future__ import annotations

import bisect
import dis
import linecache
import types
from dataclasses import dataclass

from dyndbg.cpython import NO_FALL_THROUGH, SILENT_OPNAMES, first_traced


@dataclass(frozen=True)
class Instr:
    index: int
    offset: int
    opname: str
    arg: int | None
    argval: object
    argrepr: str
    line: int | None          # the user's source line this instruction belongs to
    is_jump_target: bool
    jump_target: int | None   # offset this instruction may jump to
    silent: bool = False      # gets no event, so never stops (RESUME, what runs before it)


class CodeInfo:
    """dis-based view of one code object (CACHE entries excluded)."""

    def __init__(self, code: types.CodeType) -> None:
        self.code = code
        self.instructions: list[Instr] = []
        self._index_by_offset: dict[int, int] = {}
        line: int | None = None
        disassembled = list(dis.get_instructions(code))
        traced_from = first_traced(disassembled)
        for i, ins in enumerate(disassembled):
            positions = getattr(ins, "positions", None)
            if positions is not None and positions.lineno is not None:
                line = positions.lineno
            elif ins.starts_line is not None and not isinstance(ins.starts_line, bool):
                line = ins.starts_line
            target = ins.argval if ins.opcode in dis.hasjabs or ins.opcode in dis.hasjrel else None
            self.instructions.append(Instr(i, ins.offset, ins.opname, ins.arg, ins.argval,
                                           ins.argrepr, line, ins.is_jump_target,
                                           target if isinstance(target, int) else None,
                                           ins.opname in SILENT_OPNAMES or ins.offset < traced_from))
            self._index_by_offset[ins.offset] = i

    def __len__(self) -> int:
        return len(self.instructions)

    def index_of(self, offset: int) -> int | None:
        return self._index_by_offset.get(offset)

    def at_offset(self, offset: int) -> Instr | None:
        index = self._index_by_offset.get(offset)
        return None if index is None else self.instructions[index]

    def containing(self, offset: int) -> Instr | None:
        """The instruction whose bytes hold `offset`: at an exception, or in a
        traceback, the offset can point into an instruction's inline cache."""
        offsets = [i.offset for i in self.instructions]
        k = bisect.bisect_right(offsets, offset) - 1
        return self.instructions[k] if k >= 0 and offset >= 0 else None

    @property
    def has_backward_jump(self) -> bool:
        """Some instruction can jump back (a loop): any instruction may run again."""
        return any(i.jump_target is not None and i.jump_target <= i.offset
                   for i in self.instructions)

    def line_entries(self, line: int) -> list[int]:
        """Offsets where execution enters `line`, as CPython's line events count
        it: an instruction of the line reached in sequence from another line
        (the start of a run), and a jump target of the line that a jump
        reaches backward or from another line. A forward jump within the line
        does not enter it again (torch 2.15's profiler template around each
        graph call is such an `if` inside one line: arming its joins stopped 3
        times per execution), nor does a run that follows a return or jump,
        which only jumps reach (3.14 copies a block's tail after its return)."""
        sources: dict[int, list[Instr]] = {}
        for instr in self.instructions:
            if instr.jump_target is not None:
                sources.setdefault(instr.jump_target, []).append(instr)
        entries = []
        previous: int | None = None     # the line execution falls in from
        falls_in = True                 # the code's first instruction is entered
        for instr in self.instructions:
            if instr.silent:
                continue  # never stops: the line is entered at the next instruction
            if instr.line == line and ((falls_in and previous != line)
                                       or self._reentered(instr, sources)):
                entries.append(instr.offset)
            previous, falls_in = instr.line, instr.opname not in NO_FALL_THROUGH
        return entries

    @staticmethod
    def _reentered(instr: Instr, sources: dict[int, list[Instr]]) -> bool:
        if not instr.is_jump_target:
            return False
        jumps = sources.get(instr.offset)
        if not jumps:
            return True   # an exception handler's start: no jump says where from
        return any(j.offset >= instr.offset or j.line != instr.line for j in jumps)

    def source_line(self, line: int | None) -> str:
        if line is None:
            return ""
        return linecache.getline(self.code.co_filename, line).strip()


def code_info(entry_extra: dict, code: types.CodeType) -> CodeInfo:
    """The CodeInfo cached in a registry entry's `extra` dict."""
    info = entry_extra.get("codeinfo")
    if info is None:
        info = entry_extra["codeinfo"] = CodeInfo(code)
    return info
