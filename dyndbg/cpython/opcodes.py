"""Facts about instructions that differ between Python versions, by opname.

engine/ and ui/ ask these questions instead of naming opcodes themselves.
"""
from __future__ import annotations

import dis
import inspect
import sys
import types
from typing import Iterable

# A frame's start is reported as its 'call' (settrace) or PY_START (monitoring)
# event; RESUME itself gets no opcode or INSTRUCTION event (measured on
# 3.11-3.13), so no stop can happen there; nor before it (first_traced).
SILENT_OPNAMES = frozenset({"RESUME"})
# A function's first instructions, before its body, on its `def` line: a
# line step into a call goes on over them to the body's first line.
PROLOGUE_OPNAMES = frozenset({"RESUME", "COPY_FREE_VARS", "MAKE_CELL", "NOP"})


def first_traced(instructions: Iterable[dis.Instruction]) -> int:
    """The offset of the first of a code's instructions that gets events: those
    before its first RESUME (a closure's COPY_FREE_VARS and MAKE_CELL, a
    generator's RETURN_GENERATOR) run before the frame's start is reported,
    untraced (CPython's _co_firsttraceable; measured on 3.11-3.13)."""
    for instr in instructions:
        if instr.opname == "RESUME":
            return instr.offset
    return 0


# Calls whose callable and arguments are on the value stack (3.13 adds CALL_KW,
# which carries the keyword names on top; 3.11 and 3.12 use KW_NAMES + CALL).
CALL_OPNAMES = frozenset({"CALL", "CALL_FUNCTION_EX", "CALL_KW"})


def function_ex_kwargs_slot(arg: int | None) -> bool:
    """CALL_FUNCTION_EX has a slot for its keyword arguments: 3.14 always (NULL
    when there are none; the instruction has no argument), earlier if arg & 1."""
    return sys.version_info >= (3, 14) or bool((arg or 0) & 1)


# Instructions that leave the frame with a value: RETURN_VALUE returns the top
# of the stack; RETURN_CONST (3.12, 3.13 only) its constant argument.
RETURN_OPNAMES = frozenset({"RETURN_VALUE", "RETURN_CONST"})
_RETURNS_ITS_ARGUMENT = frozenset({"RETURN_CONST"})

# Opcodes whose argument is a jump target (relative or absolute, by version).
JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)

# Instructions after which execution never goes on to the next one: the next
# is reached only by a jump (or is an exception handler's start).
NO_FALL_THROUGH = frozenset({"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE",
                             "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
                             "JUMP_ABSOLUTE", "JUMP"})

# Instructions that run no Python code and change no object in place: after
# one, every slot of the frame that still holds the same object holds it
# unchanged (the recorder then re-reads only the slots whose object changed).
# Calls, operators, attribute access, truth tests, iteration, the container
# updates (LIST_APPEND, STORE_SUBSCR...) and STORE_DEREF (it changes a cell that
# a container on the stack may hold: seen on 3.14) are not in it. Names of
# 3.11 to 3.15 together: each version has its own subset (3.14 adds the
# borrowed loads, LOAD_SMALL_INT, LOAD_COMMON_CONSTANT, NOT_TAKEN, POP_ITER).
KEEPS_VALUES_OPNAMES = frozenset({
    "NOP", "NOT_TAKEN", "RESUME", "CACHE", "EXTENDED_ARG", "PRECALL", "KW_NAMES", "PUSH_NULL",
    "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_LOAD_FAST",
    "LOAD_FAST_BORROW", "LOAD_FAST_BORROW_LOAD_FAST_BORROW",
    "LOAD_CONST", "LOAD_SMALL_INT", "LOAD_COMMON_CONSTANT", "LOAD_DEREF", "LOAD_CLOSURE",
    "LOAD_GLOBAL",
    "STORE_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "DELETE_FAST",
    "MAKE_CELL", "COPY_FREE_VARS",
    "POP_TOP", "SWAP", "COPY", "END_FOR", "POP_ITER",
    "BUILD_TUPLE", "BUILD_LIST", "BUILD_SLICE", "MAKE_FUNCTION",
    "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP",
    "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE",
    "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE",
})

# The instruction that loads torch's <BREAKPOINT> marker constant.
MARKER_LOAD = "LOAD_CONST"


def is_return(opname: str) -> bool:
    return opname in RETURN_OPNAMES


def returned_value(opname: str, argval: object, stack: list[object]) -> tuple[bool, object]:
    """(True, value) when the instruction returns and the value is known."""
    if opname in _RETURNS_ITS_ARGUMENT:
        return True, argval
    if opname in RETURN_OPNAMES and stack:
        return True, stack[-1]
    return False, None


# Instructions that bind or unbind a local or cell variable: 3.13 adds the
# STORE_FAST_* superinstructions; 3.12's inlined comprehensions save and clear
# a local with LOAD_FAST_AND_CLEAR (and store it back).
_REBINDING = frozenset({"STORE_FAST", "DELETE_FAST", "STORE_DEREF", "DELETE_DEREF",
                        "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST",
                        "LOAD_FAST_AND_CLEAR"})


# Instructions whose argument is a cell or free variable's slot. dis.hasfree
# is no guide: 3.13 lists LOAD_CLOSURE in haslocal, 3.14 LOAD_DEREF too.
_CELL_OPNAMES = frozenset({"LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "MAKE_CELL",
                           "LOAD_CLOSURE", "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF"})


def names_a_cell(opname: str) -> bool:
    return opname in _CELL_OPNAMES


def argument_names(code: types.CodeType) -> tuple[str, ...]:
    count = code.co_argcount + code.co_kwonlyargcount + \
        bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_varnames[:count]


def entry_names(code: types.CodeType) -> tuple[str, ...]:
    """The names bound when a frame of `code` starts, as dynamo's guards read
    them (`L[...]`): its arguments, and its free variables (a closure's cells,
    read through, as `frame.f_locals` gives them)."""
    return argument_names(code) + code.co_freevars


def entry_names_may_change(code: types.CodeType) -> bool:
    """A frame's bindings of entry_names may differ from its start's later on:
    some instruction stores into or deletes one, or one is a cell, which
    another frame (a closure called meanwhile) may set."""
    arguments = set(argument_names(code))
    if code.co_freevars or arguments.intersection(code.co_cellvars):
        return True
    for instr in dis.get_instructions(code):
        if instr.opname in _REBINDING:
            names = instr.argval if isinstance(instr.argval, tuple) else (instr.argval,)
            if arguments.intersection(names):
                return True
    return False


# 3.12+ LOAD_FAST (and 3.13's LOAD_FAST_LOAD_FAST) trust the compiler's proof that
# the local is bound and crash on an unbound one; LOAD_FAST_CHECK raises
# UnboundLocalError, as 3.11's LOAD_FAST does. Code that is changed after the
# compiler (a patch) must load with the checked form.
CHECKED_LOCAL_LOAD = "LOAD_FAST_CHECK" if sys.version_info >= (3, 12) else "LOAD_FAST"
UNCHECKED_LOCAL_LOADS = frozenset({"LOAD_FAST", "LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW",
                                   "LOAD_FAST_BORROW_LOAD_FAST_BORROW"}
                                  if sys.version_info >= (3, 12) else ())

# 3.14's LOAD_FAST_BORROW (and its pair) push a reference the frame does not own:
# the compiler emits them only where it proved that the local outlives it on the
# stack (no store or delete of the local meanwhile, not stored into another
# local, consumed in its basic block). A patch can break that proof (a store
# freed the object under it: a crash), so patched code loads with the owning
# forms, which take the same argument and stack slots.
OWNING_LOADS = {"LOAD_FAST_BORROW": "LOAD_FAST",
                "LOAD_FAST_BORROW_LOAD_FAST_BORROW": "LOAD_FAST_LOAD_FAST"} \
    if sys.version_info >= (3, 14) else {}


def trusted_slots(instr: dis.Instruction, depth: int) -> tuple[int, ...]:
    """The stack slots (0 = bottom) where `instr` leaves values the interpreter later
    uses without checking them, given the stack depth before it. Such a value is a
    call's NULL (3.11/3.12 put it below the callable, 3.13+ above it; 3.14's
    LOAD_SPECIAL pushes one above `__enter__`/`__exit__`), an unbound local saved as
    NULL by LOAD_FAST_AND_CLEAR (3.12+), or GET_ITER's iterator (FOR_ITER calls its
    tp_iternext, in this code or in a 3.11 comprehension's, which gets it as `.0`;
    3.15 pushes the iterable and an index or NULL). A value op handed one crashes."""
    name, bit, above = instr.opname, (instr.arg or 0) & 1, sys.version_info >= (3, 13)
    if name in ("PUSH_NULL", "LOAD_FAST_AND_CLEAR", "LOAD_SPECIAL"):
        return (depth,)
    if name == "GET_ITER":
        return (depth - 1, depth) if sys.version_info >= (3, 15) else (depth - 1,)
    if name == "LOAD_GLOBAL" and bit:
        return (depth + 1 if above else depth,)
    if name == "LOAD_METHOD":                                   # 3.11: [NULL, meth]
        return (depth - 1,)
    if name == "LOAD_ATTR" and bit and sys.version_info >= (3, 12):
        return (depth if above else depth - 1,)                 # the owner's slot, or above
    if name == "LOAD_SUPER_ATTR" and bit:
        return (depth - 2 if above else depth - 3,)
    return ()


def handler_trusted_slots(code: types.CodeType) -> list[tuple[int, int]]:
    """(handler offset, slot) of the lasti an exception handler starts with where
    it is no object: 3.14+ pushes it as a tagged int (a value op on it crashes)."""
    if sys.version_info < (3, 14):
        return []
    return [(e.target, e.depth) for e in dis.Bytecode(code).exception_entries if e.lasti]


# Instructions whose argument's low bit is a flag (the name's index is above it):
# set, LOAD_GLOBAL (3.11+) pushes a NULL too, LOAD_ATTR (3.12+) a method and its
# self, or a NULL and the attribute.
NULL_BIT_OPNAMES = frozenset({"LOAD_GLOBAL", "LOAD_ATTR"} if sys.version_info >= (3, 12)
                             else {"LOAD_GLOBAL"})


def pushes_null(instr: dis.Instruction) -> bool:
    """LOAD_GLOBAL's low bit (3.11+) and LOAD_ATTR's (3.12+) push a NULL too."""
    return instr.opname in NULL_BIT_OPNAMES and bool((instr.arg or 0) & 1)
