"""Where torch releases differ, as far as dynamo/ is concerned: the one place.

dyndbg runs on torch 2.13.0, 2.14.1 and 2.15.0 (measured on each). Each difference
below has one helper here, named with the release that brought it; the rest of
dynamo/ calls these helpers and never tests a version itself. A new release's
differences belong here too.

- 2.14: `torch.autograd.Function.apply` is the C builtin `_C._FunctionBase.apply`
  (a Python classmethod in 2.13), so AOT's training chain reaches its
  CompiledFunction class through a builtin method: `function_class`.
- 2.14: object aliasing (`L['a'] is L['b']`) is a C++ relational guard under both
  sources' managers (`config.use_lamba_guard_for_object_aliasing` became False);
  2.13 has one lambda guard on the root, evaluated after the tree. guard_walk
  evaluates any relational guard from its code (`relation_names` gives what that
  code calls), so the listing shows ok/FAIL on every release. `guard drop` of it
  drops the relation from 2.14 (edits/guard_drop.py); on 2.13 a root lambda is refused.
- 2.15: dict and set membership guards append " (HINT: ...)" to their code parts
  too (type matches and closure variables have one on every release). The hint
  follows the user-stack comment, or the code itself where a guard has no user
  stack: `split_hint`.
- the same on 2.13, 2.14 and 2.15 (read, and measured on each, by
  symbolic/state.py): `InstructionTranslatorBase.run` calling `self.step()` per
  instruction, `instruction_pointer`/`instructions`/`current_instruction`,
  `stack`, `symbolic_locals`, `parent` (None for the frame compiled),
  `is_tracing_resume_prologue`; `OutputGraph.compile_subgraph(tx, reason,
  stack_pops)` with `GraphCompileReason.graph_break`; `RestartAnalysis.
  restart_reason`; `CompileContext.current_trace_id()` (compile id and
  attempt); `Guard.user_stack`; LazyVariableTracker's `_cache` with `vt` and
  `value`; CellVariable's `pre_existing_contents` and `SideEffects.
  store_attr_mutations` (a cell's contents stored in the trace, under
  "cell_contents"); a LocalCellSource, whose `name` raises
  NotImplementedError (a cell is never guarded). A torch without `is_tracing_resume_prologue` shows no "(resume
  prologue)" mark; one without the classes and methods hooked gets one line
  at `catch trace` naming what it lacks, and no compile stop
  (`CompileStopHooks.missing`).
- the same on 2.13, 2.14 and 2.15 (read by names.resume_code):
  `OutputGraph.install_resume_function_global` installs a resume function
  with free variables (that of a closure's call dynamo inlined) as a factory,
  `_make_fn(closure)`, holding the resume function's code in its closure (a
  loaded package's `_make_fn` holds it as a default); one without free
  variables as the function itself.
- 2.14: a lazy VariableTracker's cache is a `LazyCache` or a
  `ComputedLazyCache` (2.13: `LazyCache` only), each with its own `realize`:
  `lazy_caches`.
- before 2.15: `GuardManagerWrapper.check` / `check_verbose` leave
  `__torch_function__` disabled for the thread when the tree throws (a strided
  nested tensor where a TENSOR_MATCH expects a dense one makes `check` throw);
  2.15 restores it. dyndbg restores it itself on every release: `guard_check`.
- the same on 2.13 and 2.15 (read in both; older releases make the same
  call): `ConvertFrame.__call__` calls convert_frame's module global
  `format_error_msg(e, code, record_filename, frame)` only where it suppresses
  a compile's exception and skips the frame (compiles/skips.py wraps it); the
  exception's `gb_type`, `msg`, `real_stack`, `compile_id` and
  `frame_exec_strategy` (the recompile limit's RUN_ONLY).
- 2.15: an exception may skip the frame for this call only
  (`apply_to_code` False); 2.13 has no such attribute and skips the code
  from then on: compiles/skips.py reads it with that default.
- the same on 2.13, 2.14 and 2.15 (tests/test_graph_inductor_backward.py
  passes on each; read by graphs/inductor_backward.py): AOT's
  `CompiledFunction._lazy_backward_info.bw_module` (an
  AutogradLazyBackwardCompileInfo; a CachedAutogradLazyBackwardCompileInfo,
  with no graph, after a hit of AOT's cache), whose nodes' meta AOT's cache
  entry strips by assigning `node.meta = {}`; `CompiledFunction.compiled_bw`
  leading to inductor's CompiledFxGraph (`current_callable`,
  `compiled_fn_runner`, `source_code`, `cache_linemap`).
- shape guards, the same on 2.13, 2.14 and 2.15 (read in each): a
  ShapeGuard is `(expr, sloc, size_oblivious)` and keeps only its SLoc,
  `(framework_loc, maybe_user_loc)`, the innermost user frame as text; no
  user stack (`guard_added_fast` has one only in TORCH_TRACE's structured
  log). `ShapeEnv.replacements_slocs` keeps the first replacement's SLoc,
  `specialization_stacks` a constant specialization's whole user stack by
  source; a replacement's reason (`msg`) is only logged. Dynamo checks the
  guards as one Python lambda on the root, its verbose code parts one per
  guard (`enable_cpp_symbolic_shape_guards` is False on each: shapes/parts.py
  reads them). `_get_sloc`, `_set_replacement`, `create_symbol` and
  `create_unbacked_symint/symfloat/symbool` have the same names and
  arguments (shapes/watch.py wraps them; `uninteresting_files()` is an
  lru-cached set on each).
- 2.15: `maybe_mark_dynamic` with a range records a StrictMinMaxConstraint
  with `warn_only=True` (2.13 and 2.14: no constraint, DimDynamic.DYNAMIC);
  the other dims' records are the same on each: `why_dim_is_symbolic`.
"""
from __future__ import annotations

import re
import sys
import types
from typing import Callable, TypeVar

T = TypeVar("T")

_HINT = re.compile(r"\s*\(HINT: (.*)\)\s*$", re.S)


def torch_version() -> str:
    """The running torch's version, for messages; "unknown" before torch is imported."""
    torch = sys.modules.get("torch")
    return getattr(torch, "__version__", "unknown")


def function_class(method: object) -> type | None:
    """The autograd Function class a builtin `apply` is bound to (torch >= 2.14), or
    None. Only torch's own classes: a user class's attributes are never walked."""
    if not isinstance(method, types.BuiltinFunctionType):
        return None
    owner = getattr(method, "__self__", None)
    if isinstance(owner, type) and owner.__module__.startswith("torch"):
        return owner
    return None


def split_hint(part: str) -> tuple[str, str]:
    """(the code part without torch's trailing " (HINT: ...)", the hint or "")."""
    found = _HINT.search(part)
    if found is None:
        return part, ""
    return part[:found.start()], found.group(1)


def guard_check(check: Callable[[dict], T], frame_locals: dict) -> T:
    """`check(frame_locals)` (a guard manager's check or check_verbose), leaving the
    thread's `__torch_function__` state as it was even when the tree throws."""
    import torch
    state = torch._C._get_torch_function_state()  # type: ignore[attr-defined]  # not in its stubs
    try:
        return check(frame_locals)
    finally:
        # On a normal return torch has restored it already; setting it again is a no-op.
        torch._C._set_torch_function_state(state)  # type: ignore[attr-defined]  # not in its stubs


def relation_names() -> dict[str, object]:
    """Functions a relational guard's code calls that are not in dynamo's guard scope.

    `check_no_aliasing(L['x'], L['y'])` (NO_TENSOR_ALIASING, every release) names a
    C++ check that is not a Python global: the same test, by identity, as torch's
    "Duplicate tensor found where not expected!".
    """
    def check_no_aliasing(*tensors: object) -> bool:
        return len({id(t) for t in tensors}) == len(tensors)
    return {"check_no_aliasing": check_no_aliasing}


def why_dim_is_symbolic(dynamism: object, constraint: object) -> str:
    """Why a tensor's dim (a size or a stride) is symbolic, from what dynamo's
    `_automatic_dynamic` (variables/builder.py) recorded for it in the
    tensor's symbolic context: its DimDynamic and its constraint. It logs the
    same decision as `marking L['x'] as dynamic (from mark_dynamic)`, `(from
    automatic dynamic/PGO)` or `(from assume_static_by_default = False)`.
    The answer names a member of shapes/record.py's Symbolic:

    - mark_dynamic: a RelaxedUnspecConstraint, or with a range a
      StrictMinMaxConstraint, either with `warn_only=False`;
    - automatic dynamic: a RelaxedUnspecConstraint with `warn_only=True`
      (also a size dynamo's dynamic-sources lists name);
    - maybe_mark_dynamic: no constraint and DYNAMIC; on 2.15 with a range, a
      StrictMinMaxConstraint with `warn_only=True`;
    - dynamic=True (assume_static_by_default False): no constraint and DUCK;
    - mark_unbacked: UNBACKED.
    """
    kind = type(constraint).__name__
    warn_only = getattr(constraint, "warn_only", None)
    dim = getattr(dynamism, "name", "")
    if dim == "UNBACKED":
        return "MARKED_UNBACKED"
    if kind in ("RelaxedUnspecConstraint", "StrictMinMaxConstraint") and warn_only is False:
        return "MARKED"
    if kind == "RelaxedUnspecConstraint" and warn_only is True:
        return "AUTOMATIC"
    if kind == "StrictMinMaxConstraint" and warn_only is True:
        return "MAYBE_MARKED"
    if constraint is None and dim == "DUCK":
        return "DYNAMIC"
    if constraint is None and dim == "DYNAMIC":
        return "MAYBE_MARKED"
    return "UNKNOWN"


def recompile_limit() -> int | None:
    """dynamo's `config.recompile_limit` (its name on 2.13-2.15), None if unreadable."""
    try:
        import torch._dynamo
        return int(torch._dynamo.config.recompile_limit)
    except Exception:  # noqa: BLE001
        return None


def shape_guard_names() -> dict[str, object]:
    """The names the shape guards' lambda is made with besides the guard scope:
    torch's SYMPY_INTERP (math functions, `FloorDiv`, `Mod`...), as
    GuardBuilder.SHAPE_ENV passes them on 2.13-2.15; {} where torch lacks it."""
    try:
        from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP
    except ImportError:
        return {}
    return dict(SYMPY_INTERP)


def lazy_caches() -> list[type]:
    """The classes whose `realize` makes a lazy VariableTracker real
    (symbolic/state.py refuses it while an expression runs at a compile stop)."""
    from torch._dynamo.variables import lazy
    return [cache for cache in (getattr(lazy, "LazyCache", None),
                                getattr(lazy, "ComputedLazyCache", None))
            if cache is not None and "realize" in vars(cache)]
