"""A compiled graph run by hand, against the graph as dynamo traced it:
`graph capture`, `graph run`, `graph bisect`, `graph values` (dyndbg.cache
gives them to Python).

The reference is always the copy of dynamo's graph kept before its backend
saw it (graphs/copies.py), never the GraphModule reached from the compiled
callable, which a backend may have rewritten in place: run eagerly, that one
would check the compile against itself.
"""
from __future__ import annotations

import time
from typing import Any, Callable, NamedTuple, Sequence

from dyndbg.dynamo.graphs import bisect, copies as graph_copies, lookup as graphs, node_values, repro
from dyndbg.dynamo.graphs.bisect import Bisection, Verdict
from dyndbg.dynamo.graphs.copies import KeptGraph
from dyndbg.dynamo.shield import shield
from dyndbg.dynamo.errors import CacheError
from dyndbg.dynamo.names import find_graph_global
from dyndbg.dynamo.graphs.node_values import Agreement

__all__ = ["Bisection", "GraphRun", "NodeValues", "Verdict", "captured", "graph_bisect",
           "graph_capture", "graph_run", "graph_values"]

DEFAULT_TOLERANCE = 1e-4     # torch._dynamo.utils.same's own tol


class GraphRun(NamedTuple):
    compiled: object        # what the compiled graph returned (what the program gets)
    eager: object | None    # dynamo's graph run eagerly (None: no FX graph kept)
    same: bool | None
    difference: str         # where they differ, for people


class NodeValues(NamedTuple):
    """One node's value eagerly, in float64 and compiled, on one call's inputs."""

    graph: int
    node: str
    target: str
    line: str
    eager: Any
    fp64: Any
    compiled: Any
    agreement: Agreement
    seconds: float


def _graph_global(number: int) -> tuple[dict, str]:
    found = find_graph_global(str(number))
    if found is None:
        raise CacheError(f"no compiled graph {number} (yet)")
    return found


def kept_graph(number: int) -> KeptGraph:
    """The copy of graph `number` as dynamo traced it, or a CacheError saying why not."""
    namespace, name = _graph_global(number)
    kept = graph_copies.kept(name)
    if kept is None:
        raise CacheError(f"graph {number} was compiled before dyndbg kept copies of "
                         "dynamo's graphs (run the program under dyndbg, or import "
                         "dyndbg.cache before its first compile)")
    return kept


_captured: dict[int, tuple] = {}
_GRAPH = "_dyndbg_captures"   # on a capture wrapper: the compiled graph it stands for


def graph_capture(number: int, at_hand: Sequence[object] | None = None) -> None:
    """Keep the inputs of graph `number`'s next call (for graph_run with no inputs).

    at_hand: the inputs of a call of the graph that is about to run (a stop at its
    CALL: the graph is already on the value stack, so the wrapper put in now misses
    it); copies are kept at once, and the next call's inputs replace them."""
    namespace, name = _graph_global(number)
    compiled = _compiled(namespace[name])   # a capture not yet used is replaced
    if at_hand is not None:
        try:
            _captured[number] = tuple(_copy(a) for a in at_hand)
        except Exception as error:
            raise CacheError(f"cannot copy the inputs of graph {number}'s call at hand: "
                             f"{type(error).__name__}: {error}") from None

    def capture(*args: object, **kwargs: object) -> object:
        # One call only: the module global is the compiled graph again at once.
        if namespace.get(name) is capture:
            namespace[name] = compiled
        try:
            _captured[number] = tuple(_copy(a) for a in args)
        except Exception:   # the program's call must go on whatever copying did
            pass
        return compiled(*args, **kwargs)
    capture.__wrapped__ = compiled  # type: ignore[attr-defined]  # a function's attribute
    setattr(capture, _GRAPH, compiled)
    # Generated code calls it inside the compiled frame: dynamo must skip it and
    # all it calls (else it compiles dyndbg's own code: extra frames, a graph
    # break and a UserWarning, recompiles counted against the program's limit).
    shield(capture)
    namespace[name] = capture


def _compiled(value: object) -> Callable[..., object]:
    """The compiled graph itself, where `value` is a capture wrapper not yet called."""
    compiled = getattr(value, _GRAPH, value)
    if not callable(compiled):
        raise CacheError(f"not a compiled graph: {type(compiled).__name__}")
    return compiled


def captured(number: int) -> tuple | None:
    return _captured.get(number)


def _copy(value: object) -> object:
    clone = getattr(value, "clone", None)
    return clone() if callable(clone) and type(value).__module__.startswith("torch") else value


def _inputs(number: int, given: Sequence[object]) -> Sequence[object]:
    """The inputs given, checked against the graph's placeholders, or the captured ones."""
    if given:
        expected = _placeholders(number)
        if expected is not None and len(expected) != len(given):
            raise CacheError(f"graph {number} takes {graphs.inputs_text(expected)} "
                             f"({len(given)} given)")
        return given
    if number not in _captured:
        raise CacheError(f"no inputs captured for graph {number}: graph capture {number}, "
                         "then let it run, or give the inputs")
    return _captured[number]


def _placeholders(number: int) -> list[graphs.Placeholder] | None:
    """Graph `number`'s inputs: its traced copy's, else those of the graph the
    compiled callable reaches; None where neither is at hand."""
    namespace, name = _graph_global(number)
    kept = graph_copies.kept(name)
    if kept is not None:
        return graphs.placeholders(kept.graph_module)
    info = graphs.graph_info(name, _compiled(namespace[name]))
    return None if info is None or info.note else info.placeholders


def graph_run(number: int, *inputs: object) -> GraphRun:
    """Graph `number` run on `inputs` (default: the captured ones), compiled and as
    dynamo traced it run eagerly, compared."""
    namespace, name = _graph_global(number)
    inputs = tuple(_inputs(number, inputs))
    compiled_fn = _compiled(namespace[name])
    try:
        with bisect.untouched():    # the program's random state and counters stay as they were
            compiled = compiled_fn(*[_copy(a) for a in inputs])
    except Exception as error:  # noqa: BLE001 - inputs it cannot take
        raise CacheError(f"compiled graph {number} failed on these inputs: "
                         f"{type(error).__name__}: {error}") from None
    kept = graph_copies.kept(name)
    if kept is None:
        return GraphRun(compiled, None, None,
                        "not compared: no copy of dynamo's graph was kept before its backend "
                        "compiled it (the graph module reachable now may be the backend's "
                        "rewrite, no reference for it)")
    try:
        ref = bisect.reference(kept, inputs, fp64=True)
    except Exception as error:  # noqa: BLE001 - inputs it cannot take
        raise CacheError(f"dynamo's graph {number} failed on these inputs: "
                         f"{type(error).__name__}: {error}") from None
    names = bisect.output_names(kept.graph_module)
    outputs = [ref.eager.get(n) if n else None for n in names]
    high = [(ref.fp64 or {}).get(n) if n else None for n in names]
    eager = tuple(outputs) if isinstance(compiled, (tuple, list)) or len(outputs) != 1 \
        else outputs[0]
    same, difference = _compare(compiled, outputs, high)
    return GraphRun(compiled, eager, same, difference)


def graph_bisect(number: int, *inputs: object, rtol: float = DEFAULT_TOLERANCE,
                 atol: float = DEFAULT_TOLERANCE, fp64: bool = True,
                 save: str | None = None) -> Bisection:
    """The first node of graph `number` whose value compiled by its backend differs
    from dynamo's graph run eagerly (judged against float64, as torch's
    accuracy checks judge), on `inputs` (default: the captured ones).
    save: write a script reproducing it there (and its inputs beside it)."""
    kept = kept_graph(number)
    inputs = tuple(_inputs(number, inputs))
    try:
        found = bisect.bisect(number, kept, inputs, rtol=rtol, atol=atol, fp64=fp64,
                              line_of=graphs.node_place)
    except CacheError:
        raise
    except Exception as error:  # noqa: BLE001 - a backend failing on a part of the graph
        raise CacheError(f"graph {number} could not be bisected: "
                         f"{type(error).__name__}: {error}") from None
    if save is not None:
        if found.first is None:
            raise CacheError("no node differs: nothing to save")
        repro.write(save, kept, found, inputs)
    return found


def graph_values(number: int, node: str, *inputs: object, rtol: float = DEFAULT_TOLERANCE,
                 atol: float = DEFAULT_TOLERANCE) -> NodeValues:
    """One node of graph `number`: its eager, float64 and compiled values (compiled
    in a compile of the graph up to it, returning it) on `inputs`."""
    kept = kept_graph(number)
    inputs = tuple(_inputs(number, inputs))
    nodes = {n.name: n for n in kept.graph_module.graph.nodes}
    if node not in nodes or nodes[node].op in ("placeholder", "output"):
        known = ", ".join(n for n, v in nodes.items() if v.op not in ("placeholder", "output"))
        raise CacheError(f"graph {number} has no computing node {node!r} (it has: {known})")
    started = time.perf_counter()
    try:
        ref = bisect.reference(kept, inputs, fp64=True)
        (compiled,) = bisect.compiled_values(kept, [node], inputs)
    except Exception as error:  # noqa: BLE001 - a backend failing on a part of the graph
        raise CacheError(f"graph {number}: {node} could not be computed: "
                         f"{type(error).__name__}: {error}") from None
    eager, high = ref.eager.get(node), (ref.fp64 or {}).get(node)
    agreed = node_values.agreement(eager, compiled, high, rtol=rtol, atol=atol)
    return NodeValues(number, node, f"{nodes[node].op} {bisect.target_name(nodes[node])}",
                      graphs.node_place(nodes[node]), eager, high, compiled, agreed,
                      time.perf_counter() - started)


def _compare(compiled: object, eager: list, fp64: list) -> tuple[bool, str]:
    """Each output judged as `graph bisect` judges a node (node_values.agreement)."""
    got = list(compiled) if isinstance(compiled, (list, tuple)) else [compiled]
    if len(got) != len(eager):
        return False, f"{len(got)} outputs against {len(eager)}"
    for k, (x, y, z) in enumerate(zip(got, eager, fp64)):
        agreed = node_values.agreement(y, node_values.detached(x), z)
        if not agreed.agree:
            detail = agreed.note or f"max abs difference {agreed.max_abs:.3g}"
            return False, f"output {k}: {detail}"
    return True, ("every output agrees with dynamo's graph run eagerly "
                  "(torch._dynamo.utils.same, fp64 reference)")
