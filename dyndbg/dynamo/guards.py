"""Cache entries and guards of a user function.

`torch._dynamo.eval_frame._debug_get_cache_entry_list(code)` gives the cache
entries of an ORIGINAL code object, most recently used first. Each entry's
`guard_manager` (a `GuardManagerWrapper` on torch 2.13) has a C++ `root`
(`RootGuardManager`): a tree of managers, one per source (`L['x']`, `G['w']`,
`L['x'].size()[0]`...), each holding leaf guards and child managers reached by
accessors. Measured on torch 2.13 (2.14 and 2.15 differ as versions.py says):

- `root.check_verbose(f_locals)` gives the result and the first failure's reason.
  `root.check(...)` is NOT used: on failure it bumps `fail_count`, which dynamo
  uses to reorder guards; check_verbose leaves the tree untouched.
- Leaf guards are callable on the value they guard (`leaf(value) -> bool`), except
  relational guards (NO_TENSOR_ALIASING...), which span several sources.
- Accessors cannot be called from Python, but each manager's `get_source()` is
  the Python expression dynamo built the guard from; evaluating it in dynamo's
  own guard scope (`L` = locals, `G` = globals, plus `closure_vars`) gives the
  guarded value, as dynamo's own recompile-reason code does.

So each leaf guard is evaluated individually on its source's value; a relational
guard (aliasing between sources), which no single value can answer, by evaluating
its code. Where that is impossible (a source or code that does not evaluate) its
line says `passed=None`, unless the whole tree passes (then every guard did). Torch's own
check_verbose reason is attached to the guard it names. If the tree cannot be
walked at all, guard_tree falls back to str(guard_manager) plus that reason.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field

from dyndbg.dynamo import versions
from dyndbg.dynamo.versions import torch_version
from dyndbg.dynamo.guard_walk import GuardLine, GuardScope, TreeBuilder, code_only, managers, walk


def _unavailable(what: str) -> str:
    return f"{what} not available with torch {torch_version()}"


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


# -- cache entries ---------------------------------------------------------------

def _raw_entries(code: types.CodeType) -> list | str:
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    except ImportError:
        return _unavailable("cache entries")
    try:
        return list(_debug_get_cache_entry_list(code))
    except Exception as error:  # noqa: BLE001
        return f"cache entries unreadable with torch {torch_version()}: {error}"


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
    leaves = [leaf for manager in managers(root)
              for leaf in manager.get_leaf_guards()]  # type: ignore[attr-defined]
    epilogue = getattr(root, "get_epilogue_lambda_guards", None)
    return len({id(leaf) for leaf in leaves}) + (len(epilogue()) if epilogue else 0)


# -- explaining the choice of entry ------------------------------------------------

def _check_verbose(entry: object, f_locals: dict) -> tuple[bool, str] | None:
    """(passed, first failure reason) using check_verbose, which leaves fail counts alone."""
    manager = getattr(entry, "guard_manager", None)
    check = getattr(manager, "check_verbose", None)
    if check is None:
        return None
    result = versions.guard_check(check, f_locals)
    parts = [code_only(str(p)) for p in getattr(result, "verbose_code_parts", []) or []]
    return bool(result.result), "; ".join(parts) or "guards failed"


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
        return EntryExplanation(None, note=f"not available with torch {torch_version()}: {error}")


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
        return f"guards not available with torch {torch_version()}: {error}"


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
        builder = TreeBuilder(GuardScope(entry.guard_manager, f_locals), reason)
        walk(builder, root, (True, f_locals))
    except Exception as error:  # noqa: BLE001 - fall back to torch's own printout
        return (f"guards not evaluable individually with torch {torch_version()} ({error}):\n"
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
