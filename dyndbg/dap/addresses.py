"""Instruction addresses of generated code and of compiled graphs' steps,
and the body of a DAP `disassemble` response (pure: no I/O, no torch).

An address is `((serial + 1) << 20) | offset`, written as lowercase hex: the
registry's serial (registration order) makes it the same in every run of the
same script, so an editor can restore instruction breakpoints, and it goes up
with the offset inside one code object. VS Code's disassembly view needs every
address of a response to parse as a BigInt, be unique and ascend, padding
rows included, and wants exactly the number of rows it asked for.

A compiled graph (issue 50) has a window of its own, above every code
object's: graph N's forward at serial `GRAPH_SERIALS + 2 * N`, its backward
at the next, one address per row (an FX node, or a step of inductor's output
code), so that the address of a graph's step is the same in every run too.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, NamedTuple

from dyndbg.dynamo.compiles import GeneratedCode
from dyndbg.engine.codeinfo import CodeInfo, Instr
from dyndbg.ui.text.render import Rename, instruction_text

SHIFT = 20                       # a code object's window: 1 MiB of addresses
WINDOW = 1 << SHIFT
HALF = WINDOW >> 1               # offsets below 0 down to -HALF are padding before the code
# The most rows one response carries; the handler answers a larger request
# with an error rather than build a huge list.
MAX_INSTRUCTIONS = 10000
# Serials from here up are compiled graphs' windows (a million code objects below).
GRAPH_SERIALS = 1 << 20

Source = tuple[str, int | None]   # the (file, line) a row comes from


def address(entry: GeneratedCode, offset: int) -> str:
    """`0x100000` for offset 0 of the first registered code object."""
    return _address_at(entry.serial, offset)


def _address_at(serial: int, byte: int) -> str:
    """The address of `byte` in the window of `serial`, padding (a negative
    byte, or one past the end) included."""
    return "0x%x" % (((serial + 1) << SHIFT) + byte)


def graph_serial(number: int, backward: bool) -> int:
    """The window of graph `number`'s forward, or of its backward."""
    return GRAPH_SERIALS + 2 * number + int(backward)


def graph_of(serial: int) -> tuple[int, bool] | None:
    """(graph number, backward) of a graph's window; None for a code object's."""
    if serial < GRAPH_SERIALS:
        return None
    number, backward = divmod(serial - GRAPH_SERIALS, 2)
    return number, bool(backward)


def graph_address(serial: int, index: int) -> str:
    """The address of row `index` (a node, or an output-code step) of a graph's window."""
    return _address_at(serial, index)


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
    code = entry.code.co_code
    path = entry.code.co_filename
    start = _start_position(info, memory_reference_offset + offset, len(code)) + instruction_offset

    def row_at(position: int) -> tuple[dict, Source]:
        instr = info.instructions[position]
        return _row(entry, info, instr, code, rename), (path, instr.line)
    return _window(entry.serial, len(info), len(code), start, count, row_at)


class GraphRow(NamedTuple):
    """One row of a graph's listing: its text, and the user's (file, line)
    it comes from (None where torch kept none)."""

    text: str
    source: Source | None


def disassemble_graph(serial: int, length: int, row_at: Callable[[int], GraphRow],
                      symbol: str, memory_reference_offset: int, offset: int,
                      instruction_offset: int, count: int) -> list[dict]:
    """The `instructions` of a `disassemble` response in a graph's window
    (`length` rows, row i at `graph_address(serial, i)`, `row_at(i)` its
    text and source): as `disassemble` gives a code object's, one address a
    row, padding rows below the first and past the last."""
    def row(position: int) -> tuple[dict, Source | None]:
        listed = row_at(position)
        return ({"address": graph_address(serial, position), "instruction": listed.text,
                 "symbol": symbol}, listed.source)
    start = memory_reference_offset + offset + instruction_offset
    return _window(serial, length, length, start, count, row)


def _window(serial: int, length: int, end: int, start: int, count: int,
            row_at: Callable[[int], tuple[dict, Source | None]]) -> list[dict]:
    """Exactly `count` rows (at most MAX_INSTRUCTIONS; count <= 0 gives
    none) from row `start` of a window of `length` real rows, `row_at(i)`
    giving row i and its source. Rows outside are padding at the addresses
    below the window's base and from byte `end` up; a start further than
    HALF outside is moved back to that bound. A row names its source
    (`location`, `line`) where it is the first to have one or its source
    differs from the previous one's."""
    count = min(count, MAX_INSTRUCTIONS)
    if count <= 0:
        return []
    # Keep every address inside the window (see parse_address).
    start = max(-HALF, min(start, length + HALF - end - count))
    rows: list[dict] = []
    previous: Source | None = None
    for position in range(start, start + count):
        if position < 0:
            rows.append(_padding(_address_at(serial, position)))
        elif position >= length:
            rows.append(_padding(_address_at(serial, end + position - length)))
        else:
            row, source = row_at(position)
            if source is not None and source != previous:
                path, line = source
                row["location"] = {"name": os.path.basename(path), "path": path}
                if line is not None:
                    row["line"] = line
                previous = source
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
