"""Instruction-level edits of generated code, assembled with torch's own helpers.

Indexes are those `ll` shows: dis's instructions without CACHE entries. Torch is
asked not to rewrite any (`safe=True`: by default 3.12+ splits BINARY_SLICE and 3.13
fused loads, which would move every later index); its list is still aligned with
dis's by opname (EXTENDED_ARG) before an edit is placed. An edit mutates torch's
Instruction objects and `transform_code_object` re-assembles jumps, the exception
table, line numbers and stack size; what it cannot assemble, or what would pop
below the bottom of the stack, is refused.
CPython has no bytecode verifier: a local index out of range reads outside the
frame, so locals are given by name and must exist.
"""
from __future__ import annotations

import ast
import collections
import difflib
import dis
import enum
import sys
import types
from typing import NamedTuple

from dyndbg.cpython.opcodes import (CHECKED_LOCAL_LOAD, UNCHECKED_LOCAL_LOADS, pushes_null,
                                     trusted_slot)
from dyndbg.dynamo.cache import CacheError


class PatchAction(enum.Enum):
    REPLACE = "replace"
    INSERT = "insert"
    DELETE = "delete"


class PatchOp(NamedTuple):
    """`replace 12 LOAD_CONST 100`: ARG as dis shows it (number, constant, name)."""

    action: PatchAction
    index: int
    opname: str | None = None
    arg: str | None = None

    def describe(self) -> str:
        words = [self.action.value, str(self.index), self.opname or "", self.arg or ""]
        return " ".join(w for w in words if w)


class Patched(NamedTuple):
    code: types.CodeType
    changed: frozenset[int]     # indexes (as ll shows the patched code) that differ


def parse_op(words: list[str]) -> PatchOp:
    """`replace INDEX OPNAME [ARG]`, `insert INDEX OPNAME [ARG]`, `delete INDEX`."""
    usage = "usage: patch ENTRY replace|insert INDEX OPNAME [ARG] | patch ENTRY delete INDEX"
    if len(words) < 2:
        raise CacheError(usage)
    try:
        action = PatchAction(words[0])
    except ValueError:
        raise CacheError(usage) from None
    if not words[1].isdigit():
        raise CacheError(f"INDEX must be an instruction index as ll shows it, not {words[1]!r}")
    if action is PatchAction.DELETE:
        if len(words) != 2:
            raise CacheError(usage)
        return PatchOp(action, int(words[1]))
    if len(words) < 3:
        raise CacheError(usage)
    opname = words[2].upper()
    if opname not in dis.opmap:
        raise CacheError(f"no opcode {words[2]!r} in Python {sys.version_info[0]}."
                         f"{sys.version_info[1]}")
    return PatchOp(action, int(words[1]), opname, " ".join(words[3:]) or None)


def apply(code: types.CodeType, ops: list[PatchOp]) -> Patched:
    """`code` with `ops` applied in order, each to the code as already patched."""
    patched = code
    for op in ops:
        patched = _apply_one(patched, op)
    return Patched(patched, _Diff.of(_reassembled(code), patched).changed())


def _reassembled(code: types.CodeType) -> types.CodeType:
    """The code as torch's assembler writes it back unchanged: what a patch is compared
    with, so that whatever the assembler lays out its own way is not counted as the patch."""
    from torch._dynamo.bytecode_transformation import transform_code_object
    try:
        return transform_code_object(code, lambda instructions, options: None, safe=True)[0]
    except Exception:  # noqa: BLE001
        return code


def listing(code: types.CodeType) -> list[dis.Instruction]:
    return [i for i in dis.get_instructions(code) if i.opname != "CACHE"]


def _apply_one(code: types.CodeType, op: PatchOp) -> types.CodeType:
    from torch._dynamo.bytecode_transformation import transform_code_object
    shown = listing(code)
    if not 0 <= op.index < len(shown) + (op.action is PatchAction.INSERT):
        raise CacheError(f"no instruction {op.index}: this code has 0..{len(shown) - 1}")

    def edit(instructions: list, options: dict) -> None:
        stores = _stores(instructions)
        _edit(instructions, options)
        _check_loads(instructions, stores)

    def _edit(instructions: list, options: dict) -> None:
        position = _aligned(shown, instructions)
        if op.action is PatchAction.INSERT:
            at = position[op.index] if op.index < len(shown) else len(instructions)
            instructions.insert(at, _instruction(op, options, instructions, position))
            return
        target = instructions[position[op.index]]
        if op.action is PatchAction.DELETE:
            following = instructions[position[op.index] + 1] \
                if position[op.index] + 1 < len(instructions) else None
            for other in instructions:    # jumps to it go to the next instruction
                if other.target is target:
                    other.target = following
            del instructions[position[op.index]]
            return
        new = _instruction(op, options, instructions, position)
        # Mutated in place, so jumps and the exception table still point at it.
        target.opcode, target.opname, target.arg, target.argval = \
            new.opcode, new.opname, new.arg, new.argval
        target.target, target.argrepr = new.target, None

    try:
        patched, _ = transform_code_object(code, edit, safe=True)
    except CacheError:
        raise
    except Exception as error:  # noqa: BLE001 - torch's assembler says no
        raise CacheError(f"the patched code does not assemble: {type(error).__name__}: "
                         f"{error}") from None
    _check_stack(patched)
    diff = _Diff.of(_reassembled(code), patched)
    _check_end(diff)
    _check_unchecked(diff)
    _check_layout(diff)
    _check_trusted(diff)
    return patched


def _aligned(shown: list[dis.Instruction], instructions: list) -> dict[int, int]:
    """dis index -> index in torch's instruction list (same opname where they match)."""
    matcher = difflib.SequenceMatcher(a=[i.opname for i in shown],
                                      b=[i.opname for i in instructions], autojunk=False)
    position: dict[int, int] = {}
    for a, b, size in matcher.get_matching_blocks():
        for k in range(size):
            position[a + k] = b + k
    # An instruction torch rewrote: place it where its neighbour before it went.
    last = -1
    for k in range(len(shown)):
        if k in position:
            last = position[k]
        else:
            position[k] = last + 1
    return position


def _instruction(op: PatchOp, options: dict, instructions: list, position: dict[int, int]):
    """A torch Instruction for OPNAME ARG, reading ARG the way dis prints it."""
    from torch._dynamo.bytecode_transformation import create_instruction
    opname, text = op.opname or "", (op.arg or "").strip()
    opcode = dis.opmap[opname]
    if opcode < dis.HAVE_ARGUMENT:
        if text:
            raise CacheError(f"{opname} takes no argument")
        return create_instruction(opname)
    if not text:
        raise CacheError(f"{opname} needs an argument")
    if opcode in dis.hasconst:
        return create_instruction(opname, argval=_constant(text))
    if opcode in dis.haslocal or opcode in dis.hasfree:
        cells = options["co_cellvars"] + options["co_freevars"]
        names = options["co_varnames"] if opcode in dis.haslocal else cells
        if text not in names:
            raise CacheError(f"no {'local' if opcode in dis.haslocal else 'cell'} variable "
                             f"{text!r} in this code (it has {', '.join(names) or 'none'})")
        if opcode in dis.haslocal and text in cells:
            # Its slot holds the cell: LOAD_DEREF would read a plain value as one.
            raise CacheError(f"{text!r} is a cell variable here (a closure shares it): "
                             "LOAD_DEREF reads it; a patch may not store it")
        if opname == "LOAD_FAST":
            opname = CHECKED_LOCAL_LOAD     # the patch may load it before it is bound
        return create_instruction(opname, argval=text)
    if opcode in dis.hasname:
        push_null = text.startswith("NULL + ")
        name = text[len("NULL + "):] if push_null else text
        if not name.isidentifier():
            raise CacheError(f"{opname} takes a name, not {text!r}")
        if name not in options["co_names"]:
            options["co_names"] = options["co_names"] + (name,)
        if opname == "LOAD_GLOBAL":
            return create_instruction(opname, arg=int(push_null), argval=name)
        if opname == "LOAD_ATTR" and sys.version_info >= (3, 12):
            return create_instruction(opname, arg=0, argval=name)
        return create_instruction(opname, argval=name)
    if opcode in dis.hasjrel or opcode in dis.hasjabs:
        if not text.isdigit() or int(text) not in position:
            raise CacheError(f"{opname} takes the index of its target instruction, as ll shows it")
        return create_instruction(opname, target=instructions[position[int(text)]])
    if opname == "BINARY_OP":
        # CPython indexes a table with it unchecked: a number out of range crashes.
        symbols = [symbol for _, symbol in getattr(dis, "_nb_ops", [])]
        if text.isdigit() and int(text) < len(symbols):
            return create_instruction(opname, arg=int(text))
        if text not in symbols:
            raise CacheError(f"BINARY_OP takes one of {' '.join(symbols)} (or its number, "
                             f"0..{len(symbols) - 1})")
        return create_instruction(opname, arg=symbols.index(text))
    if opname == "COMPARE_OP":
        return create_instruction(opname, arg=_compare_arg(text))
    if not text.isdigit():
        raise CacheError(f"{opname} takes a number")
    return create_instruction(opname, arg=int(text))


def _stores(instructions: list) -> collections.Counter[str]:
    return collections.Counter(i.argval for i in instructions if i.opname == "STORE_FAST")


def _check_loads(instructions: list, stores_before: collections.Counter[str]) -> None:
    """Where a patch removed a store, the local's later loads must check that it is
    bound (3.12+: an unchecked load of an unbound local crashes)."""
    stores = _stores(instructions)
    gone = {name for name, count in stores_before.items() if stores[name] < count}
    for instr in instructions:
        if instr.opname not in UNCHECKED_LOCAL_LOADS:
            continue
        names = instr.argval if isinstance(instr.argval, tuple) else (instr.argval,)
        if not gone.intersection(names):
            continue
        if instr.opname != "LOAD_FAST":
            raise CacheError(f"refused: {instr.opname} {', '.join(names)} would read a local "
                             "the patch leaves unbound, without checking")
        instr.opname, instr.opcode = CHECKED_LOCAL_LOAD, dis.opmap[CHECKED_LOCAL_LOAD]


def _compare_arg(text: str) -> int:
    """COMPARE_OP's argument for `<`, `==`...: as this Python's compiler writes it (each
    version packs the operator with other bits; an operator out of range crashes)."""
    valid = {}
    for symbol in dis.cmp_op:
        compiled = compile(f"a {symbol} b", "<compare>", "eval")
        valid[symbol] = next(i.arg for i in dis.get_instructions(compiled)
                             if i.opname == "COMPARE_OP")
    if text in valid:
        return valid[text]
    if text.isdigit() and int(text) in valid.values():
        return int(text)
    raise CacheError(f"COMPARE_OP takes one of {' '.join(valid)}")


def _constant(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise CacheError(f"not a constant: {text!r} (a number, a string, None, a tuple...)") \
            from None


def _check_stack(code: types.CodeType) -> None:
    """Refuse code whose stack would go below its bottom on some path."""
    from dyndbg.cpython.stackdepth import underflow
    try:
        offset = underflow(code)
    except Exception as error:  # noqa: BLE001
        raise CacheError(f"the patched code's stack cannot be followed: {error}") from None
    if offset is not None:
        instr = next(i for i in listing(code) if i.offset == offset)
        raise CacheError(f"the patched code would pop below the bottom of the value stack "
                         f"at {instr.opname} @{offset}")


# These trust the type of an operand (CPython checks it in debug builds only): a list
# op handed a slice corrupts memory, FOR_ITER calls an int's missing tp_iternext,
# MAKE_FUNCTION reads a constant as a code object, RERAISE a value as an exception
# (each crash seen). A patch may not come before one of them.
_UNCHECKED = {"LIST_APPEND", "LIST_EXTEND", "MAP_ADD", "DICT_MERGE", "DICT_UPDATE",
              "SET_ADD", "SET_UPDATE", "LIST_TO_TUPLE", "CALL_INTRINSIC_1",
              "CALL_INTRINSIC_2", "FOR_ITER", "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE",
              "RERAISE", "POP_EXCEPT"}


def _check_end(diff: _Diff) -> None:
    if not diff.new or not diff.new[-1].opname.startswith(("RETURN", "RAISE", "RERAISE", "JUMP")):
        raise CacheError("refused: the patched code would run off its end")


def _check_unchecked(diff: _Diff) -> None:
    changed = diff.changed() or (frozenset({len(diff.new) - 1})
                                 if diff.before.co_code != diff.after.co_code else frozenset())
    if not changed:
        return
    # Any jump back (3.11's POP_JUMP_BACKWARD_IF_* too) runs later code again.
    loops = any(i.opcode in _JUMPS and i.argval < i.offset for i in diff.new)
    for k, instr in enumerate(diff.new):
        if instr.opname in _UNCHECKED and (loops or k > min(changed)):
            raise CacheError(f"refused: {instr.opname} at {k} (after the patch) trusts the "
                             "type of an operand, which CPython does not check; an edit "
                             "before it could corrupt memory. Patch after it, or `install` "
                             "a code object of your own through dyndbg.cache")


# What a patch may add, change or delete: they produce or consume plain values (never
# a NULL, never a reordering), so everything else on the stack keeps its place.
SAFE = {"NOP", "LOAD_CONST", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_GLOBAL",
        "STORE_FAST", "POP_TOP", "BINARY_OP", "BINARY_SUBSCR", "COMPARE_OP", "IS_OP",
        "CONTAINS_OP", "UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "LOAD_ATTR",
        "RETURN_VALUE", "RETURN_CONST", "BUILD_TUPLE"}


def _check_layout(diff: _Diff) -> None:
    """Refuse a patch that touches an instruction outside SAFE, pushes a NULL, or
    leaves a later instruction (other than a return) at another stack depth."""
    from dyndbg.cpython.stackdepth import stack_depths
    old, new = diff.old, diff.new
    old_depths, new_depths = stack_depths(diff.before), stack_depths(diff.after)
    for tag, a0, a1, b0, b1 in diff.opcodes:
        if tag == "equal":
            for k in range(b1 - b0):
                o, n = old[a0 + k], new[b0 + k]
                if o.opname.startswith("RETURN"):
                    continue
                if old_depths.get(o.offset) != new_depths.get(n.offset):
                    raise CacheError(f"refused: after the patch, {n.opname} at {b0 + k} would "
                                     f"see a stack of depth {new_depths.get(n.offset)} instead "
                                     f"of {old_depths.get(o.offset)}: keep the stack as it was "
                                     "(patch a value, or a pair like LOAD_CONST + BINARY_OP)")
            continue
        for instr in old[a0:a1] + new[b0:b1]:
            null = pushes_null(instr)
            if instr.opname not in SAFE or null:
                raise CacheError(f"refused: a patch may only add, change or delete "
                                 f"{', '.join(sorted(SAFE))} (without NULL), not "
                                 f"{instr.opname}{' with NULL' if null else ''}")


# How many values each SAFE instruction takes from the stack.
_POPS = {"STORE_FAST": 1, "POP_TOP": 1, "BINARY_OP": 2, "BINARY_SUBSCR": 2, "COMPARE_OP": 2,
         "IS_OP": 2, "CONTAINS_OP": 2, "UNARY_NEGATIVE": 1, "UNARY_NOT": 1, "UNARY_INVERT": 1,
         "LOAD_ATTR": 1, "RETURN_VALUE": 1}


def _pops(instr: dis.Instruction) -> int:
    return instr.arg or 0 if instr.opname == "BUILD_TUPLE" else _POPS.get(instr.opname, 0)


def _check_trusted(diff: _Diff) -> None:
    """Refuse a changed instruction that would take, as an operand, a value the
    interpreter trusts (a call's NULL, an unbound local's, an iterator): it crashes."""
    from dyndbg.cpython.stackdepth import stack_depths
    new, depths = diff.new, stack_depths(diff.after)
    live: dict[int, set[int]] = collections.defaultdict(set)   # index -> trusted slots
    for k, instr in enumerate(new):
        depth = depths.get(instr.offset)
        slot = None if depth is None else trusted_slot(instr, depth)
        if slot is None:
            continue
        # It stays until the stack shrinks below it (its call, loop end, or store back).
        for j in range(k + 1, len(new)):
            later = depths.get(new[j].offset)
            if later is None or later <= slot:
                break
            live[j].add(slot)
    for k in sorted(diff.changed()):
        depth = depths.get(new[k].offset)
        if depth is not None and live[k].intersection(range(depth - _pops(new[k]), depth)):
            raise CacheError(f"refused: {new[k].opname} at {k} would take a value the "
                             "interpreter trusts without checking (a call's NULL, an "
                             "iterator, an unbound local) as its operand")


class _Diff(NamedTuple):
    """The listings of the code before and after a patch, matched once."""

    before: types.CodeType
    after: types.CodeType
    old: list[dis.Instruction]
    new: list[dis.Instruction]
    opcodes: list[tuple[str, int, int, int, int]]   # difflib's, over (opname, argrepr)

    @classmethod
    def of(cls, before: types.CodeType, after: types.CodeType) -> _Diff:
        old, new = listing(before), listing(after)
        matcher = difflib.SequenceMatcher(a=_comparable(old), b=_comparable(new),
                                          autojunk=False)
        return cls(before, after, old, new, matcher.get_opcodes())

    def changed(self) -> frozenset[int]:
        """Indexes of the patched listing that are not in the original one."""
        changed: set[int] = set()
        for tag, _, _, first, last in self.opcodes:
            if tag != "equal":
                # A deletion marks the instruction that now stands where it was.
                changed.update(range(first, max(last, first + 1)))
        return frozenset(k for k in changed if k < len(self.new))


_JUMPS = set(dis.hasjrel) | set(dis.hasjabs)


def _comparable(instructions: list[dis.Instruction]) -> list[tuple[str, str]]:
    # A jump's argrepr names an offset, which moves when anything before it does.
    return [(i.opname, "" if i.opcode in _JUMPS else i.argrepr) for i in instructions]
