"""Dynamo's cache entries, reached safely: the torch calls cache editing rests on.

Measured on torch 2.13 (../shared/cache-editing): a `_CacheEntry` handle is not
owned by Python; after a reset or a recompile it may read garbage, abort the
process or silently point at another entry. So entries are always fetched again
by compile id (`find`) and used at once; only their code objects and guard
managers (plain refcounted Python objects) are kept.

What edits use:
- a *switch guard*: a lambda guard added to the live root (`add_lambda_guard`),
  which consults a flag, so that turning it off restores the entry exactly. Torch
  cannot remove a guard; a guard manager's root must never be rebound (segfault).
- *precompile entries* (`_load_precompile_entry`): (guards, code) pairs torch
  checks before the normal entries, in load order, for calls of the original code
  under dynamo. `_reset_precompile_entries` drops them all at once.
"""
from __future__ import annotations

import gc
import types
from typing import Callable, NamedTuple

from dyndbg.dynamo import versions
from dyndbg.dynamo.errors import CacheError


class LiveEntry(NamedTuple):
    """One cache entry as fetched just now; do not keep it across calls."""

    original: types.CodeType          # the user's code the entry belongs to
    compile_id: str
    code: types.CodeType              # the transformed code
    guard_manager: object             # GuardManagerWrapper


def _eval_frame() -> types.ModuleType:
    import torch
    return torch._C._dynamo.eval_frame


def originals() -> list[types.CodeType]:
    """Every user code object dynamo transformed that is still alive."""
    from torch._dynamo.convert_frame import orig_code_map
    seen: dict[int, types.CodeType] = {}
    for ref in list(orig_code_map.refs.values()):
        code = ref()
        original = orig_code_map.get(code) if code is not None else None
        if original is not None:
            seen.setdefault(id(original), original)
    return list(seen.values())


def entries_of(original: types.CodeType) -> list[LiveEntry]:
    """The live (not evicted by torch) entries of `original`, in lookup order."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    found = []
    for entry in _debug_get_cache_entry_list(original):
        if entry.code is None:         # invalidated by torch
            continue
        found.append(LiveEntry(original, str(entry.compile_id), entry.code, entry.guard_manager))
    return found


def find(compile_id: str, hint: types.CodeType | None = None) -> LiveEntry:
    """The live entry with this compile id (`0/1`), looked up afresh."""
    candidates = ([hint] if hint is not None else []) + originals()
    for original in candidates:
        for entry in entries_of(original):
            if entry.compile_id == compile_id:
                return entry
    raise CacheError(f"no cache entry {compile_id} (compile ids are as `cache` lists them)")


def functions_named(name: str) -> list[types.CodeType]:
    """Compiled user functions (their original code) called `name`."""
    return [c for c in originals() if name in (c.co_name, getattr(c, "co_qualname", ""))]


def entry_count(original: types.CodeType) -> int:
    """All entries torch counts toward recompile_limit, evicted ones included."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    return len(_debug_get_cache_entry_list(original))


def recompile_limit() -> int | None:
    import torch._dynamo.config as config
    return getattr(config, "recompile_limit", getattr(config, "cache_size_limit", None))


# -- guards ------------------------------------------------------------------------

def add_switch_guard(guard_manager: object, check: Callable[[dict], bool], text: str) -> None:
    """Add a guard to the live root; `check(frame_locals)` must never raise."""
    guard_manager.root.add_lambda_guard(check, [text], None)  # type: ignore[attr-defined]  # torch's GuardManagerWrapper


def copy_guards(guard_manager: object, keep: Callable[[object], bool]) -> object:
    """A new GuardManagerWrapper with the managers `keep` accepts (whole subtrees)."""
    from torch._dynamo.guards import GuardManagerWrapper
    root = guard_manager.root.clone_manager(keep)  # type: ignore[attr-defined]  # torch's GuardManagerWrapper
    if root is None:
        raise CacheError("that would leave no guard tree at all")
    return GuardManagerWrapper(root)


def no_guards() -> object:
    """A GuardManagerWrapper that passes everything (an empty root)."""
    from torch._dynamo.guards import GuardManagerWrapper
    return GuardManagerWrapper()


def check(guard_manager: object, frame_locals: dict) -> tuple[bool, str]:
    """(passed, torch's reason when not); leaves fail counts untouched."""
    result = versions.guard_check(guard_manager.check_verbose,  # type: ignore[attr-defined]  # torch's GuardManagerWrapper
                                  frame_locals)
    parts = [str(p) for p in getattr(result, "verbose_code_parts", [])]
    return bool(result.result), "; ".join(parts)


# -- precompile entries ------------------------------------------------------------

def precompile_count(original: types.CodeType) -> int:
    return len(_eval_frame()._debug_get_precompile_entries(original))


def load_precompile(original: types.CodeType, guard_manager: object, code: types.CodeType) -> None:
    _eval_frame()._load_precompile_entry(original, guard_manager, code)


def reset_precompile(original: types.CodeType) -> None:
    _eval_frame()._reset_precompile_entries(original)


# -- running by hand ---------------------------------------------------------------

def function_of(original: types.CodeType, closure: bool = False) -> types.FunctionType:
    """A live function whose code is `original` (for its globals and defaults;
    `closure`: for its free variables' values too). Where live functions of
    that code hold different values in their cells (a decorator's wrapper
    around several functions), which one a call means is not known from its
    arguments: CacheError, rather than the guards read on one picked."""
    functions = [f for f in gc.get_referrers(original)
                 if isinstance(f, types.FunctionType) and f.__code__ is original]
    if not functions:
        raise CacheError(f"no live function runs {original.co_name}: nothing to take its "
                         "globals and closure from")
    if closure and original.co_freevars and \
            len({_cell_values(f) for f in functions}) > 1:
        raise CacheError(f"{len(functions)} live functions run {original.co_name} with "
                         f"different values of its free variables "
                         f"({', '.join(original.co_freevars)}): which one a call means is not "
                         "known from its arguments")
    return functions[-1]


def _cell_values(function: types.FunctionType) -> tuple[int | None, ...]:
    """What the function's cells hold, by identity (None: an empty cell)."""
    values: list[int | None] = []
    for cell in function.__closure__ or ():
        try:
            values.append(id(cell.cell_contents))
        except ValueError:
            values.append(None)
    return tuple(values)


def run_code(original: types.CodeType, code: types.CodeType, args: tuple, kwargs: dict) -> object:
    """Call `code` as the function `original` belongs to, without dynamo: no guards are
    checked, and resume functions it calls run as plain Python."""
    function = function_of(original, closure=True)
    runner = types.FunctionType(code, function.__globals__, function.__name__,
                                function.__defaults__, function.__closure__)
    runner.__kwdefaults__ = function.__kwdefaults__
    return runner(*args, **kwargs)
