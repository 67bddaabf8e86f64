"""What torch's ShapeEnv does not keep, noted as dynamo compiles.

A compile's ShapeEnv (torch/fx/experimental/symbolic_shapes.py) keeps, to
its end, each shape guard with its SLoc (the innermost user frame, as text),
each symbol's sources and range, each replacement with the SLoc of the first
one, and a constant specialization's whole user stack. It does not keep:

- the reason torch gives a replacement (`_set_replacement(a, tgt, msg)`:
  "range_refined_to_singleton", "solve", ...), which only its log prints
  (`set_replacement s77 = 6 (range_refined_to_singleton)`);
- the SLoc a symbol was made at (`create_symbol`, `create_unbacked_symint`
  put it in `var_to_range_sloc`, which a later range refinement overwrites);
- the user's whole stack when an SLoc was made (an SLoc keeps one frame).

So dyndbg wraps these ShapeEnv methods (`_get_sloc`, `_set_replacement`,
`create_symbol`, `create_unbacked_symint`/`symfloat`/`symbool`; the same on
torch 2.13-2.15): each wrapper calls torch's own with the same arguments,
returns what it returns, and then notes what it saw, catching everything.
An SLoc's framework part is the first frame outside torch's files
(`ShapeEnv._get_user_frame`, against `uninteresting_files()`): this file is
added to that set, so a wrapper's frame is skipped as torch's own are, and
every SLoc, guard text and log line stays what it is without dyndbg. The
notes are kept by ShapeEnv, weakly: they die with it, and each compile's
are read as it ends (shapes/record.py). The wrappers are put in once a
process (hooks.watch_compiles, by the engine or dyndbg.cache) and stay, as
the graph copies do: a detached dyndbg leaves them noting, at a cost only
while dynamo compiles (a dictionary entry and torch's user stack an SLoc).
"""
from __future__ import annotations

import functools
import traceback
import weakref
from typing import Any, Callable

_METHODS = ("_get_sloc", "_set_replacement", "create_symbol", "create_unbacked_symint",
            "create_unbacked_symfloat", "create_unbacked_symbool")
_ORIGINAL = "_dyndbg_wraps"      # on a wrapper: torch's own method


class ShapeNotes:
    """What one ShapeEnv did that it does not keep."""

    def __init__(self) -> None:
        # id(SLoc) -> (the SLoc, the user's stack when torch made it): the SLoc is
        # held so that the id stays its own.
        self.stacks: dict[int, tuple[object, traceback.StackSummary]] = {}
        self.reasons: dict[object, str] = {}      # symbol -> its first replacement's reason
        self.made: dict[object, object] = {}      # symbol -> the SLoc torch made it at

    def stack_of(self, sloc: object) -> traceback.StackSummary | None:
        found = self.stacks.get(id(sloc))
        return found[1] if found is not None and found[0] is sloc else None


_NOTES: weakref.WeakKeyDictionary[Any, ShapeNotes] = weakref.WeakKeyDictionary()
_installed: list[bool] = []


def notes_of(shape_env: object) -> ShapeNotes | None:
    """The notes on this ShapeEnv, if dyndbg watched it."""
    try:
        return _NOTES.get(shape_env)
    except TypeError:
        return None


def _notes(shape_env: object) -> ShapeNotes:
    notes = _NOTES.get(shape_env)
    if notes is None:
        notes = _NOTES[shape_env] = ShapeNotes()
    return notes


def install() -> bool:
    """Wrap the ShapeEnv's methods, once a process; False where torch lacks them."""
    if _installed:
        return _installed[0]
    try:
        from torch.fx.experimental import symbolic_shapes
        cls = symbolic_shapes.ShapeEnv
        originals = {name: vars(cls)[name] for name in _METHODS}
        hidden = symbolic_shapes.uninteresting_files
    except Exception:  # noqa: BLE001 - another torch: nothing is noted
        _installed.append(False)
        return False
    for name, original in originals.items():
        if getattr(original, _ORIGINAL, None) is None:
            setattr(cls, name, _wrapper(name, original, hidden))
    _installed.append(True)

    def unwrap() -> None:
        for name, original in originals.items():
            setattr(cls, name, original)
    _unwrap.append(unwrap)
    return True


_unwrap: list[Callable[[], None]] = []


def _wrapper(name: str, original: Callable[..., Any],
             hidden: Callable[[], set[str]]) -> Callable[..., Any]:
    note = _NOTERS[name]

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _hidden:
            _hide(hidden)
        before = _before(name, self, args, kwargs)
        result = original(self, *args, **kwargs)
        _noted(note, self, result, before, args)
        return result
    setattr(wrapper, _ORIGINAL, original)
    return wrapper


_hidden: list[bool] = []


def _hide(hidden: Callable[[], set[str]]) -> None:
    """Put this file among torch's uninteresting files, at the first call of a
    wrapper (torch fills that set, importing what it names, on its own first
    use, which is now): its frames are then skipped as torch's are."""
    _hidden.append(True)
    try:
        hidden().add(_noted.__code__.co_filename)
    except Exception:  # noqa: BLE001 - its frames would show in torch's SLocs: unwrap
        for unwrap in _unwrap:
            unwrap()
        _installed[:] = [False]


def _before(name: str, shape_env: Any, args: tuple, kwargs: dict) -> bool:
    """For a replacement: whether the symbol had none yet (torch keeps the first's SLoc)."""
    if name != "_set_replacement":
        return False
    try:
        symbol = args[0] if args else kwargs.get("a")
        return symbol not in shape_env.replacements_slocs
    except Exception:  # noqa: BLE001
        return False


def _noted(note: Callable[[Any, Any, bool, tuple], None], shape_env: Any, result: Any,
           before: bool, args: tuple) -> None:
    try:
        note(shape_env, result, before, args)
    except Exception:  # noqa: BLE001 - never fail torch's compile
        pass


def _user_stack() -> traceback.StackSummary:
    from torch._guards import TracingContext
    return TracingContext.extract_stack()


def _note_sloc(shape_env: Any, sloc: Any, _before: bool, _args: tuple) -> None:
    _notes(shape_env).stacks[id(sloc)] = (sloc, _user_stack())


def _note_replacement(shape_env: Any, _result: Any, first: bool, args: tuple) -> None:
    if first and len(args) >= 3 and args[0] in shape_env.replacements_slocs:
        _notes(shape_env).reasons[args[0]] = str(args[2])


def _note_made(shape_env: Any, result: Any, _before: bool, _args: tuple) -> None:
    symbol = getattr(getattr(result, "node", None), "expr", result)   # a SymInt's, or a sympy symbol
    ranges = shape_env.var_to_range_sloc.get(symbol) if getattr(symbol, "is_Symbol", False) \
        else None
    if ranges is not None:
        _notes(shape_env).made.setdefault(symbol, ranges.upper)


_NOTERS: dict[str, Callable[[Any, Any, bool, tuple], None]] = {
    "_get_sloc": _note_sloc, "_set_replacement": _note_replacement,
    "create_symbol": _note_made, "create_unbacked_symint": _note_made,
    "create_unbacked_symfloat": _note_made, "create_unbacked_symbool": _note_made,
}


def watching() -> bool:
    """Whether the wrappers are in place (install() ran and torch had the methods)."""
    return bool(_installed and _installed[0])

