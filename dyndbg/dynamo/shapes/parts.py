"""Torch's own text for its shape guards, read as it writes it (pure: no torch).

Dynamo checks all the guards of a compile's ShapeEnv as one lambda guard on
the root of the tree (`LAMBDA_GUARD`, an epilogue guard), whose verbose code
parts are one condition each, as `ShapeEnv.produce_guards_verbose` writes
them for the "verbose_python" language (torch/fx/experimental/symbolic_shapes.py,
the same on torch 2.13-2.15; versions.py):

- a guard torch added while tracing (ShapeEnv.guards, those not suppressed):
  `<code in sources>  # <its SLoc>`, where `str(SLoc)` is
  `<user line>  # <file>:<line> in <function> (<framework location>)`, or
  `(<framework location>)` alone where torch found no user frame;
- a value range (0/1 specialization, mark_dynamic's bounds):
  `2 <= L['x'].size()[0]  # <the range's SLoc>`, whose framework location is
  torch's own prose ("user code shown is first use of this value--the guard
  itself is not due user code but due to 0/1 specialization ...");
- an input equal to an expression (a specialized int): `L['n'] == 2  # <the
  replacement's SLoc>`; torch's duck sizing: `... == ...  # duck sizing added
  this equality because ...`.

The framework location is torch's file (`_dynamo/variables/tensor.py:2606 in
evaluate_expr`), never the user's line: a part's origin is its user frame,
or "torch" where torch names none or says the guard is its own.
"""
from __future__ import annotations

import re
from typing import NamedTuple

# `<file>:<line> in <function>` at the end of torch's user location.
_WHERE = re.compile(r"^(?P<file>.+?):(?P<line>\d+) in (?P<function>\S+)$")
# Torch's prose where it says a range guard is not the user's.
_NOT_USERS = "not due user code"


class UserFrame(NamedTuple):
    """The user frame torch wrote in an SLoc: `if x.shape[0] == 8:  # f.py:5 in f`."""

    text: str          # the user's source line, as torch read it ("" where none)
    file: str          # as torch shortened it (relative to torch's parent folder)
    line: int
    function: str

    @property
    def place(self) -> str:
        """`f.py:5`, as `guards` shows an origin."""
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"


class SLocText(NamedTuple):
    """An SLoc as torch writes it: its user frame, and its framework part."""

    user: UserFrame | None     # None: torch found no user frame
    framework: str             # `_dynamo/variables/tensor.py:2606 in evaluate_expr`, or prose

    @property
    def torchs_own(self) -> bool:
        """Torch found no user frame, or says the guard is not the user's."""
        return self.user is None or _NOT_USERS in self.framework


def split_sloc(text: str) -> SLocText:
    """`str(SLoc)` read back: `<user loc> (<framework>)` or `(<framework>)`."""
    text = text.strip()
    framework = ""
    start = _trailing_group(text)
    if start is not None:
        framework = text[start + 1:-1].strip()
        text = text[:start].rstrip()
    return SLocText(user_frame(text), framework)


def user_frame(text: str) -> UserFrame | None:
    """`<line text>  # <file>:<line> in <function>` (format_frame with the
    line), or the location alone; None where it is neither."""
    line_text, _, where = text.rpartition("  # ")
    found = _WHERE.match(where.strip())
    if found is None:
        return None
    return UserFrame(line_text.strip(), found.group("file").strip(), int(found.group("line")),
                     found.group("function"))


def _trailing_group(text: str) -> int | None:
    """The index of the `(` that opens a balanced group ending `text`, where
    the group stands alone (at the start, or after a space)."""
    if not text.endswith(")"):
        return None
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        char = text[index]
        if char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                return index if index == 0 or text[index - 1] == " " else None
    return None


class ShapePart(NamedTuple):
    """One condition of the shape guards' lambda, as torch wrote it."""

    code: str            # in sources: `L['x'].size()[0] != 8`
    comment: str         # torch's comment after it (`str(SLoc)`, or its prose)
    sloc: SLocText

    @property
    def origin(self) -> str:
        """`f.py:12`, the user line torch recorded when it added the guard, or
        "torch" where it keeps none or calls the guard its own."""
        if self.sloc.torchs_own or self.sloc.user is None:
            return "torch"
        return self.sloc.user.place

    @property
    def note(self) -> str:
        """Why it is torch's own, in torch's words ("" for a user's guard)."""
        if self.origin != "torch":
            return ""
        if self.sloc.user is None:
            return self.sloc.framework if _is_prose(self.sloc.framework) else self.comment
        return self.sloc.framework


def _is_prose(text: str) -> bool:
    return bool(text) and _WHERE.match(text) is None


def shape_part(part: str) -> ShapePart | None:
    """A verbose code part of the shape guards' lambda, or None where `part`
    has no comment (no shape guard torch writes lacks one)."""
    code, sep, comment = part.partition("  # ")
    if not sep:
        return None
    comment = comment.strip()
    return ShapePart(code.strip(), comment, split_sloc(_first_sloc(comment)))


def _first_sloc(comment: str) -> str:
    """A range with both bounds carries two SLocs, `<lower> and <upper>`: the lower's."""
    head, sep, _ = comment.partition(") and ")
    if sep and _trailing_group(head + ")") is not None:
        return head + ")"
    return comment


def is_shape_lambda(kind: str, parts: list[str]) -> bool:
    """Whether a leaf guard is the one torch checks its ShapeEnv's guards with:
    a lambda guard whose every part reads a size or a symbolic input and ends
    as produce_guards ends one: with an SLoc's framework part in parentheses
    (a Guard's own comment, such as 2.13's object aliasing lambda, has none),
    or torch's prose for a float's NaN guard."""
    if kind != "LAMBDA_GUARD" or not parts:
        return False
    for part in parts:
        found = shape_part(part)
        if found is None or not _LOOKS_SHAPED.search(found.code):
            return False
        if _trailing_group(found.comment) is None and _NAN not in found.comment:
            return False
    return True


# produce_guards' comment on a float input's `not math.isnan(...)` guard.
_NAN = "NaN specialization"


# What a shape condition reads: a size, a stride, an offset, or an input's
# own value (an int made symbolic): L['x'].size()[0], L['n'].
_LOOKS_SHAPED = re.compile(r"\.(?:size|stride)\(\)\[\d+\]|\.storage_offset\(\)|"
                           r"[LG]\[[^\]]+\]")
