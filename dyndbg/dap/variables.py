"""DAP variables and their references for one stop (pure: no I/O).

A `variablesReference` names a scope (Locals, the Value stack) or one
expandable value. References live for one stop: `clear()` on resume forgets
them, and numbers are never handed out again, so a client asking with an old
one gets StaleReference, never another object's values.

Every read of a user object (its repr, attributes, length, items) is guarded
(and time-limited in the main thread, where the limit's alarm works): a
failing or slow one shows as a text, never escapes.
"""
from __future__ import annotations

import functools
import itertools
import sys
from enum import Enum
from typing import Callable, Iterable, Iterator, NamedTuple, TypeVar, cast

from dyndbg.cpython import NULL
from dyndbg.engine.recording.recorded_values import Summary
from dyndbg.timelimit import time_limit
from dyndbg.ui.text.values import REPR_SECONDS, cut, safe_repr, summarize, type_name

TENSOR_VALUES = 64          # a tensor up to this many elements lists its values
MAX_REFERENCE = 2**31 - 1   # int32, as DAP ids are


class StaleReference(KeyError):
    """A variablesReference unknown in this stop (from before a resume, or never given)."""


class Kind(Enum):
    INDEXED = "indexed"     # a sequence: children 0..n-1, paged
    NAMED = "named"         # a dict or an object: children by name, paged
    TENSOR = "tensor"       # a tensor's properties (and its values when small)


class _Target(NamedTuple):
    kind: Kind
    value: object           # what is expanded (kept alive while the stop lasts)
    items: list | None      # a scope's (name, value) pairs, fixed when made


class _Expansion(NamedTuple):
    kind: Kind
    size: int               # children (for indexedVariables / namedVariables)


T = TypeVar("T")


def _guarded(read: Callable[[], T], what: str) -> T | Summary:
    """read(), or a Summary saying why it failed (a user __getattr__ raising or hanging)."""
    try:
        with time_limit(REPR_SECONDS):
            return read()
    except Exception as error:  # noqa: BLE001 - user code; TimeLimitExceeded too
        return Summary("", f"<{what} failed: {type(error).__name__}: {safe_repr(error)}>")


def _torch_types() -> tuple[type, ...]:
    torch = sys.modules.get("torch")
    return () if torch is None else (torch.Tensor,)


def _is_size(value: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Size)


def _module_like(value: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module)


def _own_dict(value: object) -> dict | None:
    """The object's __dict__ read past any __getattr__/__getattribute__ of its class."""
    attrs = _guarded(lambda: object.__getattribute__(value, "__dict__"), "__dict__")
    return attrs if type(attrs) is dict else None


def _named_items(value: object) -> Iterator[tuple[str, object]]:
    """An object's children: a module's parameters, buffers and submodules
    by name, then its other attributes, dunders and underscored module
    bookkeeping skipped; a namedtuple's fields."""
    attrs = _own_dict(value) or {}
    if _module_like(value):
        for table in ("_parameters", "_buffers", "_modules"):
            children = attrs.get(table)
            if type(children) is dict:
                yield from ((str(k), v) for k, v in list(children.items()) if v is not None)
        attrs = {k: v for k, v in attrs.items() if not k.startswith("_")}
    for name, item in list(attrs.items()):
        if isinstance(name, str) and not (name.startswith("__") and name.endswith("__")):
            yield name, item


def _expansion(value: object) -> _Expansion | None:
    """How `value` expands, or None where it is shown as a value only (also
    where finding out fails: isinstance() itself may read a user __class__)."""
    expansion = _guarded(lambda: _expansion_of(value), "expansion")
    return expansion if isinstance(expansion, _Expansion) else None


def _expansion_of(value: object) -> _Expansion | None:
    if value is NULL or isinstance(value, (Summary, str, bytes, bytearray, int, float,
                                           complex, type(None), range)):
        return None
    if isinstance(value, _torch_types()):
        return _Expansion(Kind.TENSOR, 0)
    if _is_size(value):
        return None
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        fields: tuple[str, ...] = type(value)._fields  # type: ignore[attr-defined]  # a namedtuple's class
        size = _guarded(lambda: len(fields), "len")
        return _Expansion(Kind.NAMED, size) if isinstance(size, int) and size else None
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        size = _guarded(lambda: len(value), "len")
        if not isinstance(size, int) or size == 0:
            return None
        return _Expansion(Kind.NAMED if isinstance(value, dict) else Kind.INDEXED, size)
    if isinstance(value, type):
        return None   # a class's namespace is a mappingproxy: too much, not the point
    attrs = _own_dict(value)
    if not attrs:
        return None
    size = sum(1 for _ in _named_items(value))
    return _Expansion(Kind.NAMED, size) if size else None


class References:
    """The references of one stop."""

    def __init__(self) -> None:
        self._targets: dict[int, _Target] = {}
        self._by_id: dict[int, int] = {}        # id(value) -> its reference, this stop
        self._next = 1

    def _new(self, target: _Target) -> int:
        ref = self._next
        # Wrapping (after 2**31 references) is the only reuse; never within a stop.
        self._next = ref + 1 if ref < MAX_REFERENCE else 1
        self._targets[ref] = target
        return ref

    def scope(self, items: list[tuple[str, object]]) -> int:
        """A fixed, named list of values (Locals, the Value stack)."""
        return self._new(_Target(Kind.NAMED, None, list(items)))

    def expand(self, value: object, kind: Kind) -> int:
        """The reference of an expandable value (the same one again within this stop)."""
        ref = self._by_id.get(id(value))
        if ref is not None and self._targets[ref].value is value:
            return ref
        ref = self._new(_Target(kind, value, None))
        self._by_id[id(value)] = ref
        return ref

    def clear(self) -> None:
        """Forget every reference (the program resumes)."""
        self._targets.clear()
        self._by_id.clear()

    def variables(self, ref: int, start: int = 0, count: int = 0) -> list[dict]:
        """The children of `ref`, `count` of them from `start` (0: all)."""
        target = self._targets.get(ref) if isinstance(ref, int) else None
        if target is None:
            raise StaleReference(ref)
        start = max(0, start)
        stop = None if count <= 0 else start + count
        page = _guarded(lambda: list(itertools.islice(_children(target), start, stop)),
                        "items")
        if isinstance(page, Summary):
            return [variable("<error>", page, self)]
        return [variable(name, value, self) for name, value in page]


def _children(target: _Target) -> Iterator[tuple[str, object]]:
    if target.items is not None:
        return iter(target.items)
    value = target.value
    if target.kind is Kind.TENSOR:
        return _tensor_children(value)
    if target.kind is Kind.INDEXED:
        return ((str(i), item) for i, item in enumerate(cast(Iterable[object], value)))
    if isinstance(value, dict):
        return ((cut(safe_repr(k)), v) for k, v in list(value.items()))
    if isinstance(value, tuple):    # a namedtuple
        fields: tuple[str, ...] = type(value)._fields  # type: ignore[attr-defined]  # a namedtuple's class
        return ((str(f), _guarded(functools.partial(getattr, value, f), str(f))) for f in fields)
    return _named_items(value)


_TENSOR_PROPERTIES = ("shape", "dtype", "device", "requires_grad", "grad_fn", "is_leaf")


def _tensor_children(t: object) -> Iterator[tuple[str, object]]:
    """A tensor's properties; its values (nested lists) when it is small and
    a plain tensor (a subclass's values may run its own code)."""
    for name in _TENSOR_PROPERTIES:
        yield name, _guarded(functools.partial(getattr, t, name), name)
    yield "stride", _guarded(lambda: t.stride(), "stride")  # type: ignore[attr-defined]  # a tensor, typed object
    if _guarded(lambda: _small_plain(t), "numel") is True:
        yield "values", _guarded(lambda: t.detach().tolist(), "values")  # type: ignore[attr-defined]  # a tensor, typed object


def _small_plain(t) -> bool:
    torch = sys.modules["torch"]
    return (type(t) in (torch.Tensor, torch.nn.Parameter) and t.device.type != "meta"
            and t.numel() <= TENSOR_VALUES)


def variable(name: str, value: object, refs: References) -> dict:
    """A DAP Variable: the summary text and type column of `stack`/`locals`,
    and a reference to its children where it has any."""
    # summarize and type_name call isinstance(), which reads __class__ through
    # a user __getattribute__: where that raises, the plain repr and type.
    text = _guarded(lambda: summarize(value), "summary")
    kind = _guarded(lambda: type_name(value), "type")
    result: dict = {"name": name,
                    "value": text if isinstance(text, str) else cut(safe_repr(value)),
                    # the listings leave the type out where the summary names it; DAP's column is its own
                    "type": (kind if isinstance(kind, str) else "")
                    or ("" if value is NULL else type(value).__name__),
                    "variablesReference": 0}
    expansion = _expansion(value)
    if expansion is None:
        return result
    result["variablesReference"] = refs.expand(value, expansion.kind)
    if expansion.kind is Kind.INDEXED:
        result["indexedVariables"] = expansion.size
    elif expansion.kind is Kind.NAMED:
        result["namedVariables"] = expansion.size
    return result
