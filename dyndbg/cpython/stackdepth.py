"""The value stack depth before each instruction, from the bytecode alone.

CPython stores a frame's stack pointer only at trace events; a frame
suspended in a call keeps its live stack below this static depth, which is
how its stack is read outside an opcode event (see valuestack.read_suspended).
"""
from __future__ import annotations

import dis
import sys
import types

_UNCONDITIONAL = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE",
                  "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
                  "JUMP_ABSOLUTE", "JUMP"}
_JUMPS = set(dis.hasjrel) | set(dis.hasjabs)


def _effect(instr: dis.Instruction, jump: bool) -> int:
    # 3.11's compiler books a call's arguments to PRECALL; at run time PRECALL
    # leaves the stack alone and CALL pops them.
    if instr.opname == "PRECALL":
        return 0
    if instr.opname == "CALL" and sys.version_info < (3, 12):
        return -(instr.arg or 0) - 1
    if instr.opcode < dis.HAVE_ARGUMENT:
        return dis.stack_effect(instr.opcode)
    return dis.stack_effect(instr.opcode, instr.arg or 0, jump=jump)


def stack_depths(code: types.CodeType) -> dict[int, int]:
    """offset -> depth of the value stack just before that instruction runs."""
    bytecode = dis.Bytecode(code)
    instrs = list(bytecode)
    index_of = {instr.offset: k for k, instr in enumerate(instrs)}
    depths: dict[int, int] = {}
    # Exception handlers start with the table's depth, lasti if asked, and the exception.
    work = [(0, 0)] + [(index_of[e.target], e.depth + int(e.lasti) + 1)
                       for e in getattr(bytecode, "exception_entries", ())
                       if e.target in index_of]
    while work:
        k, depth = work.pop()
        while k < len(instrs) and instrs[k].offset not in depths:
            instr = instrs[k]
            depths[instr.offset] = depth
            if instr.opcode in _JUMPS and instr.argval in index_of:
                work.append((index_of[instr.argval], depth + _effect(instr, True)))
            if instr.opname in _UNCONDITIONAL:
                break
            depth += _effect(instr, False)
            k += 1
    return depths


_depths: dict[int, tuple[types.CodeType, dict[int, int]]] = {}  # id(code) -> (code, depths)


def depth_before(code: types.CodeType, offset: int) -> int | None:
    """The stack depth before the instruction at `offset`, computed once per code
    object (held here, so its id stays valid; generated code lives on anyway)."""
    cached = _depths.get(id(code))
    if cached is None:
        cached = _depths[id(code)] = (code, stack_depths(code))
    return cached[1].get(offset)


def suspended_depth(code: types.CodeType, offset: int) -> int | None:
    """How much of the stack is still the frame's own while its instruction at
    `offset` is in a call: everything for CALL (the callee borrows its
    arguments, or takes them and the interpreter stores the stack pointer);
    for CALL_FUNCTION_EX the NULL and the callable only (it replaces the
    argument sequence); None for any other instruction (it may have popped or
    replaced its operands already: reading them could touch freed memory)."""
    depth = depth_before(code, offset)
    if depth is None:
        return None
    opname = dis.opname[code.co_code[offset]]
    if opname == "CALL":
        return depth
    if opname == "CALL_FUNCTION_EX":
        return depth - 1 - (code.co_code[offset + 1] & 1)
    return None
