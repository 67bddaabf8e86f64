"""Instruction-level edits of generated code, assembled with torch's own helpers.

Indexes are those `ll` shows: dis's instructions without CACHE entries. Torch is
asked not to rewrite any (`safe=True`: by default 3.12+ splits BINARY_SLICE and 3.13
fused loads, which would move every later index); its list is still aligned with
dis's by opname (EXTENDED_ARG) before an edit is placed. An edit mutates torch's
Instruction objects and `transform_code_object` re-assembles jumps, the exception
table, line numbers and stack size; what it cannot assemble is refused, and so is
what bytecode_verifier finds unsafe to run. CPython has no bytecode verifier: a local
index out of range reads outside the frame, so locals are given by name and must
exist.
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

from dyndbg.cpython.opcodes import (CHECKED_LOCAL_LOAD, JUMPS, NULL_BIT_OPNAMES, OWNING_LOADS,
                                    UNCHECKED_LOCAL_LOADS, names_a_cell)
from dyndbg.dynamo.edits import verifier as bytecode_verifier
from dyndbg.dynamo.errors import CacheError
from dyndbg.dynamo.edits.verifier import listing


class PatchAction(enum.Enum):
    REPLACE = "replace"
    INSERT = "insert"
    DELETE = "delete"


class Constant(NamedTuple):
    """A patch's constant given as the object itself (from Python: a tensor, any
    object), not as text to read."""

    value: object

    def __str__(self) -> str:
        """Its repr on one line, cut (as the edit's text shows it)."""
        try:
            text = " ".join(repr(self.value).split())
        except Exception:  # noqa: BLE001 - a repr that fails
            text = f"<{type(self.value).__name__} object>"
        return text if len(text) <= 60 else text[:57] + "..."


class PatchOp(NamedTuple):
    """`replace 12 LOAD_CONST 100`: ARG as dis shows it (number, constant, name),
    or a constant itself."""

    action: PatchAction
    index: int  # type: ignore[assignment]  # `ll`'s index; shadows tuple.index, unused here
    opname: str | None = None
    arg: str | Constant | None = None

    def describe(self) -> str:
        words = [self.action.value, str(self.index), self.opname or "",
                 "" if self.arg is None else str(self.arg)]
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


def op_of(action: str, index: int | str, opname: str | None = None,
          arg: object = None) -> PatchOp:
    """dyndbg.cache.patch's arguments: ARG of an instruction that loads a constant
    (LOAD_CONST) is the constant itself, unless it is a string, which is read as
    the prompt reads it (as dis shows it: `'s'`, `(1, 2)`); another instruction's
    ARG is a string so read, or a value taken as its repr (`0`, a jump's target)."""
    constant = arg is not None and not isinstance(arg, str) and opname is not None \
        and dis.opmap.get(opname.upper()) in dis.hasconst
    words = [action, str(index)] + ([opname] if opname else []) + \
        ([] if arg is None or constant else [arg if isinstance(arg, str) else repr(arg)])
    op = parse_op(words)
    return op._replace(arg=Constant(arg)) if constant else op


def apply(code: types.CodeType, ops: list[PatchOp]) -> Patched:
    """`code` with `ops` applied in order, each to the code as already patched."""
    patched = code
    for op in ops:
        patched = _apply_one(patched, op)
    return Patched(patched, bytecode_verifier.Diff.of(_reassembled(code), patched).changed())


def _reassembled(code: types.CodeType) -> types.CodeType:
    """The code as torch's assembler writes it back unchanged: what a patch is compared
    with, so that whatever the assembler lays out its own way is not counted as the patch."""
    from torch._dynamo.bytecode_transformation import transform_code_object
    try:
        return transform_code_object(code, lambda instructions, options: _owning_loads(
            instructions), safe=True)[0]
    except Exception:  # noqa: BLE001
        return code


def _apply_one(code: types.CodeType, op: PatchOp) -> types.CodeType:
    from torch._dynamo.bytecode_transformation import transform_code_object
    shown = listing(code)
    if not 0 <= op.index < len(shown) + (op.action is PatchAction.INSERT):
        raise CacheError(f"no instruction {op.index}: this code has 0..{len(shown) - 1}")

    def edit(instructions: list, options: dict) -> None:
        stores = _stores(instructions)
        _edit(instructions, options)
        _owning_loads(instructions)
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
    bytecode_verifier.check(_reassembled(code), patched)
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
    opname = op.opname or ""
    opcode = dis.opmap[opname]
    if isinstance(op.arg, Constant):
        if opcode not in dis.hasconst:
            raise CacheError(f"{opname} loads no constant")
        return create_instruction(opname, argval=op.arg.value)
    text = (op.arg or "").strip()
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
        local = not names_a_cell(opname)
        names = options["co_varnames"] if local else cells
        if text not in names:
            raise CacheError(f"no {'local' if local else 'cell'} variable "
                             f"{text!r} in this code (it has {', '.join(names) or 'none'})")
        if local and text in cells:
            # Its slot holds the cell: LOAD_DEREF would read a plain value as one.
            raise CacheError(f"{text!r} is a cell variable here (a closure shares it): "
                             "LOAD_DEREF reads it; a patch may not store it")
        if opname in ("LOAD_FAST", "LOAD_FAST_BORROW"):
            opname = CHECKED_LOCAL_LOAD     # owning; the patch may load it before it is bound
        return create_instruction(opname, argval=text)
    if opcode in dis.hasname:
        push_null = text.startswith("NULL + ")
        name = text[len("NULL + "):] if push_null else text
        if not name.isidentifier():
            raise CacheError(f"{opname} takes a name, not {text!r}")
        if name not in options["co_names"]:
            options["co_names"] = options["co_names"] + (name,)
        if opname in NULL_BIT_OPNAMES:
            # Torch's assembler keeps the argument's low bit: dis's `NULL + ` sets it on
            # LOAD_GLOBAL; LOAD_ATTR's method form (`NULL|self + `) is not written.
            return create_instruction(opname, arg=int(push_null and opname == "LOAD_GLOBAL"),
                                      argval=name)
        return create_instruction(opname, argval=name)
    if opcode in JUMPS:
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


def _owning_loads(instructions: list) -> None:
    """3.14+: every borrowed load of the code made an owning one (the compiler's
    proof that the borrow is safe covers the code it compiled, not a patched one)."""
    for instr in instructions:
        owning = OWNING_LOADS.get(instr.opname)
        if owning is not None:
            instr.opname, instr.opcode = owning, dis.opmap[owning]


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
    valid: dict[str, int] = {}
    for symbol in dis.cmp_op:
        compiled = compile(f"a {symbol} b", "<compare>", "eval")
        for instr in dis.get_instructions(compiled):
            if instr.opname == "COMPARE_OP" and instr.arg is not None:
                valid[symbol] = instr.arg
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
