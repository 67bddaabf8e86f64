"""A copy of an entry's guards with one guard left out (`guard drop`).

Torch cannot remove a guard from a live tree, and a tree's root must never be
rebound; `clone_manager(filter)` copies a tree leaving out whole managers. So
leaving out one leaf guard leaves out its manager's subtree, and the subtree's
other guards are added back on the copy's root as lambda guards evaluated on
their source, as dynamo itself would fetch it.
"""
from __future__ import annotations

from dyndbg.dynamo import cache, guard_walk
from dyndbg.dynamo.cache import CacheError


def without_guards(guard_manager: object, numbers: list[int], notes: list[str]) -> object:
    """A copy of the guards without lines `numbers` of `guards`' listing. Dropping a
    leaf drops its manager's subtree from the copy, and the subtree's other
    guards are added back on the root, evaluated on their source."""
    lines = guard_walk.guard_lines(guard_manager)
    dropped_sources: set[str] = set()
    kept: list[guard_walk.GuardLine] = []
    for number in numbers:
        if not 0 <= number < len(lines):
            raise CacheError(f"no guard {number} (guards lists 0..{len(lines) - 1})")
        line = lines[number]
        if line.depth <= 1 and line.guard is not None:
            raise CacheError(f"guard {number} sits on the root of the tree (global state or "
                             "an edit's own guard): torch cannot copy the tree without it; "
                             "`force ENTRY` runs the entry without any guards")
        first = number if line.guard is None else _manager_line(lines, number)
        subtree = lines[first + 1:_subtree_end(lines, first)]
        if any(ln.guard is not None and not callable(ln.guard) for ln in [line] + subtree):
            notes.append(f"guard {number} is one side of a relation between inputs: the "
                         "relation is not checked at all in the copy")
        dropped_sources.add(lines[first].source)
        kept += [ln for ln in subtree if ln.guard is not None and callable(ln.guard)]
    def keep(manager: object) -> bool:
        return guard_walk.call_or(manager, "get_source", "") not in dropped_sources
    copy = cache.copy_guards(guard_manager, keep)
    for line in kept:
        if line.number in numbers:
            continue
        leaf, source = line.guard, line.source

        def check(frame_locals: dict, leaf: object = leaf, source: str = source) -> bool:
            try:
                got, value = guard_walk.GuardScope(guard_manager, frame_locals).value(source)
                return bool(got and leaf(value))  # type: ignore[operator]
            except BaseException:  # noqa: BLE001 - called from torch's C++
                return False
        cache.add_switch_guard(copy, check, line.text)
    return copy


def _manager_line(lines: list[guard_walk.GuardLine], number: int) -> int:
    depth = lines[number].depth
    for k in range(number - 1, -1, -1):
        if lines[k].guard is None and lines[k].depth < depth:
            return k
    return 0


def _subtree_end(lines: list[guard_walk.GuardLine], first: int) -> int:
    depth = lines[first].depth
    for k in range(first + 1, len(lines)):
        if lines[k].depth <= depth:
            return k
    return len(lines)
