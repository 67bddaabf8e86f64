"""`graph [N | NAME] [--traced | --compiled] [--output-code]`: which graph is
asked for and the header saying which of its two FX graphs is listed."""
from __future__ import annotations

from typing import NamedTuple, Sequence

from dyndbg.dynamo.graphs import GraphViews, View
from dyndbg.dynamo.graphs import GraphInfo
from dyndbg.ui.text.parsing import CommandError

USAGE = "usage: graph [N | NAME] [--traced | --compiled] [--output-code]"
_VIEWS = {"--traced": View.TRACED, "--compiled": View.COMPILED}


class GraphRequest(NamedTuple):
    spec: str                 # N or NAME; "" for the graph called here
    view: View | None         # None: the default (GraphViews.shown)
    output_code: bool


def parse_request(words: Sequence[str]) -> GraphRequest:
    """The graph, the view and --output-code, in any order."""
    views = [_VIEWS[w] for w in words if w in _VIEWS]
    rest = [w for w in words if w not in _VIEWS and w != "--output-code"]
    if len(views) > 1 or len(rest) > 1 or any(w.startswith("--") for w in rest):
        raise CommandError(USAGE)
    return GraphRequest(rest[0] if rest else "", views[0] if views else None,
                        "--output-code" in words)


def listing(views: GraphViews, view: View | None) -> tuple[list[str], GraphInfo]:
    """The header lines, and the graph to list after them."""
    shown = views.shown(view)
    info = views.traced if shown is View.TRACED else views.compiled
    number = views.compiled.number
    if info is None:
        raise CommandError(f"graph {number}: no copy of dynamo's graph as traced was kept "
                           "(it was compiled before dyndbg kept copies); "
                           f"graph {number} --compiled lists it as the backend left it")
    if shown is View.COMPILED and info.note:
        raise CommandError(f"graph {number} as the backend left it is not at hand: {info.note}")
    inputs, outputs = len(info.placeholders), len(info.outputs)
    lines = [f"graph {number} ({views.name}), backend {views.backend or 'unknown'}, "
             f"{inputs} input{'s' if inputs != 1 else ''}, "
             f"{outputs} output{'s' if outputs != 1 else ''}",
             _which(views, shown, number)]
    if info.note:
        lines.append(f"  ({info.note})")
    return lines, info


def _which(views: GraphViews, shown: View, number: int) -> str:
    """The line saying which of the two graphs is listed, and how it compares."""
    changed = views.changed
    if shown is View.TRACED:
        if changed is None:
            return (f"as dynamo traced it (graph {number} as the backend left it is not "
                    f"at hand: {views.compiled.note})")
        if changed:
            return (f"as dynamo traced it, before its backend; the graph the backend left "
                    f"differs (graph {number} --compiled lists it)")
        return "as dynamo traced it; the backend left it unchanged"
    if changed is None:
        return ("as the backend left it (no copy of dynamo's graph as traced was kept: "
                "it was compiled before dyndbg kept copies)")
    if changed:
        return (f"as the backend left it, which differs from dynamo's graph as traced "
                f"(graph {number} lists that)")
    return "as the backend left it, unchanged from dynamo's graph as traced"
