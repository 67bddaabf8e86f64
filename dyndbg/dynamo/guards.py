"""Cache entries and guards of a user function.

`torch._dynamo.eval_frame._debug_get_cache_entry_list(code)` gives the cache
entries of an ORIGINAL code object, most recently used first. Each entry's
`guard_manager` (a `GuardManagerWrapper` on torch 2.13) has a C++ `root`
(`RootGuardManager`): a tree of managers, one per source (`L['x']`, `G['w']`,
`L['x'].size()[0]`...), each holding leaf guards and child managers reached by
accessors. Measured on torch 2.13:

- `root.check_verbose(f_locals)` gives the result and the first failure's reason.
  `root.check(...)` is NOT used: on failure it bumps `fail_count`, which dynamo
  uses to reorder guards; check_verbose leaves the tree untouched.
- Leaf guards are callable on the value they guard (`leaf(value) -> bool`), except
  relational guards (NO_TENSOR_ALIASING...), which span several sources.
- Accessors cannot be called from Python, but each manager's `get_source()` is
  the Python expression dynamo built the guard from; evaluating it in dynamo's
  own guard scope (`L` = locals, `G` = globals, plus `closure_vars`) gives the
  guarded value, as dynamo's own recompile-reason code does.

So each leaf guard is evaluated individually on its source's value. Where that is
impossible (relational guards, a source that does not evaluate) its line says
`passed=None`, unless the whole tree passes (then every guard did). Torch's own
check_verbose reason is attached to the guard it names. If the tree cannot be
walked at all, guard_tree falls back to str(guard_manager) plus that reason.
"""
from __future__ import annotations

import builtins
import sys
import types
from dataclasses import dataclass, field


def _torch_version() -> str:
    torch = sys.modules.get("torch")
    return getattr(torch, "__version__", "unknown")


def _unavailable(what: str) -> str:
    return f"{what} not available with torch {_torch_version()}"


@dataclass
class EntryInfo:
    """One cache entry of a user function."""

    compile_id: str | None
    code: types.CodeType             # transformed code
    guard_count: int | None
    backend: str | None
    graphs: list[str]                # __compiled_fn_* globals the code calls
    resume_functions: list[str]      # __resume_at_* globals the code calls


@dataclass
class EntryExplanation:
    """Which cache entry runs for these locals, and why the others do not."""

    running: str | None                                          # compile id
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (compile id, reason)
    passing: list[str] = field(default_factory=list)   # other entries whose guards pass too
    note: str | None = None                            # why nothing could be said


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


# -- cache entries ---------------------------------------------------------------

def _raw_entries(code: types.CodeType) -> list | str:
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    except ImportError:
        return _unavailable("cache entries")
    try:
        return list(_debug_get_cache_entry_list(code))
    except Exception as error:  # noqa: BLE001
        return f"cache entries unreadable with torch {_torch_version()}: {error}"


def cache_entries(original_code: types.CodeType) -> list[EntryInfo]:
    """The cache entries of a user code object, most recently used first; [] if none."""
    entries = _raw_entries(original_code)
    if isinstance(entries, str):
        return []
    out = []
    for entry in entries:
        try:
            out.append(_entry_info(entry))
        except Exception:  # noqa: BLE001 - skip an entry torch changed, keep the others
            continue
    return out


def _entry_info(entry: object) -> EntryInfo:
    code = entry.code  # type: ignore[attr-defined]
    names = _global_names(code)
    root = _root(entry)
    return EntryInfo(
        compile_id=_compile_id(entry),
        code=code,
        guard_count=_count_leaves(root) if root is not None else None,
        backend=_backend_name(getattr(entry, "backend", None)),
        graphs=[n for n in names if n.startswith("__compiled_fn_")],
        resume_functions=[n for n in names if n.startswith("__resume_at_")],
    )


def _compile_id(entry: object) -> str | None:
    cid = getattr(entry, "compile_id", None)
    return None if cid is None else str(cid)


def _global_names(code: types.CodeType) -> list[str]:
    """co_names of the code and its nested code objects, in order, deduplicated."""
    names: list[str] = []
    stack = [code]
    while stack:
        current = stack.pop(0)
        names.extend(n for n in current.co_names if n not in names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return names


def _backend_name(backend: object) -> str | None:
    """`eager`, `aot_eager`, `inductor`, or the name of a custom backend function."""
    if backend is None:
        return None
    for attr in ("compiler_name", "__name__"):
        name = getattr(backend, attr, None)
        if isinstance(name, str):
            return name
    inner = getattr(backend, "compiler_fn", None)   # a wrapper without a name of its own
    if inner is not None and inner is not backend:
        return _backend_name(inner)
    return type(backend).__name__


def _root(entry: object) -> object | None:
    """The C++ RootGuardManager, if this torch has one."""
    manager = getattr(entry, "guard_manager", None)
    root = getattr(manager, "root", manager)
    return root if hasattr(root, "get_leaf_guards") else None


def _count_leaves(root: object) -> int:
    """Leaf guards in the tree; a relational guard (under several managers) counts once."""
    # pybind returns the same Python object for a C++ guard only while one is alive:
    # keep them all alive so that id() identifies guards, not recycled addresses.
    leaves = [leaf for manager in _managers(root)
              for leaf in manager.get_leaf_guards()]  # type: ignore[attr-defined]
    epilogue = getattr(root, "get_epilogue_lambda_guards", None)
    return len({id(leaf) for leaf in leaves}) + (len(epilogue()) if epilogue else 0)


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
        out.append((_call_or(accessor, "repr", ""), child))
    return out


def _managers(root: object) -> list[object]:
    out, stack = [], [root]
    while stack:
        manager = stack.pop()
        out.append(manager)
        stack.extend(child for _, child in _children(manager))
    return out


def _call_or(obj: object, method: str, default: str) -> str:
    try:
        return str(getattr(obj, method)())
    except Exception:  # noqa: BLE001
        return default


# -- explaining the choice of entry ------------------------------------------------

def _check_verbose(entry: object, f_locals: dict) -> tuple[bool, str] | None:
    """(passed, first failure reason) using check_verbose, which leaves fail counts alone."""
    manager = getattr(entry, "guard_manager", None)
    check = getattr(manager, "check_verbose", None)
    if check is None:
        return None
    result = check(f_locals)
    parts = [_code_only(str(p)) for p in getattr(result, "verbose_code_parts", []) or []]
    return bool(result.result), "; ".join(parts) or "guards failed"


def _code_only(part: str) -> str:
    """A guard's code without the `  # user line  # file:line` comment torch appends."""
    return part.split("  # ", 1)[0].strip()


def _running_entry(entries: list, transformed_code: types.CodeType) -> object | None:
    # Identity, never equality or hashing: generated code objects can be unhashable.
    return next((e for e in entries if e.code is transformed_code), None)


def explain_entry(original_code: types.CodeType, transformed_code: types.CodeType,
                  f_locals: dict) -> EntryExplanation:
    """Which cache entry runs (`running`), and each other entry whose guards fail on
    `f_locals` (the arguments at entry) with torch's first failure reason."""
    try:
        return _explain(original_code, transformed_code, f_locals)
    except Exception as error:  # noqa: BLE001 - a torch change must not break the debugger
        return EntryExplanation(None, note=f"not available with torch {_torch_version()}: {error}")


def _explain(original_code: types.CodeType, transformed_code: types.CodeType,
             f_locals: dict) -> EntryExplanation:
    entries = _raw_entries(original_code)
    if isinstance(entries, str):
        return EntryExplanation(None, note=entries)
    running = _running_entry(entries, transformed_code)
    explanation = EntryExplanation(_compile_id(running) if running is not None else None)
    for entry in entries:
        if entry is running:
            continue
        cid = _compile_id(entry) or "?"
        try:
            outcome = _check_verbose(entry, f_locals)
        except Exception as error:  # noqa: BLE001
            explanation.rejected.append((cid, f"guards not evaluable: {error}"))
            continue
        if outcome is None:
            explanation.note = _unavailable("guard evaluation")
        elif outcome[0]:
            explanation.passing.append(cid)
        else:
            explanation.rejected.append((cid, outcome[1]))
    return explanation


# -- the guard tree, evaluated ----------------------------------------------------

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


def guard_tree(original_code: types.CodeType, transformed_code: types.CodeType,
               f_locals: dict) -> list[GuardLine] | str:
    """The running entry's guards, each evaluated on `f_locals` where possible.

    `f_locals` maps every name the guards read as `L[...]`: the arguments, and the
    free variables too (as `frame.f_locals` gives them). A str explains why there
    is no tree (no such entry, or an older torch).
    """
    try:
        return _guard_tree(original_code, transformed_code, f_locals)
    except Exception as error:  # noqa: BLE001
        return f"guards not available with torch {_torch_version()}: {error}"


def _guard_tree(original_code: types.CodeType, transformed_code: types.CodeType,
                f_locals: dict) -> list[GuardLine] | str:
    entries = _raw_entries(original_code)
    if isinstance(entries, str):
        return entries
    entry = _running_entry(entries, transformed_code)
    if entry is None:
        return "this code is not a cache entry of that function"
    root = _root(entry)
    if root is None:
        return _unavailable("the guard tree")
    try:
        outcome = _check_verbose(entry, f_locals)
    except Exception:  # noqa: BLE001
        outcome = None
    reason = outcome[1] if outcome and not outcome[0] else None
    try:
        builder = _TreeBuilder(GuardScope(entry.guard_manager, f_locals), reason)
        _walk(builder, root, (True, f_locals))
    except Exception as error:  # noqa: BLE001 - fall back to torch's own printout
        return (f"guards not evaluable individually with torch {_torch_version()} ({error}):\n"
                f"{entry.guard_manager}\noverall: {reason or 'pass'}")
    if outcome is not None and outcome[0]:
        # The whole tree passed, so every guard in it did, even those that cannot
        # be called on their own.
        for line in builder.lines:
            if line.passed is None:
                line.passed = True
    if reason is not None and not builder.reason_placed:
        builder.lines.insert(0, GuardLine(f"check_verbose: {reason}", False, 0, reason=reason))
    return builder.lines


def guard_lines(guard_manager: object) -> list[GuardLine]:
    """The numbered lines of a guard tree as `guards` lists them, not evaluated."""
    builder = _TreeBuilder(GuardScope(guard_manager, {}), None)
    _walk(builder, guard_manager.root, (False, None))  # type: ignore[attr-defined]
    return builder.lines


def _walk(builder: _TreeBuilder, root: object, frame_locals: tuple[bool, object]) -> None:
    """The root's tree, then the epilogue guards (which see all the locals)."""
    builder.manager(root, "", 0)
    epilogue = getattr(root, "get_epilogue_lambda_guards", None)
    for leaf in epilogue() if epilogue else []:
        builder.leaf(leaf, "L", frame_locals, 1)


class _TreeBuilder:
    def __init__(self, scope: GuardScope, reason: str | None) -> None:
        self.scope = scope
        self.reason = reason
        self.reason_placed = False
        self.lines: list[GuardLine] = []
        # Holds the guard objects themselves (see _count_leaves on pybind identity).
        self._relational_seen: list[object] = []

    def manager(self, manager: object, accessor: str, depth: int) -> bool | None:
        """Add the manager's line and its subtree; return the subtree's result."""
        source = _call_or(manager, "get_source", "?")
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
        code = " and ".join(_code_only(p) for p in parts)
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
        if any(_code_only(p) in reason for p in parts):
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
