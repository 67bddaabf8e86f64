"""Dynamo's FX graph as dynamo traced it, kept before the backend sees it.

Backends may rewrite the graph they are given in place (inductor's pre-grad
passes do; so may a user's backend), and dynamo's GraphModule, reached later
from the compiled callable (graphs/lookup.py), is then the rewritten one: run eagerly,
it is no reference for the compiled result. So a copy is kept at the one place
every backend is called from, `OutputGraph.call_user_compiler` (the same
method on torch 2.13-2.15, called once per graph with dynamo's GraphModule
and its example inputs): dyndbg wraps that method, copies the graph (nodes,
names and each node's meta dict: `Graph.graph_copy`; attributes and
submodules are shared with dynamo's GraphModule, not copied), then calls
torch's own with the very same arguments and returns what it returns.
Nothing dynamo compiles changes: the backend gets dynamo's graph object
itself, not the copy.

Each copy is kept with the backend dynamo called (`OutputGraph.compiler_fn`),
under the graph's global name (`__compiled_fn_N_<uuid>`, `gm.meta["backend_id"]`),
for `graph run` and `graph bisect`. A graph compiled before `keep()` was
first called has no copy: callers say so.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

_lock = threading.Lock()
_kept: dict[str, KeptGraph] = {}
_original: Callable[..., Any] | None = None     # torch's call_user_compiler, once wrapped
_METHOD = "call_user_compiler"


class KeptGraph:
    """A graph as dynamo handed it to its backend. The copy's GraphModule is
    made on first use (its code generation costs more than the copy itself)."""

    def __init__(self, name: str, graph: Any, attributes: dict, meta: dict,
                 backend: Callable[..., Any], compile_id: str | None) -> None:
        self.name = name                  # its global, `__compiled_fn_3_<uuid>`
        self.graph = graph                # a torch.fx.Graph: the copy, never compiled
        self.attributes = attributes      # what its get_attr / call_module nodes name
        self.meta = meta
        self.backend = backend            # what dynamo called to compile it
        self.compile_id = compile_id
        self._module: Any = None

    @property
    def graph_module(self) -> Any:
        """A GraphModule running the copy (one, made once: never give it to a backend,
        which may rewrite it: `private_module` makes one of its own)."""
        if self._module is None:
            import torch.fx
            self._module = torch.fx.GraphModule(self.attributes, self.graph)
            self._module.meta = dict(self.meta)
        return self._module

    def private_module(self) -> Any:
        """A GraphModule of its own to run or to give a backend: a fresh copy of the
        graph, and of the tensors and submodules it names (a run that updates a
        buffer in place, or a backend that rewrites the graph, touches only it)."""
        import copy as _copy
        import torch.fx
        graph, attributes = copy_graph(self.graph_module)
        module = torch.fx.GraphModule(_copy.deepcopy(attributes) if attributes else attributes,
                                      graph)
        module.meta = dict(self.meta)
        return module


def keep() -> None:
    """From now on, keep a copy of each graph dynamo compiles (idempotent)."""
    global _original
    with _lock:
        if _original is not None:
            return
        from torch._dynamo.output_graph import OutputGraph
        original = getattr(OutputGraph, _METHOD)

        def call_user_compiler(self: Any, gm: Any, example_inputs: Any) -> Any:
            copy = _copy_or_none(gm)
            compiled = original(self, gm, example_inputs)
            if copy is not None:
                _remember(self, *copy)
            return compiled

        call_user_compiler.__wrapped__ = original  # type: ignore[attr-defined]  # a function's attribute
        call_user_compiler.__doc__ = original.__doc__
        setattr(OutputGraph, _METHOD, call_user_compiler)
        _original = original


def kept(name: str) -> KeptGraph | None:
    """The copy of graph `name` (its global's name), if one was kept."""
    return _kept.get(name)


def copy_graph(gm: Any) -> tuple[Any, dict]:
    """A copy of `gm`'s graph (same node names and targets, each node's meta dict
    copied, its values shared) and the attributes its nodes name (shared)."""
    import copy as _copy
    import torch.fx
    old = gm.graph
    graph = torch.fx.Graph(tracer_cls=old._tracer_cls)
    out = graph.graph_copy(old, {})
    graph._codegen = _copy.deepcopy(old._codegen)
    graph.output(out)
    attributes: dict = {}
    for node in graph.nodes:
        if node.op in ("get_attr", "call_module") and node.target not in attributes:
            value: Any = gm
            for part in node.target.split("."):
                value = getattr(value, part)
            attributes[node.target] = value
    return graph, attributes


def _copy_or_none(gm: Any) -> tuple[Any, dict, dict] | None:
    try:
        graph, attributes = copy_graph(gm)
        return graph, attributes, dict(gm.meta)
    except Exception:  # noqa: BLE001 - never fail dynamo's compile: no copy, said later
        return None


def _remember(output_graph: Any, graph: Any, attributes: dict, meta: dict) -> None:
    try:
        name = meta.get("backend_id")
        if not isinstance(name, str):
            return
        compile_id = meta.get("dynamo_compile_id")
        _kept[name] = KeptGraph(name, graph, attributes, meta, output_graph.compiler_fn,
                                None if compile_id is None else str(compile_id))
    except Exception:  # noqa: BLE001 - called inside dynamo's compile
        pass
