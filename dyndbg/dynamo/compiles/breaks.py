"""Why dynamo broke a graph, as torch words it.

Each graph break dynamo makes creates a `GraphCompileReason` (torch/_dynamo/
output_graph.py) that appends itself to `torch._dynamo.utils.graph_break_reasons`
(the same on torch 2.13-2.15; `torch._dynamo.reset()` empties it). Its `reason`
is torch's text: the first line names the graph-break type ("Failed to trace
builtin operator"; a data-dependent branch is "generic_jump TensorVariable()" on
2.13), then `Explanation:` and `Hint:` lines and, where torch has one, the link
to the graph-break site's page (`.../gb/gb0124.html`). Its `user_stack` is
where in the user's code the break is, innermost last. This is what
`torch._dynamo.explain` reports as `break_reasons`.

The reasons appended during one compile are that compile's breaks: the engine
marks the list's length when a compile starts and takes what was added when
the compile's bytecode hook runs. Only reading: nothing here changes what
dynamo compiles.
"""
from __future__ import annotations

import re
import sys
import traceback
from typing import NamedTuple

_LINK = re.compile(r"https?://\S+/(gb\d+)\.html")


class BreakReason(NamedTuple):
    """One graph break, as torch recorded it."""

    text: str                                         # torch's whole reason
    user_stack: tuple[traceback.FrameSummary, ...]    # innermost last

    @classmethod
    def of(cls, reason: object) -> BreakReason:
        """Torch's GraphCompileReason, as read here."""
        return cls(str(getattr(reason, "reason", "")),
                   tuple(getattr(reason, "user_stack", ()) or ()))

    @property
    def summary(self) -> str:
        """The first line: the graph-break type (or the whole reason on old torch)."""
        return self.text.strip().splitlines()[0].strip() if self.text.strip() else "(no reason)"

    @property
    def details(self) -> list[str]:
        """Torch's Explanation: and Hint: lines."""
        return [line.strip() for line in self.text.splitlines()
                if line.strip().startswith(("Explanation:", "Hint:"))]

    @property
    def link(self) -> str | None:
        found = _LINK.search(self.text)
        return found.group(0) if found else None

    @property
    def gb_id(self) -> str | None:
        """`GB0124`: the graph-break type's id in torch's registry, where torch gives it."""
        found = _LINK.search(self.text)
        return found.group(1).upper() if found else None

    @property
    def gb_ids(self) -> tuple[str, ...]:
        """Each GB id the text links to, in order: in a chain of breaks (torch's
        "while handling this graph break, another ..."), one per break that has one."""
        return tuple(found.group(1).upper() for found in _LINK.finditer(self.text))

    @property
    def where(self) -> str:
        """`file.py:12`: the user's line where the graph broke."""
        if not self.user_stack:
            return "(no user line)"
        frame = self.user_stack[-1]
        return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}"

    @property
    def source(self) -> str:
        return (self.user_stack[-1].line or "").strip() if self.user_stack else ""

    def one_line(self) -> str:
        """`graph break at f.py:5: Failed to trace builtin operator (GB0000)`."""
        gb = f" ({self.gb_id})" if self.gb_id else ""
        return f"graph break at {self.where}: {self.summary}{gb}"


def _torch_list() -> list | None:
    utils = sys.modules.get("torch._dynamo.utils")
    reasons = getattr(utils, "graph_break_reasons", None)
    return reasons if isinstance(reasons, list) else None


def mark() -> int:
    """Where the list ends now (at a compile's start)."""
    reasons = _torch_list()
    return len(reasons) if reasons is not None else 0


def since(start: int) -> tuple[BreakReason, ...]:
    """The breaks torch recorded after `start` (a reset in between: all of them)."""
    reasons = _torch_list()
    if not reasons:
        return ()
    if start > len(reasons):
        start = 0
    return tuple(BreakReason.of(r) for r in reasons[start:] if getattr(r, "graph_break", True))
