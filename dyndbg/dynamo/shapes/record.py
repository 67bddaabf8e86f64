"""A compile's symbolic shapes, read from its ShapeEnv as the compile ends
(in its bytecode hook, from the OutputGraph torch's `_compile_inner` holds:
compiles/context.py finds it), or live at a stop while dynamo compiles.

What is read, from the ShapeEnv (torch/fx/experimental/symbolic_shapes.py,
the same on torch 2.13-2.15): `var_to_sources` (each backed symbol's
sources), `var_to_range` (its range as torch keeps it), `backed_var_to_val`
(the value it was compiled for), `replacements` with `replacements_slocs`
(what a symbol became, and where, the first time) and `specialization_stacks`
(a constant specialization's user stack), `guards` (each ShapeGuard's
expression and SLoc), `tracked_fakes` (each input tensor's symbolic context:
why its dims are symbolic); from dynamo's config, `assume_static_by_default`
(False under dynamic=True) as the compile ran; and what shapes/watch.py
noted on that ShapeEnv (replacement reasons, where each symbol was made,
each SLoc's whole user stack).

Only references are copied (sympy expressions and torch's SLocs are
immutable), and only where the compile made a symbol or a replacement: a
compile with static shapes costs a few attribute reads. Text is made when
asked (shapes/story.py), never here.
"""
from __future__ import annotations

import enum
import traceback
import weakref
from typing import Any, NamedTuple

from dyndbg.dynamo.shapes import watch


class Symbolic(enum.Enum):
    """Why a symbol is symbolic: torch's decision, read from what it recorded."""

    AUTOMATIC = "automatic dynamic"        # a size seen to change (torch's automatic_dynamic_shapes)
    MARKED = "mark_dynamic"                 # torch._dynamo.mark_dynamic on the tensor
    MAYBE_MARKED = "maybe_mark_dynamic"     # torch._dynamo.maybe_mark_dynamic
    DYNAMIC = "dynamic=True"                # assume_static_by_default False (torch.compile(dynamic=True))
    MARKED_UNBACKED = "mark_unbacked"       # torch._dynamo.decorators.mark_unbacked
    UNBACKED = "unbacked"                   # a value computed in the graph (.item(), nonzero())
    UNKNOWN = "symbolic"                    # torch recorded nothing dyndbg reads as a reason


class SymbolFact(NamedTuple):
    name: str                          # "s77", "u0"
    sources: tuple[str, ...]           # torch's var_to_sources names; () for an unbacked one
    hint: Any                          # the value torch compiled for; None for an unbacked one
    lower: Any                         # its range as torch keeps it (sympy), var_to_range
    upper: Any
    symbolic: Symbolic
    made_at: Any                       # the SLoc torch made it at (None: not noted)
    made_stack: traceback.StackSummary | None


class ReplacementFact(NamedTuple):
    name: str                          # the symbol replaced
    sources: tuple[str, ...]
    target: Any                        # what it became (a number: a specialization)
    reason: str | None                 # torch's reason for the first one ("solve"); None: not noted
    sloc: Any                          # torch's SLoc of the first one
    stack: traceback.StackSummary | None

    @property
    def constant(self) -> bool:
        return bool(getattr(self.target, "is_number", False))


class GuardFact(NamedTuple):
    expr: Any                          # the ShapeGuard's sympy expression
    sloc: Any                          # its SLoc
    stack: traceback.StackSummary | None


class ShapeRecord(NamedTuple):
    symbols: tuple[SymbolFact, ...]
    replacements: tuple[ReplacementFact, ...]
    guards: tuple[GuardFact, ...]
    noted: bool                        # dyndbg watched this ShapeEnv (reasons and stacks known)
    live: bool = False                 # read while dynamo still compiles

    @property
    def empty(self) -> bool:
        return not (self.symbols or self.replacements or self.guards)

    def stacks_for(self, comment: str) -> list[traceback.StackSummary | None]:
        """The user stacks of the guards and replacements whose SLoc torch wrote
        as `comment` (a shape guard part's comment is `str(SLoc)`)."""
        found = [g.stack for g in self.guards if _text(g.sloc) == comment]
        found += [r.stack for r in self.replacements if _text(r.sloc) == comment]
        return found


EMPTY = ShapeRecord((), (), (), False)


def _text(sloc: object) -> str:
    try:
        return str(sloc)
    except Exception:  # noqa: BLE001
        return ""


def read(output: object, live: bool = False) -> ShapeRecord | None:
    """The shape facts of the compile whose OutputGraph is `output`; None
    where it has no ShapeEnv dyndbg can read. At a compile's end both the
    engine's log and dyndbg.cache's read it: the second gets the first's."""
    if not live and _last and _last[0]() is output:
        return _last[1]
    env = getattr(output, "shape_env", None)
    if env is None:
        return None
    try:
        found = _read(env, live)
    except Exception:  # noqa: BLE001 - another torch: nothing known, never a failed compile
        return None
    if not live:
        try:
            _last[:] = [weakref.ref(output), found]
        except TypeError:           # an OutputGraph with no weak references: read again
            _last.clear()
    return found


_last: list = []      # [a weak reference to the last OutputGraph read, its record]


def _read(env: Any, live: bool) -> ShapeRecord:
    notes = watch.notes_of(env)
    made = notes.made if notes is not None else {}
    if not (env.var_to_sources or env.replacements or env.guards or made):
        return EMPTY._replace(live=live)
    contexts = {fake.source.name: fake.symbolic_context
                for fake in env.tracked_fakes or () if fake.symbolic_context is not None}
    dynamic = _assume_static_by_default() is False
    symbols = []
    for symbol, sources in env.var_to_sources.items():
        symbols.append(_fact(env, notes, symbol, sources, _symbolic(sources, contexts, dynamic)))
    for symbol in made:
        if symbol not in env.var_to_sources and _unbacked(symbol):
            symbols.append(_fact(env, notes, symbol, (), Symbolic.UNBACKED))
    replacements = []
    for symbol, target in env.replacements.items():
        sources = tuple(s.name for s in env.var_to_sources.get(symbol, ()))
        sloc = env.replacements_slocs.get(symbol)
        stack = next((env.specialization_stacks[s] for s in env.var_to_sources.get(symbol, ())
                      if s in env.specialization_stacks), None)
        if stack is None and notes is not None and sloc is not None:
            stack = notes.stack_of(sloc)
        replacements.append(ReplacementFact(
            str(symbol), sources, target, notes.reasons.get(symbol) if notes else None, sloc,
            stack))
    guards = tuple(GuardFact(g.expr, g.sloc, notes.stack_of(g.sloc) if notes else None)
                   for g in env.guards)
    return ShapeRecord(tuple(symbols), tuple(replacements), guards, notes is not None, live)


def _fact(env: Any, notes: watch.ShapeNotes | None, symbol: Any, sources: Any,
          symbolic: Symbolic) -> SymbolFact:
    ranges = env.var_to_range.get(symbol)
    made_at = notes.made.get(symbol) if notes is not None else None
    return SymbolFact(str(symbol), tuple(s.name for s in sources),
                      env.backed_var_to_val.get(symbol),
                      getattr(ranges, "lower", None), getattr(ranges, "upper", None), symbolic,
                      made_at, notes.stack_of(made_at) if notes is not None and made_at else None)


def _unbacked(symbol: object) -> bool:
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    return bool(free_unbacked_symbols(symbol))


def _assume_static_by_default() -> bool | None:
    try:
        import torch._dynamo
        return bool(torch._dynamo.config.assume_static_by_default)
    except Exception:  # noqa: BLE001
        return None


def _symbolic(sources: Any, contexts: dict, dynamic: bool) -> Symbolic:
    """Why torch made this backed symbol, from its first source: a tensor's
    size from that tensor's symbolic context (builder.py's `_automatic_dynamic`
    decides each dim's DimDynamic and constraint; versions.py says what each
    release records), an input int from the config."""
    source = sources[0] if sources else None
    prop = getattr(getattr(source, "prop", None), "name", None)
    if prop not in ("SIZE", "STRIDE"):
        if dynamic:
            return Symbolic.DYNAMIC
        return Symbolic.AUTOMATIC if _automatic_dynamic_shapes() else Symbolic.UNKNOWN
    context = contexts.get(getattr(getattr(source, "base", None), "name", None))
    index = getattr(source, "idx", None)
    if context is None or not isinstance(index, int):
        return Symbolic.UNKNOWN
    from dyndbg.dynamo import versions
    if prop == "SIZE":
        why = versions.why_dim_is_symbolic(context.dynamic_sizes[index],
                                           context.constraint_sizes[index])
    else:
        why = versions.why_dim_is_symbolic(context.dynamic_strides[index],
                                           context.constraint_strides[index])
    return Symbolic[why]


def _automatic_dynamic_shapes() -> bool:
    try:
        import torch._dynamo
        return bool(torch._dynamo.config.automatic_dynamic_shapes)
    except Exception:  # noqa: BLE001
        return False
