"""Why dynamo made the code at a stop: what every front end shows for `why`
and at graph-break stops (the prompt, the editor's console), computed once.

- Code whose compile broke its graph (it calls a resume function): torch's
  reason for the break (dynamo/compiles/breaks.py) and the user's line.
- A resume function: the break that made it, found as the generated code
  whose resume global holds this function (`__resume_at_30_2`).
- An entry `[i/j]` with j > 0: the guard that failed for each older entry
  when it was compiled, as torch recorded it (dynamo/compiles/recompiles.py),
  and for this call (guards.explain_entry).
- `[i/0]`: the function's first compile.
- A function this code called that dynamo skipped (dynamo/compiles/skips.py):
  torch's reason, and that it runs eagerly.
- `why guard N`: the user stack torch recorded when dynamo installed guard N
  of the `guards` listing (dynamo/compiles/context.py).
"""
from __future__ import annotations

import types
from traceback import StackSummary
from typing import TYPE_CHECKING, Callable, NamedTuple

from dyndbg.dynamo import versions
from dyndbg.dynamo.compiles.breaks import BreakReason
from dyndbg.dynamo.compiles.context import stack_of
from dyndbg.dynamo.guards.entries import entry_count
from dyndbg.dynamo.guards.tree import GuardScope
from dyndbg.dynamo.shapes import story as shape_story
from dyndbg.dynamo.shapes.record import ShapeRecord
from dyndbg.dynamo.names import RESUME_GLOBAL, resume_code

if TYPE_CHECKING:
    from dyndbg.dynamo.compiles.skips import FrameSkip
    from dyndbg.dynamo.guards import GuardLine
    from dyndbg.dynamo.guards import EntryExplanation
    from dyndbg.dynamo.compiles.registry import GeneratedCode, Registry
    from dyndbg.dynamo.shapes.parts import ShapePart


class Origin(NamedTuple):
    """What made a resume function: the code that calls it after its graph break."""

    caller: GeneratedCode
    reason: BreakReason | None     # torch's, or None: that compile ran before dyndbg attached


def made_by(entry: GeneratedCode, frame_globals: dict, registry: Registry) -> Origin | None:
    """For a resume function: the generated code that calls it after its
    graph break, and torch's reason for that break (None where torch gave
    none to dyndbg: the compile ran before dyndbg was attached)."""
    if not entry.is_resume:
        return None
    made = entry.source
    for other in reversed(registry.entries()):
        for name in other.code.co_names:
            if RESUME_GLOBAL.fullmatch(name):
                if resume_code(frame_globals.get(name)) is made:
                    return Origin(other, other.breaks[-1] if other.breaks else None)
    return None


def break_lines(reason: BreakReason, details: bool = False) -> list[str]:
    """The break in one or two lines (`details`: torch's explanation and hints,
    its documentation link, and the user's whole stack)."""
    lines = [reason.one_line()]
    if reason.source:
        lines.append(f"  {reason.source}")
    if details:
        lines += [f"  {line}" for line in reason.details]
        if reason.link:
            lines.append(f"  see {reason.link}")
        if len(reason.user_stack) > 1:
            lines.append("  user stack (innermost last):")
            lines += [f"    {frame.filename}:{frame.lineno} in {frame.name}"
                      for frame in reason.user_stack]
    return lines


def explain(entry: GeneratedCode, frame_globals: dict, registry: Registry,
            explained: EntryExplanation | None = None,
            show: Callable[[object], str] = repr) -> list[str]:
    """`why` at a stop in `entry`: why this code exists. `explained`: the
    older entries' failing guards for this call, with the values this call
    gave what they read (guards.explain_entry), where known; `show` writes a
    value as the front end shows values."""
    lines: list[str] = []
    if entry.is_resume:
        origin = made_by(entry, frame_globals, registry)
        if origin is None:
            lines.append(f"{entry.label()} is a resume function; the code that calls it "
                         "is not known here")
        else:
            lines.append(f"{entry.label()} is a resume function: {origin.caller.label()} calls "
                         "it after its graph break")
            lines += break_lines(origin.reason, details=True) if origin.reason is not None else \
                ["  (torch's reason is not known: that compile ran before dyndbg attached)"]
            for skip in [s for s in origin.caller.skipped if s.code is entry.source]:
                lines.append(f"dynamo skipped compiling it {skip.at}; {skip.runs}:")
                lines += skip_lines(skip)
    elif entry.compile_id is not None and not entry.compile_id.endswith("/0"):
        lines.append(f"{entry.label()} is a recompile of {entry.function}: for the call that "
                     "compiled it, each older entry failed a guard (torch's account):")
        lines += [f"  {reason.one_line()}" for reason in entry.because] or \
            ["  (not known: that compile ran before dyndbg attached)"]
        if explained is not None and explained.rejected:
            lines.append("for this call:")
            for compile_id, guard in explained.rejected:
                line = explained.origins.get(compile_id)
                lines.append(f"  [{compile_id}] guard failed: {guard}"
                             + (f"  ({line})" if line else ""))
                lines += [f"    {source} is {show(value)}"
                          for source, value in explained.values.get(compile_id, ())]
                lines += _shape_lines(entry, registry, compile_id, guard, line or "")
        else:
            for failed in entry.because:
                lines += _shape_lines(entry, registry, failed.older, failed.guard,
                                      "" if failed.where == "torch" else failed.where)
    elif entry.compile_id is not None:
        called = f", called from {entry.called_from}" if entry.called_from else ""
        lines.append(f"{entry.label()} is the first compile of {entry.function}{called}")
    if entry.breaks:
        lines.append(f"{entry.label()} ends its graph at a graph break and calls a resume "
                     "function for the rest:")
        for reason in entry.breaks:
            lines += ["  " + line for line in break_lines(reason, details=True)]
    for skip in entry.skipped:
        lines.append(f"{entry.label()} called {skip.function}, which dynamo skipped {skip.at}; "
                     f"{skip.runs}:")
        lines += skip_lines(skip)
    return lines


def _shape_lines(entry: GeneratedCode, registry: Registry, older: str, guard: str,
                 origin: str) -> list[str]:
    """Under an older entry's failing guard about a size: the specialization or
    shape guard that made it fail, and what that costs (shapes/story.py)."""
    older_entry = next((e for e in registry.entries() if e.original is entry.original
                        and e.compile_id == older and e.edited is None), None)
    count = entry_count(entry.original) if entry.original is not None else None
    return shape_story.recompile_lines(older, guard, origin,
                                       older_entry.shapes if older_entry else None, entry.shapes,
                                       entry.function, count, versions.recompile_limit())


def shapes(entry: GeneratedCode, frame_locals: dict,
           show: Callable[[object], str] = repr) -> shape_story.ShapesAnswer:
    """`why shapes` in `entry` (the compile's record, shapes/record.py), each
    source's value read from `frame_locals` (the call's inputs), the older
    entries' failing guards that made this compile, and the function's entries
    toward recompile_limit."""
    return shapes_of(entry.label(), entry.shapes, frame_locals,
                     [(r.older, r.guard) for r in entry.because], entry.original, show)


def shapes_of(label: str, record: ShapeRecord | None, frame_locals: dict,
              because: list[tuple[str, str]], original: types.CodeType | None,
              show: Callable[[object], str] = repr) -> shape_story.ShapesAnswer:
    """`why shapes` for a record (a finished compile's, or one read live while
    dynamo compiles): the sources read from `frame_locals`; `original`, the
    user's code, to count its cache entries."""
    count = entry_count(original) if original is not None and record is not None \
        and not record.empty else None
    return shape_story.answer(label, record, GuardScope(None, frame_locals).value, because,
                              count, versions.recompile_limit(), show)


def skip_lines(skip: FrameSkip) -> list[str]:
    """Torch's reason for a frame it skipped, its line, explanations and hints."""
    return [f"  torch's reason: {skip.cause}"] + [f"  {line}" for line in skip.reason.details]


def guard_story(entry: GeneratedCode, line: GuardLine) -> list[str]:
    """`why guard N`: the guard, and the user's frames (innermost last) when
    dynamo installed it, as torch recorded them for `entry`'s compile."""
    lines = [f"guard {line.number}: {line.code or line.text}"]
    if line.guard is None:
        return [f"line {line.number} is a source ({line.source or line.text}), not a guard: "
                "its guards are the numbered lines under it"]
    if line.group:
        return [f"line {line.number} is the lambda torch checks the shape guards with: "
                "each is a numbered line under it"]
    if line.shape is not None:
        return lines + shape_guard_story(entry.shapes, line.shape)
    origin = line.origin
    if origin == "torch":
        return lines + ["  torch installs it itself (no line of yours made it: grad mode, "
                        "global state, shapes or its own files)"]
    stack = stack_of(entry.guard_stacks, line.source, line.code or line.text, origin)
    if stack is None:
        why_not = "that compile ran before dyndbg attached" if not entry.guard_stacks else \
            "torch recorded no single stack for it"
        return lines + [f"  installed at {origin}; the whole stack is not known ({why_not})"]
    return lines + stack_lines("installed while dynamo traced", stack)


def stack_lines(heading: str, stack: StackSummary) -> list[str]:
    """A user stack, innermost last, each frame with its line."""
    lines = [f"  {heading} (innermost last):"]
    for frame in stack:
        lines.append(f"    {frame.filename}:{frame.lineno} in {frame.name}")
        if frame.line:
            lines.append(f"      {frame.line.strip()}")
    return lines


def shape_guard_story(record: ShapeRecord | None, part: ShapePart) -> list[str]:
    """`why guard N` on a shape guard: where torch added it, from its SLoc (one
    frame) and the whole user stack dyndbg noted when torch made that SLoc."""
    user = part.sloc.user
    if part.origin == "torch":
        said = f"  torch's own: {part.note}" if part.note else "  torch's own"
        if user is not None:
            said += f" (the line torch shows is the value's first use: {user.place})"
        return [said]
    assert user is not None
    stacks = record.stacks_for(part.comment) if record is not None else []
    known = [stack for stack in stacks if stack]
    if known and all(_frames(stack) == _frames(known[0]) for stack in known):
        return stack_lines("a shape guard torch added while dynamo traced", known[0])
    why_not = "that compile ran before dyndbg attached" if record is None or not record.noted \
        else "torch made several with this line and different stacks"
    return [f"  a shape guard torch added at {user.file}:{user.line} in {user.function}:",
            f"      {user.text}" if user.text else "      (no source line)",
            f"  (torch keeps only this frame of its stack; the whole stack is not known: "
            f"{why_not})"]


def _frames(stack: StackSummary) -> list[tuple[str, int | None]]:
    return [(frame.filename, frame.lineno) for frame in stack]
