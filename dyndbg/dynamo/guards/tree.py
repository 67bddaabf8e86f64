"""Walking a guard tree: one numbered line per manager and leaf guard, each
evaluated on its source's value where it can be (see guards/entries.py for what torch's
trees are and how they are read, versions.py for how releases differ)."""
from __future__ import annotations

import builtins
import linecache
import os
import re
import sys
from dataclasses import dataclass
from typing import Callable

from dyndbg.dynamo import versions
from dyndbg.dynamo.shapes.parts import ShapePart, is_shape_lambda, shape_part, split_sloc


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
    code: str = ""                   # a leaf's code (a relation's, on each of its lines)
    hint: str = ""                   # torch's "(HINT: ...)" to a leaf, kept out of text
    shape: ShapePart | None = None   # one of the shape guards, as torch wrote it
    group: bool = False              # the lambda torch checks the shape guards under it with

    @property
    def origin(self) -> str | None:
        """Where the guard came from: `file.py:12`, the user's line that made
        dynamo install it (the last frame of torch's Guard.user_stack, as torch
        writes it after the code; for a shape guard, its SLoc's user frame), or
        "torch" for a guard torch installs itself (grad mode, global state, its
        own files, a size's range). None on a manager's line and on the shape
        guards' lambda, whose lines under it each have their own."""
        if self.guard is None or self.group:
            return None
        if self.shape is not None:
            return self.shape.origin
        return installed_at(self.comment)

    @property
    def relational(self) -> bool:
        """A relation between sources (aliasing), listed under each source's manager."""
        return self.guard is not None and not callable(self.guard)


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
    accessors = manager.get_accessors()  # type: ignore[attr-defined]  # torch's C++ guard manager
    children = manager.get_child_managers()  # type: ignore[attr-defined]  # torch's C++ guard manager
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


def split_part(part: str) -> tuple[str, str, str]:
    """A verbose code part as (code, comment, hint). Torch appends `  # user line  #
    file:line` and, on some guards, ` (HINT: why dynamo guarded)`: the hint is kept
    apart so that the code reads as code on every torch release."""
    part, hint = versions.split_hint(part)
    code, _, comment = part.partition("  # ")
    return code.strip(), comment.strip(), hint


# The end of torch's comment: `<user line>  # <file>:<line> in <function>`
# (torch.utils._traceback.format_frame, the same on torch 2.13-2.15).
_LOCATION = re.compile(r"(?:^|  # )([^#]*?):(\d+) in (\S+)$")


def installed_at(comment: str) -> str:
    """`file.py:12` from a guard's comment, or "torch" where torch installed it
    itself (no user frame, or a frame in torch's own files). A shape guard's
    comment (an SLoc) ends with torch's framework location in parentheses,
    never the user's: its user frame is read alone."""
    sloc = split_sloc(comment)
    if sloc.framework:
        if sloc.torchs_own or sloc.user is None:
            return "torch"
        comment = f"{sloc.user.text}  # {sloc.user.file}:{sloc.user.line} in {sloc.user.function}"
    found = _LOCATION.search(comment)
    if found is None:
        return "torch"
    file, line = found.group(1).strip(), int(found.group(2))
    if _is_torch_file(file, line, comment[:found.start()].strip()):
        return "torch"
    return f"{os.path.basename(file)}:{line}"


def frame_origin(filename: str, lineno: int) -> str:
    """As installed_at, for a frame whose path is whole (a user stack's last
    frame): "torch" inside torch's package, else `file.py:12`."""
    folder = _torch_folder()
    if folder and filename.startswith(folder + os.sep):
        return "torch"
    return f"{os.path.basename(filename)}:{lineno}"


def _torch_folder() -> str:
    return os.path.dirname(getattr(sys.modules.get("torch"), "__file__", "") or "")


def _is_torch_file(shortened: str, line: int, text: str) -> bool:
    """Torch writes a file's path from the folder it shares with torch's
    package: its own files as `_dynamo/x.py`, a program's as the rest of
    their path (`/proj/functional.py` with torch in /proj/.venv is
    `functional.py`, as torch's own torch/functional.py is). Where the comment
    carries the source line (`text`), torch's file must hold it at `line`."""
    folder = _torch_folder()
    path = os.path.join(folder, shortened)
    if not folder or not os.path.isfile(path):
        return False
    return not text or linecache.getline(path, line).strip() == text


def code_only(part: str) -> str:
    """A guard's code without the comment and hint torch appends."""
    return split_part(part)[0]


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

    def truth(self, code: str) -> bool | None:
        """A relational guard's code (`L['a'] is L['b']`) evaluated here; None if it
        does not evaluate (a C++ check with no Python name, a missing source)."""
        got, value = self.value(code, versions.relation_names())
        return bool(value) if got else None

    def shape_truth(self, code: str) -> bool | None:
        """A shape guard's code (`(L['x'].size()[0] % 2) == 0`) evaluated here,
        with the names torch's lambda for it has (SYMPY_INTERP); None if it
        does not evaluate."""
        got, value = self.value(code, versions.shape_guard_names())
        return bool(value) if got else None

    def knows(self, code: str) -> bool:
        """Whether `truth` can run this code: it compiles and names only the scope's
        names (`L`, `G`, builtins, torch's guard helpers, versions.relation_names)."""
        try:
            compiled = compile(code, "<guard>", "eval")
        except (SyntaxError, ValueError):
            return False
        known = {*self.names, *vars(builtins), *versions.relation_names(), "G"}
        return set(compiled.co_names) <= known

    def value(self, source: str, extra: dict | None = None) -> tuple[bool, object]:
        """(evaluated, value) of a guard source such as `L['x'].size()[0]`."""
        if source not in self._cache:
            try:
                # Torch built this expression from the program's own accesses; the
                # guard itself performs the same ones.
                names = {**self.names, **extra} if extra else self.names
                self._cache[source] = (True, eval(source, names))  # noqa: S307
            except Exception:  # noqa: BLE001 - e.g. a source that depends on a failed guard
                self._cache[source] = (False, None)
        return self._cache[source]


# A guard source in torch's guard code: `L['x']`, `G['Config'].flag`, `G['T']['k']`,
# `L['x'].size()[0]` (a shape guard's).
_SOURCE = re.compile(r"\b[LG]\[[^\]]+\](?:\.(?:size|stride|storage_offset)\(\)|\.\w+|"
                     r"\[[^\]]+\])*")


def source_values(guard_manager: object, f_locals: dict, code: str) -> list[tuple[str, object]]:
    """(source, value) for each source `code` reads, evaluated as the guards
    read it on `f_locals`; a source that does not evaluate is left out."""
    return values_in(GuardScope(guard_manager, f_locals), code)


def values_in(scope: GuardScope, code: str) -> list[tuple[str, object]]:
    """(source, value) for each source `code` reads that evaluates in `scope`."""
    out = []
    for source in dict.fromkeys(_SOURCE.findall(code)):
        got, value = scope.value(source)
        if got:
            out.append((source, value))
    return out


def guard_lines(guard_manager: object) -> list[GuardLine]:
    """The numbered lines of a guard tree as `guards` lists them, not evaluated."""
    builder = TreeBuilder(GuardScope(guard_manager, {}), None)
    walk(builder, guard_manager.root, (False, None))  # type: ignore[attr-defined]  # torch's GuardManagerWrapper
    return builder.lines


def walk(builder: TreeBuilder, root: object, frame_locals: tuple[bool, object]) -> None:
    """The root's tree, then the epilogue guards (which see all the locals)."""
    builder.manager(root, "", 0)
    epilogue = getattr(root, "get_epilogue_lambda_guards", None)
    for leaf in epilogue() if epilogue else []:
        builder.leaf(leaf, "L", frame_locals, 1)


# A leaf guard's result decided otherwise than by calling it: (kind, code) ->
# (passed, reason), or None to call it (guards/entries.py compares GLOBAL_STATE records).
Judge = Callable[[str, str], "tuple[bool, str | None] | None"]


class TreeBuilder:
    def __init__(self, scope: GuardScope, reason: str | None, judge: Judge | None = None) -> None:
        self.scope = scope
        self.reason = reason
        self.judge = judge
        self.reason_placed = False
        self.lines: list[GuardLine] = []
        # Relational guards met so far with their result; holds the guard objects
        # themselves (see guards._count_leaves on pybind identity).
        self._relational_seen: list[tuple[object, str, bool | None]] = []

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
                   for leaf in manager.get_leaf_guards()]  # type: ignore[attr-defined]  # torch's C++ guard manager
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
        parts = [str(p) for p in leaf.verbose_code_parts()]  # type: ignore[attr-defined]  # torch's C++ leaf guard
        if is_shape_lambda(kind, [versions.split_hint(p)[0] for p in parts]):
            return self._shape_guards(leaf, kind, parts, source, got, depth)
        split = [split_part(p) for p in parts]
        code = " and ".join(c for c, _, _ in split)
        comment = split[0][1] if split else ""
        hint = next((h for _, _, h in split if h), "")
        shown = code
        passed: bool | None = None
        judged = self.judge(kind, code) if self.judge is not None else None
        if judged is not None:
            passed = judged[0]
        elif not callable(leaf):     # RelationalGuard: spans several sources
            seen = next((s for s in self._relational_seen if s[0] is leaf), None)
            if seen is not None:
                _, code, passed = seen
                shown = "(see above)"
            else:
                # The C++ guard needs all its sources at once: evaluate its code instead.
                passed = self.scope.truth(code)
                self._relational_seen.append((leaf, code, passed))
        elif got[0]:
            try:
                passed = bool(leaf(got[1]))
            except Exception:  # noqa: BLE001
                passed = None
        line = GuardLine(f"{kind}: {shown}", passed, depth, comment, source=source, guard=leaf,
                         code=code, hint=hint)
        if judged is not None and judged[1] is not None:
            line.reason = judged[1]
            self.reason_placed = self.reason_placed or judged[1] == self.reason
        elif self.reason is not None and not self.reason_placed and passed is not True \
                and self._is_reported(kind, parts, source, passed):
            line.passed, line.reason, self.reason_placed = False, self.reason, True
        self._add(line)
        return line.passed

    def _shape_guards(self, leaf: object, kind: str, parts: list[str], source: str,
                      got: tuple[bool, object], depth: int) -> bool | None:
        """The lambda torch checks a ShapeEnv's guards with: a line for it, then
        one for each guard, evaluated alone on this call's values."""
        shapes = [shape_part(versions.split_hint(p)[0]) for p in parts]
        whole: bool | None = None
        if got[0]:
            try:
                whole = bool(leaf(got[1]))  # type: ignore[operator]  # torch's lambda guard
            except Exception:  # noqa: BLE001
                whole = None
        header = GuardLine(f"{kind}: the shape guards, {len(parts)} "
                           f"condition{'s' if len(parts) != 1 else ''}, checked as one",
                           whole, depth, source=source, guard=leaf, group=True,
                           code=" and ".join(part.code for part in shapes if part))
        reported = self.reason is not None and not self.reason_placed and \
            whole is not True and any(part is not None and part.code in self.reason
                                      for part in shapes)
        self._add(header)
        for part in shapes:
            assert part is not None       # is_shape_lambda read each
            passed = self.scope.shape_truth(part.code)
            if passed is None and whole is True:
                passed = True             # the whole lambda passed, so each condition did
            line = GuardLine(part.code, passed, depth + 1, part.comment, source=source,
                             guard=leaf, code=part.code, shape=part)
            if passed is False:
                # torch's reason names every condition: each failing one says what
                # this call gave the sources it reads
                line.reason = "; ".join(f"{name} is {value!r}" for name, value
                                        in values_in(self.scope, part.code)) or "failed"
            self._add(line)
        if reported:
            header.passed, self.reason_placed = False, True
            if not any(line.passed is False for line in self.lines if line.guard is leaf):
                header.reason = self.reason
        return header.passed

    def _add(self, line: GuardLine) -> None:
        line.number = len(self.lines)
        self.lines.append(line)

    def _is_reported(self, kind: str, parts: list[str], source: str,
                     passed: bool | None) -> bool:
        """Whether torch's failure reason is about this guard."""
        reason = self.reason or ""
        if any(code_only(p) in reason for p in parts):
            return True
        if passed is False and kind == "NO_TENSOR_ALIASING":
            return "Duplicate tensor" in reason     # torch's own words for this guard
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
