"""What `why shapes` says of a compile's symbols: computed once for every
front end (the prompt, the editor's Shapes scope and console, dyndbg.cache).

For each symbol of the record (shapes/record.py): its source, its value at
this call, the value it was compiled for, its range as torch keeps it, why it
is symbolic with the line torch made it at (and, for automatic dynamic, the
sizes older entries were compiled for, from torch's own failing guards that
made this recompile), and what torch replaced it by, with torch's reason and
line. A dim made dynamic and then specialized to a constant is said plainly,
with what that costs: each new size compiles again, up to recompile_limit.
Then the shape guards torch added, in its own symbolic form (as TORCH_LOGS
prints `eval Ne(s77, 8) [guard added]`), each with its line.
"""
from __future__ import annotations

import io
import re
import tokenize
from typing import Callable, NamedTuple

from dyndbg.dynamo.shapes.parts import UserFrame, user_frame
from dyndbg.dynamo.shapes.record import ReplacementFact, ShapeRecord, SymbolFact, Symbolic

# Torch's words for a failing tensor check (guards.cpp), and an int's EQUALS_MATCH
# as its recompile reasons write it (L['x'] written `x`).
_SIZE_MISMATCH = re.compile(r"tensor '(?P<name>.+?)' size mismatch at index (?P<dim>\d+)\. "
                            r"expected (?P<expected>-?\d+), actual (?P<actual>-?\d+)")
_EQUALS = re.compile(r"^(?P<name>\S+) == (?P<value>-?[\d.]+)$")
_SIZE_SOURCE = re.compile(r"^(?P<base>.+)\.size\(\)\[(?P<dim>\d+)\]$")
# torch's functions that make unbacked symbols, and what a program calls to reach them
_MAKERS = {"local_scalar_dense": "a tensor's value read as a number (.item(), .tolist(), int())",
           "nonzero": "the size of nonzero()'s result"}


class Place(NamedTuple):
    """A user line torch recorded: `shapes.py:13` and its source text."""

    where: str           # "shapes.py:13", "" where torch recorded none
    text: str            # the line's code, its comment left out

    def __str__(self) -> str:
        return f"{self.where}  {self.text}".rstrip() if self.where else "(no line recorded)"


class SymbolStory(NamedTuple):
    symbol: str                  # "s77", "u0"
    source: str                  # "L['x'].size()[0]"; "" for an unbacked symbol
    also: tuple[str, ...]        # its other sources (sizes torch found equal: duck sizing)
    value: str                   # at this call ("" where not known: no call, an unbacked one)
    compiled_for: str            # the value torch compiled for ("" unbacked)
    range: str                   # torch's var_to_range, "[2, int_oo]"
    symbolic: Symbolic
    why: str                     # in words
    made: Place                  # where torch made it
    seen: tuple[str, ...]        # automatic dynamic: "8 ([0/0])", from torch's failing guards
    became: str                  # what torch replaced it by ("" none)
    reason: str                  # torch's reason ("range_refined_to_singleton"), "" not noted
    became_at: Place | None
    plain: str                   # a dynamic dim specialized again, in one sentence


class GuardStory(NamedTuple):
    expr: str                    # torch's symbolic form, `Ne(s77, 8)`
    at: Place


class ShapesAnswer(NamedTuple):
    label: str                   # "grow [0/2]"
    known: bool                  # False: no record (the compile ran before dyndbg attached)
    symbols: tuple[SymbolStory, ...]
    guards: tuple[GuardStory, ...]
    live: bool                   # while dynamo compiles: made so far

    def lines(self) -> list[str]:
        return answer_lines(self)

    def __str__(self) -> str:
        return "\n".join(self.lines())


def place(sloc: object) -> Place:
    """A SLoc's user frame (torch's `maybe_user_loc`), as a Place."""
    frame = user_frame(str(getattr(sloc, "maybe_user_loc", None) or "")) if sloc else None
    return _place(frame)


def _place(frame: UserFrame | None) -> Place:
    if frame is None:
        return Place("", "")
    return Place(frame.place, code_of(frame.text))


def code_of(text: str) -> str:
    """A source line without its comment (as read by Python's tokenizer)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text.strip() + "\n").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text.strip()
    comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
    return text[:comment.start[1]].strip() if comment is not None else text.strip()


def answer(label: str, record: ShapeRecord | None, value_of: Callable[[str], tuple[bool, object]],
           because: list[tuple[str, str]], entries: int | None = None,
           limit: int | None = None, show: Callable[[object], str] = repr) -> ShapesAnswer:
    """`why shapes` for the entry `label` whose compile left `record`.
    value_of(source): (evaluated, value) of a source at this call; because:
    (older compile id, torch's failing guard) that made this compile;
    entries and limit: the function's cache entries and recompile_limit."""
    if record is None:
        return ShapesAnswer(label, False, (), (), False)
    replaced = {r.name: r for r in record.replacements}
    stories = tuple(_story(fact, replaced.get(fact.name), value_of, because, entries, limit, show)
                    for fact in record.symbols)
    guards = tuple(GuardStory(str(g.expr), place(g.sloc)) for g in record.guards)
    return ShapesAnswer(label, True, stories, guards, record.live)


def _story(fact: SymbolFact, replacement: ReplacementFact | None,
           value_of: Callable[[str], tuple[bool, object]], because: list[tuple[str, str]],
           entries: int | None, limit: int | None, show: Callable[[object], str]) -> SymbolStory:
    source = fact.sources[0] if fact.sources else ""
    now = ""
    if source:
        got, value = value_of(source)
        now = show(value) if got else ""
    made = place(fact.made_at)
    became = reason = plain = ""
    became_at = None
    if replacement is not None:
        became, reason = str(replacement.target), replacement.reason or ""
        became_at = place(replacement.sloc)
        if replacement.constant and source:
            plain = _plainly(source, became, became_at, entries, limit)
    return SymbolStory(fact.name, source, tuple(fact.sources[1:]), now,
                       "" if fact.hint is None else str(fact.hint),
                       f"[{fact.lower}, {fact.upper}]", fact.symbolic, _why(fact),
                       made, _seen(fact, source, because), became, reason, became_at, plain)


def _why(fact: SymbolFact) -> str:
    if fact.symbolic is Symbolic.UNBACKED:
        maker = str(getattr(getattr(fact.made_at, "framework_loc", None), "name", "") or "")
        said = _MAKERS.get(maker)
        return f"unbacked: {said}" if said else \
            "unbacked: a value computed in the graph" + (f" (torch's {maker})" if maker else "")
    return {Symbolic.DYNAMIC: "dynamic=True (assume_static_by_default=False)",
            Symbolic.UNKNOWN: "symbolic (torch recorded no reason dyndbg reads)"}.get(
        fact.symbolic, fact.symbolic.value)


def _seen(fact: SymbolFact, source: str, because: list[tuple[str, str]]) -> tuple[str, ...]:
    """The values older entries were compiled for where this compile's reasons
    (torch's failing guards) name the source: what made it dynamic."""
    if fact.symbolic is not Symbolic.AUTOMATIC or not source:
        return ()
    sized = _SIZE_SOURCE.match(source)
    seen = []
    for older, guard in because:
        found = _SIZE_MISMATCH.search(guard)
        if sized and found and int(found.group("dim")) == int(sized.group("dim")) and \
                _same(found.group("name"), sized.group("base")):
            seen.append(f"{found.group('expected')} ([{older}])")
            continue
        equal = _EQUALS.match(guard.strip())
        if not sized and equal and _same(equal.group("name"), source):
            seen.append(f"{equal.group('value')} ([{older}])")
    return tuple(seen)


def _same(name: str, source: str) -> bool:
    """`x` (as torch's recompile reasons write L['x']) or `L['x']` names `source`."""
    return _as_source(name) == source


def _as_source(name: str) -> str:
    """A source as torch names it in a failing guard: `L['x']`, or `x` where its
    recompile reasons write a frame local plainly."""
    return name if name.startswith(("L[", "G[")) else f"L['{name}']"


def _plainly(source: str, value: str, at: Place, entries: int | None, limit: int | None) -> str:
    sized = _SIZE_SOURCE.match(source)
    what = f"dim {sized.group('dim')} of {sized.group('base')}" if sized else source
    by = f" by `{at.text}` ({at.where})" if at.where else ""
    again = "each new size compiles again" if sized else "each new value compiles again"
    return f"{what} is specialized to {value}{by}: {again}{_toward_limit(entries, limit)}"


def _toward_limit(entries: int | None, limit: int | None) -> str:
    if entries is None:
        return ""
    held = f"{entries} cache entr{'y' if entries == 1 else 'ies'}"
    return f" ({held} now; dynamo stops compiling it at config.recompile_limit, {limit})" \
        if limit is not None else f" ({held} now)"


def answer_lines(shown: ShapesAnswer) -> list[str]:
    if not shown.known:
        return [f"{shown.label}: its shapes are not known (its compile ran before dyndbg "
                "attached); `guards` lists its shape guards with their lines"]
    when = "so far in this compile" if shown.live else "when its compile ended"
    if not shown.symbols and not shown.guards:
        if shown.live:
            return [f"{shown.label}: no symbolic shapes so far in this compile"]
        return [f"{shown.label}: no symbolic shapes: every size was static ({when}); "
                "`guards` lists the sizes each tensor is checked for"]
    count = len(shown.symbols)
    lines = [f"{shown.label}: {count} symbol{'s' if count != 1 else ''}, as torch's ShapeEnv "
             f"held them {when}:"]
    for story in shown.symbols:
        lines += _symbol_lines(story, shown.live)
    if shown.guards:
        lines.append(f"  shape guards torch added so far ({len(shown.guards)}):" if shown.live
                     else f"  shape guards torch added ({len(shown.guards)}; `guards` checks "
                     "them at this call):")
        lines += [f"    {guard.expr}  {guard.at}" for guard in shown.guards]
    lines += [f"  {story.plain}" for story in shown.symbols if story.plain]
    return lines


def _symbol_lines(story: SymbolStory, live: bool) -> list[str]:
    if story.source:
        now = f" = {story.value} at this call" if story.value else ""
        head = f"  {story.symbol}  {story.source}{now} " \
               f"({'being compiled' if live else 'compiled'} for {story.compiled_for}), " \
               f"range {story.range}"
    else:
        head = f"  {story.symbol}  not an input: its value is computed in the graph, " \
               f"range {story.range}"
    lines = [head]
    if story.also:
        lines.append(f"    also {', '.join(story.also)} (torch found them equal: one symbol)")
    lines.append(f"    {story.why}, made at {story.made}")
    if story.seen:
        lines.append(f"      sizes older entries were compiled for: {', '.join(story.seen)}")
    if story.became:
        reason = f" ({story.reason})" if story.reason else ""
        lines.append(f"    replaced by {story.became}{reason} at {story.became_at}")
    return lines


# -- a recompile whose failing guard was about a size ---------------------------------------

def recompile_lines(older: str, guard: str, origin: str, older_record: ShapeRecord | None,
                    record: ShapeRecord | None, function: str, entries: int | None,
                    limit: int | None) -> list[str]:
    """What `why` adds under an older entry's failing guard (torch's text)
    when it is about a size: the specialization in that entry that made the
    failing check (its line and torch's reason), or the shape guard's line;
    that new values keep compiling; the function's entries toward the limit."""
    toward = _entries_toward(function, entries, limit)
    found = _SIZE_MISMATCH.search(guard)
    source = f"{_as_source(found.group('name'))}.size()[{found.group('dim')}]" if found else \
        _equals_source(guard)
    if source is not None:
        spec = _specialized(older_record, source)
        if spec is not None:
            at = place(spec.sloc)
            reason = f", {spec.reason}" if spec.reason else ""
            sized = _SIZE_SOURCE.match(source)
            what = f"dim {sized.group('dim')} of {sized.group('base')}" if sized else source
            by = f" by `{at.text}` ({at.where}{reason})" if at.where else f"{reason}"
            return [f"    [{older}] had specialized {what} to {spec.target}{by}: each new "
                    f"{'size' if sized else 'value'} compiles again; {toward}"]
        now = _symbol_for(record, source)
        if now is not None and now.symbolic is Symbolic.AUTOMATIC:
            sized = _SIZE_SOURCE.match(source)
            what = f"a static dim {sized.group('dim')} of {sized.group('base')}" if sized \
                else f"{source} as a constant"
            return [f"    [{older}] was compiled for {what}; this compile made it "
                    f"symbolic ({now.name}: automatic dynamic)"]
    if origin and _is_shape_code(guard):
        # a size equal to a number holds for that size alone; any other condition
        # (`(x % 2) == 0`, `(x // 2) == 3`) for more than one
        pinned = _PINNED.match(guard.strip()) is not None
        again = "it holds for one value only: each new value compiles again" if pinned else \
            "sizes that fail it compile again"
        return [f"    a shape guard torch added at {origin}: {again}; {toward}"]
    return []


_PINNED = re.compile(r"^[LG]\[[^\]]+\](?:\[[^\]]+\]|\.\w+)*\.(?:size|stride)\(\)\[\d+\] == -?\d+$")


def _entries_toward(function: str, entries: int | None, limit: int | None) -> str:
    if entries is None:
        return "(the cache entries are not known here)"
    held = f"{function} has {entries} cache entr{'y' if entries == 1 else 'ies'}"
    return f"{held} toward config.recompile_limit ({limit})" if limit is not None else held


def _equals_source(guard: str) -> str | None:
    equal = _EQUALS.match(guard.strip())
    return None if equal is None else _as_source(equal.group("name"))



def _specialized(record: ShapeRecord | None, source: str) -> ReplacementFact | None:
    if record is None:
        return None
    return next((r for r in record.replacements if r.constant and source in r.sources), None)


def _symbol_for(record: ShapeRecord | None, source: str) -> SymbolFact | None:
    if record is None:
        return None
    return next((s for s in record.symbols if source in s.sources), None)


def _is_shape_code(code: str) -> bool:
    return ".size()[" in code or ".stride()[" in code
