"""Edit dynamo's cache from a script or a notebook (the REPL's commands use this).

    import dyndbg.cache as dc
    dc.entries(f)                       # f's cache entries, lookup order
    dc.guards("0/0")                    # its guards, each with the line that installed it
    dc.why("0/1")                       # why dynamo compiled it (print() it)
    dc.shapes("0/1", x)                 # its symbols, ranges, specializations (print() it)
    dc.check("0/0", x, 5)               # would its guards pass for f(x, 5)?
    e = dc.patch("0/0", "insert", 39, "LOAD_CONST", 100)   # a constant: any object
    dc.run("0/0", x, 5)                 # its code, by hand, no guards
    dc.undo(e.number)                   # or dc.undo_all()
    dc.graph_capture(3); f(x)           # keep graph 3's next inputs, then
    dc.graph_bisect(3)                  # its first node whose compiled value differs

Entries are named by compile id (`0/1`, as TORCH_LOGS and `cache` name them) and
looked up afresh on every call: torch frees cache entries, so no handle is kept.
Every edit is numbered and undoable; see dyndbg/dynamo/edits/table.py for how.
From its import on, this module keeps torch's account of each compile (the
graph breaks, the failing guards that made a recompile, the guards' user
stacks: dynamo/compiles/log.py), which `guards` and `why` give; of a compile
made before, they say that it is not known.
"""
from __future__ import annotations

import inspect
import traceback
import types
from typing import Callable, NamedTuple

from dyndbg.dynamo import hooks
from dyndbg.dynamo.compiles import (BreakReason, GeneratedCode, RecompileReason, Registry,
                                    context as compile_context, why as _why)
from dyndbg.dynamo.edits import EDITS, Edit, patching
from dyndbg.dynamo.errors import CacheError
from dyndbg.dynamo.graphs import (Bisection, GraphRun, NodeValues, captured, graph_bisect,
                                  graph_capture, graph_run, graph_values)
from dyndbg.dynamo.guards import live_entries, tree as guard_walk
from dyndbg.dynamo.shapes.story import ShapesAnswer

__all__ = ["CacheError", "Edit", "EntryView", "EntryWhy", "GraphRun", "GuardView", "entries",
           "code", "guards", "why", "shapes", "ShapesAnswer", "check", "evict", "evict_all", "force", "add_guard",
           "drop_guard", "patch", "install", "run", "graph_run", "graph_capture", "captured",
           "graph_bisect", "graph_values", "Bisection", "NodeValues",
           "edits", "undo", "undo_all"]


class GuardView(NamedTuple):
    """One line of an entry's guard tree: a guard, or a source whose guards
    are the lines under it. str() gives the line as `guards` numbers it."""

    number: int | None          # as `drop_guard` takes it
    text: str
    depth: int
    origin: str | None          # "file.py:12", the line of yours that made dynamo install
    #                             it; "torch" for one torch installs itself; None on a source
    user_stack: traceback.StackSummary | None   # your frames then, innermost last (None:
    #                             torch's own, or a compile made before this module's import)

    def __str__(self) -> str:
        return f"{self.number}: {'  ' * (self.depth - 1)}{self.text}"


class EntryView(NamedTuple):
    compile_id: str
    function: str
    code: types.CodeType        # the transformed code
    guards: list[GuardView]     # numbered as `guard drop` takes them


class EntryWhy(NamedTuple):
    """Why dynamo compiled an entry, as torch accounted for it. str() gives
    it as the prompt's `why` does (without a call's values)."""

    compile_id: str
    function: str
    known: bool                 # False: compiled before this module's import
    first_compile: bool         # [i/0]; else a recompile, `because`
    called_from: str | None     # "file.py:12 in g": the call that made the compile
    because: tuple[RecompileReason, ...]   # each older entry's failing guard, then
    breaks: tuple[BreakReason, ...]        # the graph breaks this compile made
    lines: list[str]

    def __str__(self) -> str:
        return "\n".join(self.lines)


_LOG = hooks.compile_log()    # torch's account of each compile from now on


def _logged(code: types.CodeType) -> GeneratedCode | None:
    return _LOG.registry.by_id.get(id(code)) if _LOG is not None else None


def _original(function: Callable | types.CodeType | str) -> types.CodeType:
    if isinstance(function, types.CodeType):
        return function
    if isinstance(function, str):
        found = live_entries.functions_named(function)
        if not found:
            raise CacheError(f"no compiled function named {function!r}")
        return found[0]
    inner = inspect.unwrap(getattr(function, "_torchdynamo_orig_callable", function))
    inner = getattr(inner, "_torchdynamo_orig_callable", inner)
    code = getattr(inner, "__code__", None)
    if code is None:
        raise CacheError(f"{function!r} has no code object")
    return code


def _lines(entry: live_entries.LiveEntry) -> list[GuardView]:
    logged = _logged(entry.code)
    stacks = logged.guard_stacks if logged is not None else ()
    return [GuardView(line.number, line.text, line.depth, line.origin,
                      _stack(logged, line, stacks)) for line in guard_walk.guard_lines(entry.guard_manager)]


def _stack(logged: GeneratedCode | None, line: guard_walk.GuardLine,
           stacks: tuple) -> traceback.StackSummary | None:
    """The user stack torch recorded for a guard line (a shape guard's, as
    dyndbg noted it while torch made its SLoc)."""
    if line.guard is None or line.group:
        return None
    if line.shape is not None:
        if logged is None or logged.shapes is None or line.origin == "torch":
            return None
        found = [s for s in logged.shapes.stacks_for(line.shape.comment) if s]
        return found[0] if found and all(list(s) == list(found[0]) for s in found) else None
    return compile_context.stack_of(stacks, line.source, line.code or line.text, line.origin)


def entries(function: Callable | types.CodeType | str) -> list[EntryView]:
    """The function's live cache entries, in the order dynamo tries them."""
    original = _original(function)
    return [EntryView(e.compile_id, original.co_name, e.code, _lines(e))
            for e in live_entries.entries_of(original)]


def code(compile_id: str) -> types.CodeType:
    return live_entries.find(compile_id).code


def guards(compile_id: str) -> list[GuardView]:
    """The entry's guards, numbered as `drop_guard` takes them, each with the
    line of yours that installed it and your whole stack then."""
    return _lines(live_entries.find(compile_id))


def why(compile_id: str) -> EntryWhy:
    """Why dynamo compiled the entry: the first compile of its function (and
    the call that made it), or each older entry's failing guard; and the
    graph breaks its compile made (or, for a resume function, the one that
    made it)."""
    entry = live_entries.find(compile_id)
    logged = _logged(entry.code)
    if logged is None:
        return EntryWhy(compile_id, entry.original.co_name, False, compile_id.endswith("/0"),
                        None, (), (), [f"[{compile_id}] of {entry.original.co_name}: not known "
                                        "(compiled before dyndbg.cache was imported)"])
    try:
        frame_globals = live_entries.function_of(entry.original).__globals__
    except CacheError:
        frame_globals = {}
    return EntryWhy(compile_id, logged.function, True, compile_id.endswith("/0"),
                    logged.called_from, logged.because, logged.breaks,
                    _why.explain(logged, frame_globals, _LOG.registry if _LOG else Registry()))


def shapes(compile_id: str, *args: object, **kwargs: object) -> ShapesAnswer:
    """The entry's symbolic shapes, as `why shapes` gives them (print() it, or
    read `.symbols` and `.guards`): each symbol's source, range, why it is
    symbolic and its line, what torch replaced it by; the shape guards torch
    added. With a call's arguments, each source's value for that call."""
    entry = live_entries.find(compile_id)
    logged = _logged(entry.code)
    frame_locals = _call_locals(entry.original, args, kwargs) if args or kwargs else {}
    if logged is None:
        return _why.shapes_of(f"{entry.original.co_name} [{compile_id}]", None, frame_locals,
                              [], entry.original)
    return _why.shapes(logged, frame_locals)


def check(compile_id: str, *args: object, **kwargs: object) -> tuple[bool, str]:
    """(passed, torch's reason) of the entry's guards for a call with these arguments."""
    entry = live_entries.find(compile_id)
    return live_entries.check(entry.guard_manager, _call_locals(entry.original, args, kwargs))


def _call_locals(original: types.CodeType, args: tuple, kwargs: dict) -> dict:
    """What a call with these arguments binds at its start, as the guards read
    it (`L[...]`): the arguments, defaults applied, and the free variables."""
    function = live_entries.function_of(original, closure=True)
    try:
        # Its own parameters, not those of what a functools.wraps wrapper wraps.
        bound = inspect.signature(function, follow_wrapped=False).bind(*args, **kwargs)
    except TypeError as error:
        raise CacheError(f"arguments do not fit {function.__name__}: {error}") from None
    bound.apply_defaults()
    frame_locals = dict(bound.arguments)
    for name, cell in zip(original.co_freevars, function.__closure__ or ()):
        try:
            frame_locals[name] = cell.cell_contents
        except ValueError:                    # an empty cell
            pass
    return frame_locals


def evict(compile_id: str) -> Edit:
    return EDITS.evict(compile_id)


def evict_all(function: Callable | types.CodeType | str) -> Edit:
    return EDITS.evict_all(_original(function))


def force(compile_id: str, once: bool = False) -> Edit:
    return EDITS.force(compile_id, once)


def add_guard(compile_id: str, expression: str) -> Edit:
    return EDITS.add_guard(compile_id, expression)


def drop_guard(compile_id: str, number: int) -> Edit:
    return EDITS.drop_guard(compile_id, number)


def patch(compile_id: str, action: str, index: int | str, opname: str | None = None,
          arg: object = None) -> Edit:
    """`patch("0/0", "insert", 39, "LOAD_CONST", 100)`, as the REPL's patch command.
    A constant is the object itself (`torch.tensor([1.0])`, any object); a string
    ARG is read as the REPL reads it (`"'s'"` for the string s, `"+"`, `"x"`)."""
    return EDITS.patch(compile_id, patching.op_of(action, index, opname, arg))


def install(compile_id: str, new_code: types.CodeType) -> Edit:
    """The entry runs `new_code` (made from `code(compile_id)`, e.g. with torch's
    bytecode_transformation helpers) under its own guards."""
    return EDITS.install_code(compile_id, new_code)


def run(compile_id: str, *args: object, **kwargs: object) -> object:
    """The entry's code (as patched or installed) run by hand on these arguments: no
    guards, outside dynamo."""
    entry, code = EDITS.code_to_run(compile_id)
    return live_entries.run_code(entry.original, code, args, kwargs)


def edits() -> list[Edit]:
    return list(EDITS.edits)


def undo(number: int) -> list[Edit]:
    return EDITS.undo(number)


def undo_all() -> list[Edit]:
    return EDITS.undo_all()
