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

Every entry is evaluated in the torch state of the call that ran (`running`), as
that entry's GLOBAL_STATE guard recorded it, not the process's state now, which
differs after the fact (post mortem, `up`): see guards/call_state.py.
"""
from __future__ import annotations

import contextlib
import types
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple

from dyndbg.dynamo import versions
from dyndbg.dynamo.guards import call_state
from dyndbg.dynamo.backends import backend_name
from dyndbg.dynamo.versions import torch_version
from dyndbg.dynamo.guards.outcomes import (Outcome, check_verbose, failing_shape_guards,
                                          root_of)
from dyndbg.dynamo.guards.tree import (GuardLine, GuardScope, Judge, TreeBuilder, code_only,
                                      managers, source_values, walk)


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
    # compile id -> (source, value) for each source the failing guard reads, as
    # this call gave it (`G['calls']`, 2): the values that failed it.
    values: dict[str, list[tuple[str, object]]] = field(default_factory=dict)
    # compile id -> "file.py:12", the line that installed the failing guard (its
    # user stack, as check_verbose gives it), where torch gives one
    origins: dict[str, str] = field(default_factory=dict)


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


def entry_count(original_code: types.CodeType) -> int | None:
    """How many cache entries the user code has (None where torch cannot say),
    without reading their guards."""
    entries = _raw_entries(original_code)
    return None if isinstance(entries, str) else len(entries)


def _entry_info(entry: object) -> EntryInfo:
    code = entry.code  # type: ignore[attr-defined]  # torch's CacheEntry
    names = _global_names(code)
    root = root_of(entry)
    return EntryInfo(
        compile_id=_compile_id(entry),
        code=code,
        guard_count=_count_leaves(root) if root is not None else None,
        backend=_backend_of(entry),
        graphs=[n for n in names if n.startswith("__compiled_fn_")],
        resume_functions=[n for n in names if n.startswith("__resume_at_")],
    )


def _backend_of(entry: object) -> str | None:
    backend = getattr(entry, "backend", None)
    return None if backend is None else backend_name(backend)


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


def _count_leaves(root: object) -> int:
    """Leaf guards in the tree; a relational guard (under several managers) counts once."""
    # pybind returns the same Python object for a C++ guard only while one is alive:
    # keep them all alive so that id() identifies guards, not recycled addresses.
    leaves = [leaf for manager in managers(root)
              for leaf in manager.get_leaf_guards()]  # type: ignore[attr-defined]  # torch's C++ guard manager
    epilogue = getattr(root, "get_epilogue_lambda_guards", None)
    return len({id(leaf) for leaf in leaves}) + (len(epilogue()) if epilogue else 0)


# -- explaining the choice of entry ------------------------------------------------

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
    call = _call_of(running, f_locals)
    for entry in entries:
        if entry is running:
            continue
        cid = _compile_id(entry) or "?"
        try:
            with _in_state_of(call):
                outcome = check_verbose(entry, f_locals)
            # A process-wide setting changed since: torch's reason is all there is.
            outcome = _against_call(entry, outcome, call) or outcome
            outcome = failing_shape_guards(entry, outcome, f_locals) or outcome
        except Exception as error:  # noqa: BLE001
            explanation.rejected.append((cid, f"guards not evaluable: {error}"))
            continue
        if outcome is None:
            explanation.note = _unavailable("guard evaluation")
        elif outcome.passed:
            explanation.passing.append(cid)
        else:
            explanation.rejected.append((cid, outcome.reason))
            explanation.values[cid] = source_values(getattr(entry, "guard_manager", None),
                                                    f_locals, outcome.reason)
            if outcome.origin and outcome.origin != "torch":
                explanation.origins[cid] = outcome.origin
    return explanation


def guard_tree(original_code: types.CodeType, transformed_code: types.CodeType,
               f_locals: dict, running: types.CodeType | None = None) -> list[GuardLine] | str:
    """The guards of the entry whose code is `transformed_code`, each evaluated on
    `f_locals` where possible.

    `f_locals` maps every name the guards read as `L[...]`: the arguments, and the
    free variables too (as `frame.f_locals` gives them). `running`: the code the
    call ran (the running entry's, `transformed_code` itself when that is the one
    shown); the guards are then evaluated in that call's torch state (grad mode,
    autocast, inference mode) as that entry recorded it, not the process's now.
    Without it, in the process's state now. A str explains why there is no tree
    (no such entry, or an older torch).
    """
    try:
        return _guard_tree(original_code, transformed_code, f_locals, running)
    except Exception as error:  # noqa: BLE001
        return f"guards not available with torch {torch_version()}: {error}"


def _guard_tree(original_code: types.CodeType, transformed_code: types.CodeType,
                f_locals: dict, running: types.CodeType | None) -> list[GuardLine] | str:
    entries = _raw_entries(original_code)
    if isinstance(entries, str):
        return entries
    entry = _running_entry(entries, transformed_code)
    if entry is None:
        return "this code is not a cache entry of that function"
    root = root_of(entry)
    if root is None:
        return _unavailable("the guard tree")
    ran = _running_entry(entries, running) if running is not None else None
    call = _call_of(ran, f_locals) if ran is not None else None
    with _in_state_of(call):
        try:
            outcome = _against_call(entry, check_verbose(entry, f_locals), call)
        except Exception:  # noqa: BLE001
            outcome = None
        reason = outcome.reason if outcome and not outcome.passed else None
        try:
            manager = entry.guard_manager  # type: ignore[attr-defined]  # torch's CacheEntry
            builder = TreeBuilder(GuardScope(manager, f_locals), reason,
                                  _judge(call))
            walk(builder, root, (True, f_locals))
        except Exception as error:  # noqa: BLE001 - fall back to torch's own printout
            return (f"guards not evaluable individually with torch {torch_version()} "
                    f"({error}):\n{getattr(entry, 'guard_manager', '?')}\noverall: "
                    f"{reason or 'pass'}")
    if outcome is not None and outcome.passed:
        # The whole tree passed, so every guard in it did, even those that cannot
        # be called on their own.
        for line in builder.lines:
            if line.passed is None:
                line.passed = True
    if reason is not None and not builder.reason_placed:
        builder.lines.insert(0, GuardLine(f"check_verbose: {reason}", False, 0, reason=reason))
    if call is not None and call.differs:
        builder.lines.insert(0, GuardLine(
            f"(evaluated in the torch state of this call, as [{call.compile_id}] recorded "
            f"it: it differs now in {', '.join(call.differs)})", None, 0))
    return builder.lines


# -- the call's torch state (guards/call_state.py) ------------------------------------------------

class _Call(NamedTuple):
    """Torch's state at the call: what the entry that ran recorded."""

    compile_id: str
    record: dict                 # its GLOBAL_STATE record
    inference: bool | None       # inference mode at the call, where it is not as now
    differs: list[str]           # what is not as now (for the note)


def _global_record(entry: object) -> dict | None:
    root = root_of(entry)
    for leaf in root.get_leaf_guards() if root is not None else []:  # type: ignore[attr-defined]  # torch's C++ guard manager
        if type(leaf).__name__ == "GLOBAL_STATE":
            parts = [code_only(str(p)) for p in leaf.verbose_code_parts()]
            return call_state.recorded(parts[0]) if parts else None
    return None


def _call_of(ran: object | None, f_locals: dict) -> _Call | None:
    """The running entry's record as the call's state; inference mode (not in the
    record) as the setting under which that entry's own guards pass, since they
    passed at the call. None where there is no record (evaluate as now)."""
    record = _global_record(ran) if ran is not None else None
    if record is None:
        return None
    now = call_state.inference_now()
    candidates: list[bool | None] = [None]
    if now is not None and (now or record.get("grad_mode") is False):
        candidates.append(not now)      # inference mode implies grad mode off
    inference = None
    for candidate in candidates:
        with call_state.applied(record, candidate) as matches:
            passed = matches and _passes(ran, f_locals)
        if passed:
            inference = candidate
            break
    actual = call_state.current() or {}
    differs = call_state.changed(record, actual)
    if inference is not None:
        differs.append("inference_mode")
    return _Call(_compile_id(ran) or "?", record, inference, differs)


def _passes(entry: object, f_locals: dict) -> bool:
    try:
        outcome = check_verbose(entry, f_locals)
    except Exception:  # noqa: BLE001
        return False
    return outcome is not None and outcome.passed


@contextlib.contextmanager
def _in_state_of(call: _Call | None) -> Iterator[None]:
    if call is None:
        yield
        return
    with call_state.applied(call.record, call.inference):
        yield


def _against_call(entry: object, outcome: Outcome | None,
                  call: _Call | None) -> Outcome | None:
    """check_verbose's outcome, unless it stopped at GLOBAL_STATE, which it checks
    against the process now: a process-wide setting changed since the call is no
    failure of the call (the GLOBAL_STATE line says what differs from the call)."""
    if call is None or outcome is None or outcome.passed or \
            not outcome.reason.startswith("GLOBAL_STATE"):
        return outcome
    changes = call_state.changed(_global_record(entry) or {}, call.record)
    if changes:
        return Outcome(False, f"GLOBAL_STATE changed: {', '.join(changes)}")
    return None      # the rest of the tree was not checked


def _judge(call: _Call | None) -> Judge | None:
    """GLOBAL_STATE guards compared with the call's record rather than called."""
    if call is None:
        return None

    def judge(kind: str, code: str) -> tuple[bool, str | None] | None:
        if kind != "GLOBAL_STATE":
            return None
        record = call_state.recorded(code)
        if record is None:
            return None
        changes = call_state.changed(record, call.record)
        return (False, f"GLOBAL_STATE changed: {', '.join(changes)}") if changes else (True, None)
    return judge
