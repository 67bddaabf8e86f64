"""The two FX graphs there are of one compiled graph: dynamo's graph as traced
(the copy graphs/copies.py keeps before the backend sees it) and dynamo's
GraphModule as the backend left it (reached from the compiled callable,
graphs/lookup.py), which a backend may have rewritten in place; and the name of the
backend that compiled it."""
from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from dyndbg.dynamo.graphs import copies as graph_copies, lookup as graphs
from dyndbg.dynamo.guards import entries as guards, live_entries
from dyndbg.dynamo.backends import backend_name
from dyndbg.dynamo.graphs.lookup import GraphInfo


class View(Enum):
    """Which of a graph's two FX graphs is shown."""

    TRACED = "traced"          # dynamo's graph as traced, before the backend saw it
    COMPILED = "compiled"      # dynamo's GraphModule as the backend left it


class GraphViews(NamedTuple):
    """Graph `name` as traced and as its backend left it, and that backend's name."""

    name: str
    backend: str | None        # backends.backend_name, as `cache` names it; None: not known
    traced: GraphInfo | None   # None: no copy was kept (compiled before dyndbg kept copies)
    compiled: GraphInfo        # its `note` says so where the GraphModule is not reachable

    @property
    def changed(self) -> bool | None:
        """Whether the two differ (their listings do), whoever changed it: the copy
        is made as dynamo's call of its backend begins, and torch 2.13 may still
        inline a single-use invoke_subgraph before the backend sees it. None
        where one of the two is not at hand."""
        if self.traced is None or self.compiled.note is not None:
            return None
        return self.traced.code != self.compiled.code

    def shown(self, view: View | None) -> View:
        """The view asked for; by default the traced one, where a copy was kept."""
        if view is not None:
            return view
        return View.TRACED if self.traced is not None else View.COMPILED


def graph_views(name: str, value: object) -> GraphViews | None:
    """Graph `name` (its `__compiled_fn_*` global; value: that global's value) as
    traced and as compiled; None if it is not a compiled graph."""
    compiled = graphs.graph_info(name, value)
    if compiled is None:
        return None
    kept = graph_copies.kept(name)
    traced = graphs.describe(name, kept.graph_module) if kept is not None else None
    return GraphViews(name, graph_backend(name), traced, compiled)


def graph_backend(name: str) -> str | None:
    """The name of the backend that compiled graph `name` (its `__compiled_fn_*`
    global): the one dynamo called for it (kept with its copy, graphs/copies.py),
    else that of a live cache entry whose code calls it; None if neither is known."""
    kept = graph_copies.kept(name)
    if kept is not None:
        return backend_name(kept.backend)
    try:
        for original in live_entries.originals():
            for entry in guards.cache_entries(original):
                if name in entry.graphs:
                    return entry.backend
    except Exception:  # noqa: BLE001 - a torch change: the backend is said to be unknown
        pass
    return None
