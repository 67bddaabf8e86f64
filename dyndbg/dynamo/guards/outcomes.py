"""One cache entry's guards checked on a call's locals, as torch checks them
(guards/entries.py explains the choice of entry with these).

`check_verbose` is torch's own whole-tree check (never `check`, which bumps
fail counts); where it stops at the lambda torch checks the shape guards
with, it names all of that lambda's conditions, so `failing_shape_guards`
evaluates each alone and names those that fail, with the line torch recorded
for the first (dynamo/shapes/parts.py reads the lambda's text).
"""
from __future__ import annotations

from typing import NamedTuple

from dyndbg.dynamo import versions
from dyndbg.dynamo.guards.tree import GuardScope, code_only, frame_origin
from dyndbg.dynamo.shapes.parts import is_shape_lambda, shape_part


def root_of(entry: object) -> object | None:
    """The C++ RootGuardManager, if this torch has one."""
    manager = getattr(entry, "guard_manager", None)
    root = getattr(manager, "root", manager)
    return root if hasattr(root, "get_leaf_guards") else None


class Outcome(NamedTuple):
    """An entry's guards checked on a call's locals (check_verbose)."""

    passed: bool
    reason: str          # the first failing guard's code, as torch gives it
    origin: str = ""     # "file.py:12": the line that installed it, from the failing
    #                      guard's user stack ("" where torch gives none)


def check_verbose(entry: object, f_locals: dict) -> Outcome | None:
    """The outcome, using check_verbose, which leaves fail counts alone."""
    manager = getattr(entry, "guard_manager", None)
    check = getattr(manager, "check_verbose", None)
    if check is None:
        return None
    result = versions.guard_check(check, f_locals)
    parts = [code_only(str(p)) for p in getattr(result, "verbose_code_parts", []) or []]
    stack = getattr(result, "user_stack", None)
    origin = ""
    if stack and not bool(result.result):
        origin = frame_origin(stack[-1].filename, stack[-1].lineno or 0)
    return Outcome(bool(result.result), "; ".join(parts) or "guards failed", origin)


def failing_shape_guards(entry: object, outcome: Outcome | None,
                          f_locals: dict) -> Outcome | None:
    """Where the shape guards' lambda failed (check_verbose gives all its
    conditions): the conditions that fail on `f_locals`, each evaluated alone,
    with the line torch recorded for the first; None where that is not it."""
    root = root_of(entry)
    epilogue = getattr(root, "get_epilogue_lambda_guards", None)
    if outcome is None or outcome.passed or epilogue is None:
        return None
    for leaf in epilogue():
        parts = [versions.split_hint(str(p))[0] for p in leaf.verbose_code_parts()]
        if not is_shape_lambda(type(leaf).__name__, parts):
            continue
        shapes = [part for part in map(shape_part, parts) if part is not None]
        if not shapes or any(part.code not in outcome.reason for part in shapes):
            continue
        scope = GuardScope(getattr(entry, "guard_manager", None), f_locals)
        failing = [part for part in shapes if scope.shape_truth(part.code) is False]
        if failing:
            origin = failing[0].origin
            return Outcome(False, "; ".join(part.code for part in failing),
                           "" if origin == "torch" else origin)
    return None
