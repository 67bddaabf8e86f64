"""The value stack depth before each instruction, from the bytecode alone.

CPython 3.11 stores a frame's stack pointer at every trace event; 3.12 and 3.13
do not (stacktop is -1 at opcode and INSTRUCTION events), and no version
stores it while a frame is suspended in a call that was not inlined. The depth
before an instruction is fixed by the bytecode (the compiler guarantees one
depth per instruction), so it is computed here once per code object.
"""
from __future__ import annotations

import bisect
import dis
import sys
import types

from dyndbg.cpython.opcodes import JUMPS, NO_FALL_THROUGH, function_ex_kwargs_slot


def _effect(instr: dis.Instruction, jump: bool) -> int:
    # 3.11's compiler books a call's arguments to PRECALL; at run time PRECALL
    # leaves the stack alone and CALL pops them.
    if instr.opname == "PRECALL":
        return 0
    # A generator frame resumes after RETURN_GENERATOR with the sent value pushed
    # (3.13's table counts it; 3.11 and 3.12's do not).
    if instr.opname == "RETURN_GENERATOR":
        return 1
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
            if instr.opcode in JUMPS and instr.argval in index_of:
                work.append((index_of[instr.argval], depth + _effect(instr, True)))
            if instr.opname in NO_FALL_THROUGH:
                break
            depth += _effect(instr, False)
            k += 1
    return depths


# Instructions that leave one result after popping their operands, and those that
# reach below their own operands (an index into the stack): what they need there.
_PUSHES_ONE = {"BINARY_OP", "BINARY_SUBSCR", "BINARY_SLICE", "COMPARE_OP", "IS_OP",
               "CONTAINS_OP", "BUILD_LIST", "BUILD_TUPLE", "BUILD_MAP", "BUILD_SET",
               "BUILD_SLICE", "BUILD_STRING", "BUILD_CONST_KEY_MAP", "CALL", "CALL_KW",
               "CALL_FUNCTION_EX", "UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "GET_ITER",
               "FORMAT_VALUE", "FORMAT_SIMPLE", "LOAD_ATTR", "TO_BOOL"}
_REACH = {"SWAP": 0, "COPY": 0, "LIST_APPEND": 1, "LIST_EXTEND": 1, "SET_ADD": 1,
          "SET_UPDATE": 1, "DICT_UPDATE": 1, "DICT_MERGE": 1, "MAP_ADD": 2}


# Those that push more than they leave room for in the rule below: their operands.
# (3.14's LOAD_SPECIAL leaves two for one; 3.15's GET_ITER two for one too.)
_POPS = {"LOAD_ATTR": 1, "LOAD_METHOD": 1, "LOAD_SUPER_ATTR": 3, "FOR_ITER": 1,
         "UNPACK_SEQUENCE": 1, "UNPACK_EX": 1, "BEFORE_WITH": 1, "LOAD_SPECIAL": 1,
         "GET_ITER": 1}


def _needed(instr: dis.Instruction) -> int:
    """How deep the stack must be for `instr` to stay inside it."""
    if instr.opname in _REACH:
        return (instr.arg or 0) + _REACH[instr.opname]
    pushes = 1 if instr.opname in _PUSHES_ONE else 0
    return max(_POPS.get(instr.opname, 0), pushes - _effect(instr, False))


def underflow(code: types.CodeType) -> int | None:
    """The offset of the first instruction that would read below the bottom of
    the value stack, or None. CPython does not check: it reads outside the frame."""
    depths = stack_depths(code)
    for instr in dis.get_instructions(code):
        depth = depths.get(instr.offset)
        if depth is not None and depth < _needed(instr):
            return instr.offset
    return None


class _Table:
    """One code object's depths, and its instruction offsets in order."""

    def __init__(self, code: types.CodeType) -> None:
        self.code = code      # held, so that id(code) stays this code's
        self.depths = stack_depths(code)
        self.starts = sorted(self.depths)


_tables: dict[int, _Table] = {}  # id(code) -> its table


def _table(code: types.CodeType) -> _Table:
    table = _tables.get(id(code))
    if table is None:
        table = _tables[id(code)] = _Table(code)
    return table


def depth_before(code: types.CodeType, offset: int) -> int | None:
    """The stack depth before the instruction at `offset`, computed once per code
    object (held here, so its id stays valid; generated code lives on anyway)."""
    return _table(code).depths.get(offset)


def depth_table(code: types.CodeType) -> dict[int, int]:
    """Every instruction's depth_before, by offset (for the compiled reader)."""
    return _table(code).depths


def instruction_start(code: types.CodeType, offset: int) -> int | None:
    """The offset of the instruction whose bytes hold `offset`: a frame's
    f_lasti can point into an instruction's inline CACHE entries (a caller
    suspended in an inlined call on 3.11 and 3.12)."""
    starts = _table(code).starts
    k = bisect.bisect_right(starts, offset) - 1
    return starts[k] if k >= 0 else None


def suspended_depth(code: types.CodeType, offset: int) -> int | None:
    """How much of the stack is still the frame's own while its instruction at
    `offset` is in a call: everything for CALL and CALL_KW (the callee borrows
    its arguments, or takes them and the interpreter stores the stack pointer,
    which is then read instead); for CALL_FUNCTION_EX the callable and the
    NULL only (it may replace the argument sequence by a tuple and free it);
    None for any other instruction (it may have popped or replaced its
    operands already: reading them could touch freed memory)."""
    start = instruction_start(code, offset)
    if start is None:
        return None
    depth = depth_before(code, start)
    if depth is None:
        return None
    opname = dis.opname[code.co_code[start]]
    if opname in ("CALL", "CALL_KW"):
        return depth
    if opname == "CALL_FUNCTION_EX":
        return depth - 1 - function_ex_kwargs_slot(code.co_code[start + 1])
    return None
