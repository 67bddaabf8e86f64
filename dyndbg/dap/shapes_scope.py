"""The editor's Shapes scope: `why shapes` as variables (pure: no I/O).

One variable a symbol, named by its symbol and source (`s77 L['x'].size()[0]`),
its value the one-line summary (its value at this call, its range, why it is
symbolic), its children the rest of what `why shapes` says of it; then the
shape guards torch added, and each specialization said plainly. The answer
is the prompt's own (ui/commands/compiled.py's shapes_answer, computed by
dynamo/shapes/story.py): nothing is worked out here."""
from __future__ import annotations

from typing import NamedTuple

from dyndbg.dynamo.shapes.story import ShapesAnswer, SymbolStory


class Said:
    """A line of text shown as a value as it is (no quotes, no children)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class SymbolRow(NamedTuple):
    """One symbol, as the Shapes scope shows it."""

    value: Said               # at this call
    compiled_for: Said
    range: Said               # as torch keeps it
    symbolic: Said            # why, in words
    made_at: Said             # the line torch made it at
    seen_before: Said         # automatic dynamic: the sizes older entries were compiled for
    replaced_by: Said         # what torch replaced it by, its reason and line
    specialized: Said         # said plainly, or ""

    def __repr__(self) -> str:
        became = f", replaced by {self.replaced_by.text.split(' ')[0]}" if self.replaced_by.text \
            else ""
        return f"{self.value.text}, range {self.range.text}, {self.symbolic.text}{became}"


def _row(story: SymbolStory) -> SymbolRow:
    replaced = ""
    if story.became:
        reason = f" ({story.reason})" if story.reason else ""
        replaced = f"{story.became}{reason} at {story.became_at}"
    value = story.value or ("computed in the graph" if not story.source else "not known here")
    return SymbolRow(Said(value), Said(story.compiled_for or "-"), Said(story.range),
                     Said(story.why), Said(str(story.made)), Said(", ".join(story.seen)),
                     Said(replaced), Said(story.plain))


def shape_items(shown: ShapesAnswer) -> list[tuple[str, object]]:
    """The Shapes scope's variables; [] where there is nothing to show."""
    if not shown.known or not (shown.symbols or shown.guards):
        return []
    items: list[tuple[str, object]] = [
        (f"{story.symbol} {story.source or '(unbacked)'}", _row(story)) for story in shown.symbols]
    if shown.guards:
        items.append(("shape guards", [Said(f"{guard.expr}  {guard.at}") for guard in shown.guards]))
    items += [(f"specialized {story.symbol}", Said(story.plain))
              for story in shown.symbols if story.plain]
    return items
