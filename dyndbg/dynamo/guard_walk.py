"""Walking a guard tree: one numbered line per manager and leaf guard, each
evaluated on its source's value where it can be (see guards.py for what torch
2.13's trees are and how they are read)."""
from __future__ import annotations

import builtins
from dataclasses import dataclass


@dataclass
class GuardLine:
    """One line of a guard tree: a manager (a source) or a leaf guard under it."""

    text: str
    passed: bool | None              # None: not evaluable individually
    depth: int
    comment: str = ""                # the user source line dynamo recorded, if any
    reason: str | None = None        # torch's failure message, on the failing guard
    number: int | None = None        # as `guards` lists it (`guard drop ENTRY N`)
    source: str = ""                 # the manager's source (a leaf's: its manager's)
    guard: object | None = None      # the leaf guard itself; None on a manager line


def _children(manager: object) -> list[tuple[str, object]]:
    """(accessor description, child manager) pairs, dict key/value managers included."""
    out: list[tuple[str, object]] = []
    key_values = getattr(manager, "get_key_value_managers", None)
    if key_values is not None:
        for index, (key_mgr, value_mgr) in sorted(key_values().items()):
            if key_mgr is not None:
                out.append((f"key at index {index}", key_mgr))
            if value_mgr is not None:
                out.append((f"value at index {index}", value_mgr))
    accessors = manager.get_accessors()  # type: ignore[attr-defined]
    children = manager.get_child_managers()  # type: ignore[attr-defined]
    for accessor, child in zip(accessors, children):
        out.append((call_or(accessor, "repr", ""), child))
    return out


def managers(root: object) -> list[object]:
    out, stack = [], [root]
    while stack:
        manager = stack.pop()
        out.append(manager)
        stack.extend(child for _, child in _children(manager))
    return out


def call_or(obj: object, method: str, default: str) -> str:
    """obj.method() as text, or `default` where torch's binding raises."""
    try:
        return str(getattr(obj, method)())
    except Exception:  # noqa: BLE001
        return default


def code_only(part: str) -> str:
    """A guard's code without the `  # user line  # file:line` comment torch appends."""
    return part.split("  # ", 1)[0].strip()


class GuardScope:
    """Evaluates guard sources in the scope dynamo builds its guards in."""

    def __init__(self, manager: object, f_locals: dict) -> None:
        # One globals dict, so that names resolve inside comprehensions too.
        self.names: dict = dict(getattr(manager, "closure_vars", None) or {})
        self.names["__builtins__"] = builtins
        self.names["L"] = f_locals
        global_scope = getattr(manager, "global_scope", None) or {}
        if "G" in global_scope:
            self.names["G"] = global_scope["G"]
        self._cache: dict[str, tuple[bool, object]] = {}

    def value(self, source: str) -> tuple[bool, object]:
        """(evaluated, value) of a guard source such as `L['x'].size()[0]`."""
        if source not in self._cache:
            try:
                # Torch built this expression from the program's own accesses; the
                # guard itself performs the same ones.
                self._cache[source] = (True, eval(source, self.names))  # noqa: S307
            except Exception:  # noqa: BLE001 - e.g. a source that depends on a failed guard
                self._cache[source] = (False, None)
        return self._cache[source]


def guard_lines(guard_manager: object) -> list[GuardLine]:
    """The numbered lines of a guard tree as `guards` lists them, not evaluated."""
    builder = TreeBuilder(GuardScope(guard_manager, {}), None)
    walk(builder, guard_manager.root, (False, None))  # type: ignore[attr-defined]
    return builder.lines


def walk(builder: TreeBuilder, root: object, frame_locals: tuple[bool, object]) -> None:
    """The root's tree, then the epilogue guards (which see all the locals)."""
    builder.manager(root, "", 0)
    epilogue = getattr(root, "get_epilogue_lambda_guards", None)
    for leaf in epilogue() if epilogue else []:
        builder.leaf(leaf, "L", frame_locals, 1)


class TreeBuilder:
    def __init__(self, scope: GuardScope, reason: str | None) -> None:
        self.scope = scope
        self.reason = reason
        self.reason_placed = False
        self.lines: list[GuardLine] = []
        # Holds the guard objects themselves (see guards._count_leaves on pybind identity).
        self._relational_seen: list[object] = []

    def manager(self, manager: object, accessor: str, depth: int) -> bool | None:
        """Add the manager's line and its subtree; return the subtree's result."""
        source = call_or(manager, "get_source", "?")
        got = self.scope.value(source)
        index = len(self.lines)
        if depth > 0:
            kind = getattr(_call_or_none(manager, "get_type_of_guarded_value"), "__name__", "?")
            self._add(GuardLine(f"source={source}, type={kind}", None, depth,
                                comment=accessor, source=source))
        results = [self.leaf(leaf, source, got, depth + 1)
                   for leaf in manager.get_leaf_guards()]  # type: ignore[attr-defined]
        results += [self.manager(child, acc, depth + 1) for acc, child in _children(manager)]
        combined = _combine(results)
        if depth > 0:
            line = self.lines[index]
            line.passed = combined
            # A value torch could not even fetch ("KeyError on L['fn']") fails here.
            if not got[0] and self.reason and not self.reason_placed \
                    and self.reason.endswith(f" {source}"):
                line.passed, line.reason, self.reason_placed = False, self.reason, True
            return line.passed
        return combined

    def leaf(self, leaf: object, source: str, got: tuple[bool, object], depth: int) -> bool | None:
        """Add one leaf guard's line, evaluated on the value of `source` if callable."""
        kind = type(leaf).__name__
        parts = [str(p) for p in leaf.verbose_code_parts()]  # type: ignore[attr-defined]
        code = " and ".join(code_only(p) for p in parts)
        comment = parts[0].split("  # ", 1)[1].strip() if parts and "  # " in parts[0] else ""
        relational = not callable(leaf)    # RelationalGuard: spans several sources
        if relational:
            if any(leaf is seen for seen in self._relational_seen):
                code = "(see above)"
            self._relational_seen.append(leaf)
        passed: bool | None = None
        if not relational and got[0]:
            try:
                passed = bool(leaf(got[1]))  # type: ignore[operator]
            except Exception:  # noqa: BLE001
                passed = None
        line = GuardLine(f"{kind}: {code}", passed, depth, comment, source=source, guard=leaf)
        if self.reason is not None and not self.reason_placed and passed is not True \
                and self._is_reported(parts, source, passed):
            line.passed, line.reason, self.reason_placed = False, self.reason, True
        self._add(line)
        return line.passed

    def _add(self, line: GuardLine) -> None:
        line.number = len(self.lines)
        self.lines.append(line)

    def _is_reported(self, parts: list[str], source: str, passed: bool | None) -> bool:
        """Whether torch's failure reason is about this guard."""
        reason = self.reason or ""
        if any(code_only(p) in reason for p in parts):
            return True
        # Tensor failures read "tensor 'L['x']' size mismatch ...": match by source.
        return passed is False and f"'{source}'" in reason


def _call_or_none(obj: object, method: str) -> object | None:
    try:
        return getattr(obj, method)()
    except Exception:  # noqa: BLE001
        return None


def _combine(results: list[bool | None]) -> bool | None:
    if any(r is False for r in results):
        return False
    if any(r is None for r in results):
        return None
    return True
