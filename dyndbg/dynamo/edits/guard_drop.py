"""A copy of an entry's guards with one guard left out (`guard drop`).

Torch cannot remove a guard from a live tree, and a tree's root must never be
rebound; `clone_manager(filter)` copies a tree leaving out whole managers. So
leaving out one leaf guard leaves out its manager's subtree, and the subtree's
other guards are added back on the copy's root as lambda guards evaluated on
their source, as dynamo itself would fetch it.

Relational guards (NO_TENSOR_ALIASING; OBJECT_ALIASING from torch 2.14) sit under
the manager of each source they relate. Measured on 2.13, 2.14.1 and 2.15.0: in a
copy without some of those managers the relation is checked among the remaining
sources only, and neither the copy nor the live tree keeps state between checks.
So dropping a relation drops every manager that holds it; a relation that only
shared a dropped subtree is added back whole, as a lambda evaluating its code.
"""
from __future__ import annotations

from dyndbg.dynamo.guards import live_entries, tree as guard_walk
from dyndbg.dynamo.errors import CacheError
from dyndbg.dynamo.guards import GuardLine


def without_guards(guard_manager: object, numbers: list[int], notes: list[str]) -> object:
    """A copy of the guards without lines `numbers` of `guards`' listing. Dropping a
    leaf drops its manager's subtree from the copy, and the subtree's other
    guards are added back on the root, evaluated on their source."""
    lines = guard_walk.guard_lines(guard_manager)
    relations: list[object] = []          # the relations asked to be dropped
    firsts: list[int] = []                # the manager line of each subtree to drop
    for number in numbers:
        if not 0 <= number < len(lines):
            raise CacheError(f"no guard {number} (guards lists 0..{len(lines) - 1})")
        line = lines[number]
        if line.shape is not None or line.group:
            raise CacheError(f"guard {number} is one of the shape guards, which torch checks as "
                             "one lambda on the root of the tree: torch cannot copy the tree "
                             "without it; `force ENTRY` runs the entry without any guards")
        if line.depth <= 1 and line.guard is not None:
            raise CacheError(f"guard {number} is checked on the root of the tree (global "
                             "state, a relation between inputs on torch 2.13, or an edit's own "
                             "guard): torch cannot copy the tree without it; `force ENTRY` "
                             "runs the entry without any guards")
        holders = [number]
        if line.relational:
            relations.append(line.guard)
            holders = [ln.number for ln in lines
                       if ln.guard is line.guard and ln.number is not None]
        for k in holders:
            first = k if lines[k].guard is None else _manager_line(lines, k)
            if first not in firsts:
                firsts.append(first)
    scope = guard_walk.GuardScope(guard_manager, {})
    kept = _kept(lines, firsts, numbers, relations, scope, notes)
    dropped_sources = {lines[first].source for first in firsts}

    def keep(manager: object) -> bool:
        return guard_walk.call_or(manager, "get_source", "") not in dropped_sources
    copy = live_entries.copy_guards(guard_manager, keep)
    for line in kept:
        live_entries.add_switch_guard(copy, _re_added(guard_manager, line), line.text)
    return copy


def _kept(lines: list[GuardLine], firsts: list[int], numbers: list[int], relations: list[object],
          scope: guard_walk.GuardScope, notes: list[str]) -> list[GuardLine]:
    """The guards of the dropped subtrees that were not asked to be dropped."""
    kept: list[GuardLine] = []
    for first in firsts:
        for line in lines[first + 1:_subtree_end(lines, first)]:
            if line.guard is None or line.number in numbers:
                continue
            if line.relational:
                if any(line.guard is g for g in relations) or \
                        any(line.guard is k.guard for k in kept):
                    continue
                if not scope.knows(line.code):
                    # Torch's own check is left under the remaining sources' managers.
                    notes.append(f"guard {line.number} ({line.code}) is checked only among "
                                 "the sources left in the copy")
                    continue
            kept.append(line)
    return kept


def _re_added(guard_manager: object, line: GuardLine):
    """The check of a lambda guard standing for `line` on the copy's root."""
    leaf, source, code = line.guard, line.source, line.code
    relational = line.relational

    def check(frame_locals: dict) -> bool:
        try:
            scope = guard_walk.GuardScope(guard_manager, frame_locals)
            if relational:
                return scope.truth(code) is True
            got, value = scope.value(source)
            return bool(got and leaf(value))  # type: ignore[operator]  # a callable leaf guard
        except BaseException:  # noqa: BLE001 - called from torch's C++
            return False
    return check


def _manager_line(lines: list[GuardLine], number: int) -> int:
    depth = lines[number].depth
    for k in range(number - 1, -1, -1):
        if lines[k].guard is None and lines[k].depth < depth:
            return k
    return 0


def _subtree_end(lines: list[GuardLine], first: int) -> int:
    depth = lines[first].depth
    for k in range(first + 1, len(lines)):
        if lines[k].depth <= depth:
            return k
    return len(lines)
