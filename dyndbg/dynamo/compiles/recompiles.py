"""Why dynamo compiled an entry [i/j] with j > 0, as torch tells it.

When a call misses the cache of a function that has entries, dynamo checks
each entry's guards again inside the new compile and appends each entry's
first failing guard to `torch._dynamo.utils.guard_failures[original]` (the
same on torch 2.13-2.15; `torch._dynamo.reset()` empties it): a text
`"0/0: G['calls'] == 0"`, the guard's code with its frame's `L[...]` written
as plain names, and, where the guard has one, the comment torch writes after
a guard's code (`  # the user's line  # file.py:12 in f`). The reasons appended
during one compile are that entry's: read when the compile's bytecode hook runs.
This is what TORCH_LOGS=recompiles prints and `guard_fail_fn` receives. Only
reading: nothing here changes what dynamo compiles.
"""
from __future__ import annotations

import re
import sys
import types
from typing import NamedTuple

from dyndbg.dynamo.guards import installed_at, split_part

_OLDER = re.compile(r"^(\d+/\d+(?:_\d+)?): (.*)$", re.S)


class RecompileReason(NamedTuple):
    """An older entry's failing guard, for the call that compiled a new one."""

    older: str          # the older entry's compile id, "0/0"
    guard: str          # its first failing guard, as torch wrote it
    where: str          # the line that installed that guard ("file.py:12"), "torch" for
    #                     one torch installs itself, "" where torch's text gives no line
    #                     (its tensor checks: "tensor 'x' dtype mismatch ...")

    def one_line(self) -> str:
        origin = "torch's own" if self.where == "torch" else self.where
        return f"[{self.older}] failed {self.guard}" + (f"  ({origin})" if origin else "")


def failures(original: types.CodeType) -> list | None:
    """Torch's own list of failing-guard texts for `original` (None: none kept)."""
    utils = sys.modules.get("torch._dynamo.utils")
    table = getattr(utils, "guard_failures", None)
    if table is None:
        return None
    try:
        found = table.get(original)
    except TypeError:      # an unhashable code object: torch keys by the user's code
        return None
    return found if isinstance(found, list) else None


def count(original: types.CodeType) -> int:
    """How many failures torch holds for this function now."""
    found = failures(original)
    return len(found) if found is not None else 0


def since(original: types.CodeType, start: int) -> tuple[RecompileReason, ...]:
    """The failing guards torch recorded for `original` after `start`."""
    found = failures(original)
    if not found:
        return ()
    if start > len(found):
        start = 0       # torch reset its table in between
    return tuple(parse(str(text)) for text in found[start:])


def parse(text: str) -> RecompileReason:
    first = text.strip().split("\nUser stack trace:")[0].strip()
    found = _OLDER.match(first)
    older, rest = (found.group(1).split("_")[0], found.group(2)) if found else ("?", first)
    code, comment, _ = split_part(rest)
    # No comment, no line: a tensor check's text, whose guard came from a line of
    # the program's all the same. Saying "torch's own" there would be false.
    return RecompileReason(older, code, installed_at(comment) if comment else "")
