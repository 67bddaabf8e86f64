"""The checks a patch must pass: CPython has no bytecode verifier, so each rule
here stands for a way a patched instruction crashed the interpreter or corrupted
memory (tests/programs/patch_hazards.py keeps one case of each)."""
from __future__ import annotations

import collections
import difflib
import dis
import types
from typing import NamedTuple, Sequence

from dyndbg.cpython.opcodes import (JUMPS, OWNING_LOADS, handler_trusted_slots, pushes_null,
                                    trusted_slots)
from dyndbg.cpython.stackdepth import stack_depths, underflow
from dyndbg.dynamo.errors import CacheError


def check(before: types.CodeType, after: types.CodeType) -> None:
    """Refuse (CacheError) `after`, the patched `before`, unless it is safe to run."""
    _check_stack(after)
    _check_borrows(after)
    diff = Diff.of(before, after)
    _check_end(diff)
    _check_unchecked(diff)
    depths = stack_depths(after)
    _check_layout(diff, depths)
    _check_trusted(diff, depths)


def listing(code: types.CodeType) -> list[dis.Instruction]:
    """The instructions as `ll` shows and numbers them (no CACHE entries)."""
    return [i for i in dis.get_instructions(code) if i.opname != "CACHE"]


def _check_stack(code: types.CodeType) -> None:
    """Refuse code whose stack would go below its bottom on some path."""
    try:
        offset = underflow(code)
    except Exception as error:  # noqa: BLE001
        raise CacheError(f"the patched code's stack cannot be followed: {error}") from None
    if offset is not None:
        instr = next(i for i in listing(code) if i.offset == offset)
        raise CacheError(f"the patched code would pop below the bottom of the value stack "
                         f"at {instr.opname} @{offset}")


def _check_borrows(code: types.CodeType) -> None:
    """Refuse patched code that still borrows a local (3.14's LOAD_FAST_BORROW): the
    compiler's proof that the local outlives the borrowed reference was made for
    the code it compiled (edits/patching.py makes every such load an owning one)."""
    borrowed = next((i for i in listing(code) if i.opname in OWNING_LOADS), None)
    if borrowed is not None:
        raise CacheError(f"refused: {borrowed.opname} @{borrowed.offset} would push a "
                         "borrowed reference that the patch may outlive")


# These trust the type of an operand (CPython checks it in debug builds only): a list
# op handed a slice corrupts memory, FOR_ITER calls an int's missing tp_iternext,
# MAKE_FUNCTION reads a constant as a code object, RERAISE a value as an exception
# (each crash seen). A patch may not come before one of them.
_UNCHECKED = {"LIST_APPEND", "LIST_EXTEND", "MAP_ADD", "DICT_MERGE", "DICT_UPDATE",
              "SET_ADD", "SET_UPDATE", "LIST_TO_TUPLE", "CALL_INTRINSIC_1",
              "CALL_INTRINSIC_2", "FOR_ITER", "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE",
              "RERAISE", "POP_EXCEPT"}


def _check_end(diff: Diff) -> None:
    if not diff.new or not diff.new[-1].opname.startswith(("RETURN", "RAISE", "RERAISE", "JUMP")):
        raise CacheError("refused: the patched code would run off its end")


def _check_unchecked(diff: Diff) -> None:
    changed = diff.changed() or (frozenset({len(diff.new) - 1})
                                 if diff.before.co_code != diff.after.co_code else frozenset())
    if not changed:
        return
    # Any jump back (3.11's POP_JUMP_BACKWARD_IF_* too) runs later code again.
    loops = any(i.opcode in JUMPS and i.argval < i.offset for i in diff.new)
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
# Plain value loads a patch may change or delete, but not write: their argument
# indexes a table unchecked (3.14+; `LOAD_CONST n` loads the same value).
REPLACEABLE = SAFE | {"LOAD_SMALL_INT", "LOAD_COMMON_CONSTANT"}


def _check_layout(diff: Diff, new_depths: dict[int, int]) -> None:
    """Refuse a patch that touches an instruction outside SAFE, pushes a NULL, or
    leaves a later instruction (other than a return) at another stack depth."""
    old, new = diff.old, diff.new
    old_depths = stack_depths(diff.before)
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
        for instr, allowed in [(i, REPLACEABLE) for i in old[a0:a1]] + \
                [(i, SAFE) for i in new[b0:b1]]:
            null = pushes_null(instr)
            if instr.opname not in allowed or null:
                raise CacheError(f"refused: a patch may only add, change or delete "
                                 f"{', '.join(sorted(SAFE))} (without NULL), not "
                                 f"{instr.opname}{' with NULL' if null else ''}")


# How many values each SAFE instruction takes from the stack.
_POPS = {"STORE_FAST": 1, "POP_TOP": 1, "BINARY_OP": 2, "BINARY_SUBSCR": 2, "COMPARE_OP": 2,
         "IS_OP": 2, "CONTAINS_OP": 2, "UNARY_NEGATIVE": 1, "UNARY_NOT": 1, "UNARY_INVERT": 1,
         "LOAD_ATTR": 1, "RETURN_VALUE": 1}


def _pops(instr: dis.Instruction) -> int:
    return instr.arg or 0 if instr.opname == "BUILD_TUPLE" else _POPS.get(instr.opname, 0)


def _check_trusted(diff: Diff, depths: dict[int, int]) -> None:
    """Refuse a changed instruction that would take, as an operand, a value the
    interpreter trusts (a call's NULL, an unbound local's, an iterator, 3.14's lasti
    in a handler): it crashes."""
    new = diff.new
    index = {instr.offset: k for k, instr in enumerate(new)}
    sources = [(k + 1, slot) for k, instr in enumerate(new) if depths.get(instr.offset) is not None
               for slot in trusted_slots(instr, depths[instr.offset])]
    sources += [(index[offset], slot) for offset, slot in handler_trusted_slots(diff.after)
                if offset in index]
    live: dict[int, set[int]] = collections.defaultdict(set)   # index -> trusted slots
    for first, slot in sources:
        # It stays until the stack shrinks below it (its call, loop end, or store back).
        for j in range(first, len(new)):
            later = depths.get(new[j].offset)
            if later is None or later <= slot:
                break
            live[j].add(slot)
    for k in sorted(diff.changed()):
        depth = depths.get(new[k].offset)
        if depth is not None and live[k].intersection(range(depth - _pops(new[k]), depth)):
            raise CacheError(f"refused: {new[k].opname} at {k} would take a value the "
                             "interpreter trusts without checking (a call's NULL, an "
                             "iterator, an unbound local, a handler's lasti) as its operand")


class Diff(NamedTuple):
    """The listings of the code before and after a patch, matched once."""

    before: types.CodeType
    after: types.CodeType
    old: list[dis.Instruction]
    new: list[dis.Instruction]
    opcodes: Sequence[tuple[str, int, int, int, int]]   # difflib's, over (opname, argrepr)

    @classmethod
    def of(cls, before: types.CodeType, after: types.CodeType) -> Diff:
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


def _comparable(instructions: list[dis.Instruction]) -> list[tuple[str, str]]:
    # A jump's argrepr names an offset, which moves when anything before it does.
    return [(i.opname, "" if i.opcode in JUMPS else i.argrepr) for i in instructions]
