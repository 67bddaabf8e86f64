"""What an edit of dynamo's cache is: its kind, the record `edits` lists, and the
guards that switch an entry off (evict, guard add) or let it pass once (force once)."""
from __future__ import annotations

import enum
import types
from dataclasses import dataclass, field
from typing import NamedTuple

from dyndbg.dynamo import patching
from dyndbg.dynamo.cache import LiveEntry


class EditKind(enum.Enum):
    EVICT = "evict"
    FORCE = "force"
    GUARD_ADD = "guard add"
    GUARD_DROP = "guard drop"
    PATCH = "patch"
    CODE = "code"                # a code object of the user's own (the API's install)


class Switch:
    """A guard that can be turned off (then it passes). Never raises into torch."""

    def __init__(self, expression: str | None = None, names: dict | None = None) -> None:
        self.on = True
        self.code = compile(expression, "<guard>", "eval") if expression else None
        self.names = names or {}

    def __call__(self, frame_locals: dict) -> bool:
        if not self.on:
            return True
        if self.code is None:
            return False                   # evicted
        try:
            return bool(eval(self.code, self.names, dict(frame_locals)))  # noqa: S307
        except BaseException:  # noqa: BLE001 - called from torch's C++: counts as false
            return False


class Latch:
    """Passes once (force ENTRY once), then fails."""

    def __init__(self) -> None:
        self.used = False

    def __call__(self, _frame_locals: dict) -> bool:
        if self.used:
            return False
        self.used = True
        return True


@dataclass
class Edit:
    number: int
    kind: EditKind
    original: types.CodeType
    compile_ids: tuple[str, ...]
    text: str                                   # the command, as `edits` lists it
    switch: Switch | None = None
    latch: Latch | None = None
    patch: patching.PatchOp | None = None
    code: types.CodeType | None = None          # CODE: what the entry runs instead
    dropped: tuple[str, str] | None = None      # guard drop: (source, text) of the line
    notes: list[str] = field(default_factory=list)
    retired: tuple[str, ...] = ()               # evicted by its undo: compiled meanwhile

    @property
    def function(self) -> str:
        return self.original.co_name

    @property
    def spent(self) -> bool:
        """A `force ... once` that has had its call."""
        return self.latch is not None and self.latch.used

    def describe(self) -> str:
        return f"{self.number}: {self.text}  [{self.function}]{' (used)' if self.spent else ''}"


# Edits that make calls fall through to other entries or to a recompile.
FALL_THROUGH = (EditKind.EVICT, EditKind.GUARD_ADD)


class Replacement(NamedTuple):
    """What one entry runs instead while edits change it."""

    entry: LiveEntry
    guard_manager: object
    code: types.CodeType
    changed: frozenset[int]


def retired_text(edit: Edit) -> str:
    return (f"also evicted {', '.join(edit.retired)}: compiled while calls fell through, "
            "it would not be there without the edits")


def cut_text(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
