"""Values as they were when an instruction was recorded (history.py).

Immutable objects are kept as they are; plain tensors up to a size as
copies, shared between records while the tensor's version counter says it is
unchanged; small lists, tuples, dicts and sets as new containers of kept
values; everything else as a Summary of its type taken then. Nothing is kept
by a reference whose later in-place change would show a wrong past, and no
user code (a __repr__) runs on this hot path.
"""
from __future__ import annotations

import operator
import types
import weakref
from typing import NamedTuple

from dyndbg import cores
from dyndbg.cpython import NULL
from dyndbg.dynamo.tensor_copy import (PLAIN_TENSOR_TYPES, TORCH_IMMUTABLE_TYPES, Tensor,
                                       copy_tensor, describe, describe_module, nbytes, version)

AS_IS: frozenset[type] = frozenset({
    int, float, complex, bool, str, bytes, type(None), type(NULL), type(Ellipsis), range,
    type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType,
    types.ModuleType, types.MethodWrapperType, types.WrapperDescriptorType,
    types.MethodDescriptorType, *TORCH_IMMUTABLE_TYPES})
CONTAINER_ITEMS = 64     # larger containers are summarized
CONTAINER_DEPTH = 3


class ContainerBounds(NamedTuple):
    """The lists and tuples the compiled keeper keeps itself (the Recorder's
    container_bounds; engine/recording/_recorder.h reads it by index)."""

    items: int      # at most this many items
    depth: int      # nested less deep than this


CONTAINER_BOUNDS = ContainerBounds(CONTAINER_ITEMS, CONTAINER_DEPTH)


class Kept(NamedTuple):
    """What ValueKeeper.keep returns (engine/recording/_keep_value.c reads it,
    and the compiled Recorder.keep builds it, by index)."""

    value: object       # what is kept of the value
    token: object       # None when it cannot change, a _Copy, an _Items, a _Seen or VOLATILE


# tuple.__new__: a NamedTuple's own constructor is a Python function, slower
# (keep() runs for every new value a record keeps).
_new_kept = tuple.__new__


def _cell_text(cell: types.CellType) -> str:
    """A cell's repr (CPython's text), which names no user code."""
    try:
        contents = cell.cell_contents
    except ValueError:
        return f"<cell at {id(cell):#x}: empty>"
    return f"<cell at {id(cell):#x}: {type(contents).__name__} object at {id(contents):#x}>"


def _no_untrack(value: object) -> None:
    return None


# What the keeper makes holds no reference cycle: with the compiled core the
# garbage collector does not walk it (a history holds hundreds of thousands).
_untrack = getattr(cores.history(), "untrack", _no_untrack)


class Summary:
    """What is left of a value the history did not keep: its type and a text."""

    __slots__ = ("type_name", "text")

    def __init__(self, type_name: str, text: str) -> None:
        self.type_name = type_name
        self.text = text
        _untrack(self)

    def __repr__(self) -> str:
        return self.text


class _Copy:
    """One tensor version's copy, shared by the records that saw that version."""

    __slots__ = ("ref", "version", "tensor", "nbytes", "last")

    def __init__(self, original: Tensor, copy: Tensor, seq: int) -> None:
        self.ref = weakref.ref(original)
        self.version = version(original)
        self.tensor = copy
        self.nbytes = nbytes(copy)
        self.last = seq        # the newest record holding it

    def holds(self, tensor: Tensor) -> bool:
        """The tensor is as it was when copied (an inference tensor has no
        version: it is copied anew each time)."""
        return self.version is not None and self.version == tensor._version


class _Seen:
    """The token of a tensor only described (too large to copy): the
    description holds while its version does."""

    __slots__ = ("version", "last")

    def __init__(self, tensor: Tensor) -> None:
        self.version = version(tensor)
        self.last = 0

    holds = _Copy.holds


class _Items:
    """The token of a small container whose items are immutable or plain
    tensors: what was kept of it holds while it has the same items, each
    unchanged (a tensor of the same version)."""

    __slots__ = ("items", "tokens", "last")

    def __init__(self, items: tuple, tokens: list) -> None:
        self.items = items
        self.tokens = tokens
        self.last = 0

    def holds(self, container: list | tuple | dict) -> bool:
        items = _items(container)
        if len(items) != len(self.items) or not all(map(operator.is_, items, self.items)):
            return False
        return all(token is None or token.holds(item)
                   for item, token in zip(items, self.tokens))


def _items(container: list | tuple | dict) -> tuple:
    """A container's items as a flat tuple (a dict's keys and values in turn)."""
    if type(container) is dict:
        return tuple(x for pair in container.items() for x in pair)
    return tuple(container)


# The tokens' holds(), which the compiled core calls (history.entry_points).
TOKEN_CHECKS = (_Copy.holds, _Seen.holds, _Items.holds)


class Limits(NamedTuple):
    copy_elements: int     # tensors with more elements are summarized
    memory_bytes: int      # all copies together


VOLATILE = object()   # a token: kept anew at every record (a container may change in place)


def slot_sources(values: list, previous: list, tokens: list, settled: bool,
                 seq: int) -> list[int]:
    """Where each slot's kept value comes from, for the slots whose kept value
    is not the one the previous record had at the same place: pairs (i, j)
    flattened, ascending in i, with j the previous slot that held the same
    object, unchanged (the stack moved it), or -1 to keep it anew.

    A slot holding the same object as before is unchanged if `settled` (the
    instruction in between changed no object in place), if its token is None
    (immutable) or if its token holds (then `last = seq`).
    engine/recording/_keep_all.c does this in C."""
    known = len(previous)
    sources: list[int] = []
    where: dict[int, int] | None = None
    for i, value in enumerate(values):
        j = i if i < known and value is previous[i] else -1
        if j < 0:
            if where is None:
                where = {id(v): k for k, v in enumerate(previous)}
            j = where.get(id(value), -1)
            if j < 0:
                sources += (i, -1)
                continue
        if not settled:
            token = tokens[j]
            if token is not None:
                if token is VOLATILE or not token.holds(value):
                    sources += (i, -1)
                    continue
                token.last = seq
        if j != i:
            sources += (i, j)
    return sources


class ValueKeeper:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._copies: dict[int, _Copy] = {}    # id(original tensor) -> its latest copy
        self._replaced: list[_Copy] = []       # older versions' copies records may hold
        self.bytes = 0                         # of every copy a record may hold

    @property
    def copies_by_id(self) -> dict[int, _Copy]:
        """id(tensor) -> its latest copy: the dict itself, never replaced (the
        compiled core reads it to reuse a copy that still holds)."""
        return self._copies

    @property
    def copies(self) -> int:
        return len(self._copies) + len(self._replaced)

    def keep_all(self, values: list, seq: int, previous: list, kept: list, tokens: list,
                 settled: bool = False) -> None:
        """Keep `values` (a frame's slots) into `kept` and `tokens`, which hold
        what the frame's previous record kept of `previous`: a slot holding
        an object the previous record held, unchanged (an immutable one, a
        tensor of the same version), reuses its kept value. `settled`: the
        instruction in between changed no object in place. The hot path of
        recording (slot_sources)."""
        sources = slot_sources(values, previous, tokens, settled, seq)
        if sources:
            old_kept, old_tokens = kept[:], tokens[:]
        del kept[len(values):], tokens[len(values):]
        for k in range(0, len(sources), 2):
            i, j = sources[k], sources[k + 1]
            if j >= 0:
                kept_value, token = old_kept[j], old_tokens[j]
            else:
                kept_value, token = self.keep(values[i], seq)
            if i < len(kept):
                kept[i], tokens[i] = kept_value, token
            else:
                kept.append(kept_value)
                tokens.append(token)

    def keep(self, value: object, seq: int, depth: int = 0) -> Kept:
        """What is kept of `value`, and its token: None when it cannot change,
        the _Copy of a tensor, VOLATILE for a container."""
        kind = type(value)
        if kind in AS_IS:
            return _new_kept(Kept, (value, None))
        if kind is slice and {type(value.start), type(value.stop),  # type: ignore[attr-defined]  # kind is slice
                              type(value.step)} <= AS_IS:  # type: ignore[attr-defined]  # kind is slice
            return _new_kept(Kept, (value, None))  # immutable all the way down, as such a tuple
        if kind in PLAIN_TENSOR_TYPES:
            return self._tensor(value, seq)  # type: ignore[arg-type]  # a plain tensor
        if kind in (tuple, list, set, frozenset, dict):
            return self._container(value, seq, depth)
        if kind is types.CellType:     # a closure's variable: its contents then
            return _new_kept(Kept, (Summary("cell", _cell_text(value)), VOLATILE))  # type: ignore[arg-type]  # kind is CellType
        if isinstance(value, type):
            return _new_kept(Kept, (value, None))  # a class with a metaclass
        if isinstance(value, Tensor):
            return _new_kept(Kept, (Summary(kind.__name__, f"{describe(value)} (a tensor "
                                                           "subclass: not copied)"), VOLATILE))
        module = describe_module(value)
        if module is not None:
            # its structure, not its values
            return _new_kept(Kept, (Summary(kind.__name__, module), None))
        # object.__repr__'s text: what a class without a __repr__ of its own shows.
        return _new_kept(Kept, (Summary(kind.__name__, f"<{kind.__module__}.{kind.__qualname__} "
                                                       f"object at {id(value):#x}>"), None))

    def _tensor(self, tensor: Tensor, seq: int) -> Kept:
        known = self._copies.get(id(tensor))
        if known is not None and known.ref() is tensor and known.version is not None \
                and known.version == version(tensor):
            known.last = seq
            return _new_kept(Kept, (known.tensor, known))
        if tensor.numel() > self.limits.copy_elements or \
                nbytes(tensor) > self.limits.memory_bytes // 16:
            return _new_kept(Kept, (Summary(type(tensor).__name__,
                                            f"{describe(tensor)} (not copied: {tensor.numel()} "
                                            "elements > record-copy-limit)"), _Seen(tensor)))
        copy = copy_tensor(tensor)
        if copy is None:
            return _new_kept(Kept, (Summary(type(tensor).__name__,
                                            f"{describe(tensor)} (not copied)"), VOLATILE))
        if known is not None:
            self._replaced.append(known)
        kept = self._copies[id(tensor)] = _Copy(tensor, copy, seq)
        self.bytes += kept.nbytes
        return _new_kept(Kept, (copy, kept))

    def _container(self, value, seq: int, depth: int) -> Kept:
        """A new container of kept items; a tuple of immutables as it is."""
        kind = type(value)
        if len(value) > CONTAINER_ITEMS or depth >= CONTAINER_DEPTH:
            return _new_kept(Kept, (Summary(kind.__name__, f"<{kind.__name__} of {len(value)} items>"),
                                    VOLATILE))
        items = _items(value)
        kept_items, tokens = [], []
        for item in items:
            kept_item, token = self.keep(item, seq, depth + 1)
            kept_items.append(kept_item)
            tokens.append(token)
        if kind is tuple and not any(tokens) and all(map(operator.is_, kept_items, items)):
            return _new_kept(Kept, (value, None))  # immutable all the way down
        if kind is dict:
            kept = dict(zip(kept_items[::2], kept_items[1::2]))
        else:
            kept = kind(kept_items)
        _untrack(kept)
        # A set's order is not its items' order: checked anew each time.
        stable = kind is not set and kind is not frozenset and \
            all(token is not VOLATILE for token in tokens)
        return _new_kept(Kept, (kept, _Items(items, tokens) if stable else VOLATILE))

    def sweep(self, oldest: int) -> None:
        """Forget the copies no record from seq `oldest` on holds."""
        for key in [k for k, c in self._copies.items() if c.last < oldest]:
            self.bytes -= self._copies.pop(key).nbytes
        kept = []
        for copy in self._replaced:
            if copy.last < oldest:
                self.bytes -= copy.nbytes
            else:
                kept.append(copy)
        self._replaced = kept

    def clear(self) -> None:
        self._copies.clear()
        self._replaced.clear()
        self.bytes = 0
