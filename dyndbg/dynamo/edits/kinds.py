"""What an edit of dynamo's cache is: its kind, the record `edits` lists, the guards
that switch an entry off (evict, guard add) or let it pass once (force once), and why
an entry was compiled while calls fell through (what undo does with it)."""
from __future__ import annotations

import contextlib
import enum
import threading
import types
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple

from dyndbg.dynamo.edits import patching
from dyndbg.dynamo.guards import LiveEntry


class EditKind(enum.Enum):
    EVICT = "evict"
    FORCE = "force"
    GUARD_ADD = "guard add"
    GUARD_DROP = "guard drop"
    PATCH = "patch"
    CODE = "code"                # a code object of the user's own (the API's install)


_bypass = threading.local()


@contextlib.contextmanager
def switches_bypassed() -> Iterator[None]:
    """In this thread, every edit's switch passes: a guard tree checked meanwhile
    answers with the entry's own guards (what plain python would decide)."""
    _bypass.on = True
    try:
        yield
    finally:
        _bypass.on = False


class Switch:
    """A guard that can be turned off (then it passes). Never raises into torch."""

    def __init__(self, expression: str | None = None, names: dict | None = None) -> None:
        self.on = True
        self.code = compile(expression, "<guard>", "eval") if expression else None
        self.names = names or {}
        self.label = "an edit"                 # "edit 3 (evict 0/1)" once numbered

    def __call__(self, frame_locals: dict) -> bool:
        if not self.on or getattr(_bypass, "on", False):
            return True
        if self.code is None:
            return False                   # evicted
        try:
            return bool(eval(self.code, self.names, dict(frame_locals)))  # noqa: S307
        except BaseException:  # noqa: BLE001 - called from torch's C++: counts as false
            return False


class Retired:
    """The guard of an entry an undo evicted for good (not a switch: never bypassed)."""

    def __call__(self, _frame_locals: dict) -> bool:
        return False


class Cause(enum.Enum):
    """Why dynamo compiled an entry while an evict or guard add was active."""
    EDIT = "edit"          # an edit refused an entry whose own guards passed
    OWN = "own"            # every entry failed a guard of its own: plain python compiles too
    UNKNOWN = "unknown"    # no guard failure was recorded for the compile


class CompileCause(NamedTuple):
    compile_id: str
    cause: Cause
    detail: str            # EDIT: which edit refused which entry; OWN: the guards that failed


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
    # the entries compiled while calls fell through, as its undo judged them
    fell_through: tuple[CompileCause, ...] = ()

    @property
    def function(self) -> str:
        return self.original.co_name

    @property
    def retired(self) -> tuple[str, ...]:
        """Entries its undo evicted: the edits caused their compile (or nothing says)."""
        return tuple(c.compile_id for c in self.fell_through if c.cause is not Cause.OWN)

    @property
    def kept(self) -> tuple[str, ...]:
        """Entries compiled meanwhile that its undo kept: plain python compiles them too."""
        return tuple(c.compile_id for c in self.fell_through if c.cause is Cause.OWN)

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


def fell_through_lines(edit: Edit) -> list[str]:
    """What its undo did with each entry compiled while calls fell through, and why."""
    lines = []
    for cause in edit.fell_through:
        cid, detail = cause.compile_id, cut_text(cause.detail, 160)
        if cause.cause is Cause.EDIT:
            lines.append(f"also evicted {cid}: compiled because {detail}; it would not be "
                         "there without the edits")
        elif cause.cause is Cause.OWN:
            lines.append(f"kept {cid}: compiled because every entry failed a guard of its "
                         f"own ({detail}); plain python compiles it too")
        else:
            lines.append(f"also evicted {cid}: compiled while calls fell through, and no "
                         "guard failure was recorded for its compile: evicted as if the "
                         "edits caused it (it may be there without them)")
    return lines


def cut_text(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
