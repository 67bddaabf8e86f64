"""Instruction addresses of generated code, and the body of a DAP
`disassemble` response (pure: no I/O, no torch).

An address is `((serial + 1) << 20) | offset`, written as lowercase hex: the
registry's serial (registration order) makes it the same in every run of the
same script, so an editor can restore instruction breakpoints, and it goes up
with the offset inside one code object. VS Code's disassembly view needs every
address of a response to parse as a BigInt, be unique and ascend, padding
rows included, and wants exactly the number of rows it asked for.
"""
from __future__ import annotations

import os
from typing import Iterable

from dyndbg.dynamo.compiles import GeneratedCode
from dyndbg.engine.codeinfo import CodeInfo, Instr
from dyndbg.ui.text.render import Rename, instruction_text

SHIFT = 20                       # a code object's window: 1 MiB of addresses
WINDOW = 1 << SHIFT
HALF = WINDOW >> 1               # offsets below 0 down to -HALF are padding before the code
# The most rows one response carries; the handler answers a larger request
# with an error rather than build a huge list.
MAX_INSTRUCTIONS = 10000


def address(entry: GeneratedCode, offset: int) -> str:
    """`0x100000` for offset 0 of the first registered code object."""
    return "0x%x" % (((entry.serial + 1) << SHIFT) | offset)


def _address_at(entry: GeneratedCode, byte: int) -> str:
    """The address of `byte` in the window of `entry`, padding (a negative
    byte, or one past the end) included."""
    return "0x%x" % (((entry.serial + 1) << SHIFT) + byte)


def parse_address(text: str) -> tuple[int, int] | None:
    """(serial, byte offset) of an address, or None where it does not parse.

    The window is split in the middle: an address just below a code object's
    base (the padding `disassemble` puts before its first instruction) reads
    as a negative offset of that same code object, not as a huge offset of
    the code registered before it, so a client that sends a padding row's
    address back gets the padding around the same code. Real offsets are
    below HALF (512 KiB of bytecode)."""
    if not isinstance(text, str):
        return None
    try:
        value = int(text, 0)
    except ValueError:
        return None
    if value < 0:
        return None
    serial = ((value + HALF) >> SHIFT) - 1
    if serial < 0:
        return None
    return serial, value - ((serial + 1) << SHIFT)


def _same(text: str) -> str:
    return text


def find_entry(entries: Iterable[GeneratedCode], serial: int) -> GeneratedCode | None:
    for entry in entries:
        if entry.serial == serial:
            return entry
    return None


def _start_position(info: CodeInfo, byte: int, codelen: int) -> int:
    """The row of `byte`: an instruction's index, or a padding position
    (negative before the code, len(info) and up past its end), one row per
    byte of padding so that rows and addresses stay one to one."""
    if byte < 0:
        return byte
    if byte >= codelen or not info.instructions:
        return len(info) + max(0, byte - codelen)
    containing = info.containing(byte)
    return containing.index if containing is not None else 0


def disassemble(entry: GeneratedCode, info: CodeInfo, memory_reference_offset: int,
                offset: int, instruction_offset: int, count: int,
                rename: Rename = _same) -> list[dict]:
    """The `instructions` of a `disassemble` response: exactly `count` rows
    (at most MAX_INSTRUCTIONS; count <= 0 gives none) starting at the
    instruction that holds byte `memory_reference_offset + offset`, moved by
    `instruction_offset` instructions. Rows outside the code object are
    padding (`presentationHint: invalid`) at the addresses just below its
    first instruction and just past its last byte. A request further than
    HALF bytes outside the code is moved back to that bound, so that every
    address stays in the code object's window (and positive)."""
    count = min(count, MAX_INSTRUCTIONS)
    if count <= 0:
        return []
    code = entry.code.co_code
    codelen = len(code)
    n = len(info)
    start = _start_position(info, memory_reference_offset + offset, codelen) + instruction_offset
    # Keep every address inside the code object's window (see parse_address).
    start = max(-HALF, min(start, n + HALF - codelen - count))
    rows: list[dict] = []
    located = False
    previous_line: int | None = None
    path = entry.code.co_filename
    for position in range(start, start + count):
        if position < 0:
            rows.append(_padding(_address_at(entry, position)))
        elif position >= n:
            rows.append(_padding(_address_at(entry, codelen + position - n)))
        else:
            instr = info.instructions[position]
            row = _row(entry, info, instr, code, rename)
            if not located or instr.line != previous_line:
                row["location"] = {"name": os.path.basename(path), "path": path}
                if instr.line is not None:
                    row["line"] = instr.line
                located, previous_line = True, instr.line
            rows.append(row)
    return rows


def _padding(at: str) -> dict:
    return {"address": at, "instruction": "", "presentationHint": "invalid"}


def _row(entry: GeneratedCode, info: CodeInfo, instr: Instr, code: bytes,
         rename: Rename) -> dict:
    following = instr.index + 1
    end = info.instructions[following].offset if following < len(info) else len(code)
    return {"address": address(entry, instr.offset),
            "instruction": instruction_text(instr, rename),
            "symbol": entry.label(),
            "instructionBytes": code[instr.offset:end].hex()}
