"""A compiled graph's backward as it runs (issue 50: `catch backward`).

AOT autograd (aot_eager) makes one `torch.autograd.Function` subclass per
compiled graph, `CompiledFunction` (runtime_wrappers.py's
`_AOTDispatchAutogradFunctionFactory.build`). Measured on torch 2.13:

- `CompiledFunction.backward(ctx, *flat_args)` is what autograd calls inside
  `loss.backward()`; its code object is one and the same for every graph
  (a constant of `build`'s class body), so watching that one code object
  sees every compiled backward start. Its `ctx` is the graph's node in the
  autograd graph; `ctx._forward_cls` is the graph's `CompiledFunction`.
- The backward is compiled lazily, at the first `backward()`:
  `CompiledFunction._lazy_backward_info.bw_module` is AOT's backward graph;
  `_backward_impl` compiles a deep copy of it with the backend's
  `bw_compiler` and stores the result in `CompiledFunction.compiled_bw`
  before it calls it. For aot_eager that is `boxed_nop.<locals>.run`
  (behind dynamo's `DisableContext` wrapper), whose `fx_g` cell is the
  GraphModule that runs: its generated `forward(self, args_list)` has one
  line per FX node, as the forward's has.
- The backward's nodes keep the forward's user line:
  `node.meta["stack_trace"]` is the forward node's, and `node.meta["seq_nr"]`
  is that of the forward node it differentiates (the forward GraphModule is
  `compiled_fw`'s `fx_g`).
- For inductor, `compiled_bw` is inductor's output code, stepped as the
  forward's is (inductor_backward.py).

Nothing here calls the graph or changes torch's objects: it reads them.
"""
from __future__ import annotations

import enum
import os
import sys
import types
import weakref
from dataclasses import dataclass, field
from typing import Any

from dyndbg.dynamo.graphs.inductor_backward import BackwardOutputCode, inductor_backward
from dyndbg.dynamo.graphs.inductor_steps import NoOutputCode
from dyndbg.dynamo.graphs.lookup import _neighbours, graph_module
from dyndbg.dynamo.graphs.stepping import GraphCode, NoWayIn
from dyndbg.dynamo.names import graph_number

_WALK_LIMIT = 200
# CompiledFunction class -> (its `__compiled_fn_*` global, graph number), once found
_GRAPHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Entry(enum.Enum):
    """Whether AOT autograd's CompiledFunction.backward code can be watched."""

    FOUND = "found"
    NOT_LOADED = "not loaded"   # AOT autograd not imported yet (no graph compiled by it)
    MISSING = "missing"         # loaded, but no such code: a torch dyndbg does not know


RUNTIME_WRAPPERS = "torch._functorch._aot_autograd.runtime_wrappers"


def backward_entry_code() -> tuple[Entry, types.CodeType | None]:
    """The code object of `CompiledFunction.backward`, shared by every
    graph AOT autograd compiles. Never imports torch's module: imported
    before torch._dynamo it breaks torch's own imports (a circular import,
    torch 2.13); AOT autograd imports it as it compiles the first graph."""
    runtime_wrappers = sys.modules.get(RUNTIME_WRAPPERS)
    if runtime_wrappers is None:
        return Entry.NOT_LOADED, None
    seen: set[int] = set()
    queue: list[types.CodeType] = []
    here = runtime_wrappers.__name__
    for value in vars(runtime_wrappers).values():
        if getattr(value, "__module__", None) != here:
            continue
        members = list(vars(value).values()) if isinstance(value, type) else [value]
        for member in members:
            member = member.__func__ if isinstance(member, staticmethod) else member
            if isinstance(member, types.FunctionType):
                queue.append(member.__code__)
    while queue:
        code = queue.pop()
        if id(code) in seen:
            continue
        seen.add(id(code))
        if getattr(code, "co_qualname", "").endswith("CompiledFunction.backward"):
            return Entry.FOUND, code
        queue.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return Entry.MISSING, None


def function_class(frame: types.FrameType) -> type | None:
    """The graph's CompiledFunction class, from a `CompiledFunction.backward` frame."""
    ctx = frame.f_locals.get("ctx")
    cls = getattr(type(ctx), "_forward_cls", None) if ctx is not None else None
    if cls is None and ctx is not None:
        cls = getattr(ctx, "_forward_cls", None)
    return cls if isinstance(cls, type) and "compiled_fw" in vars(cls) else None


def _walk(start: object, found) -> object | None:
    """The first object `found` accepts, breadth first along wrapper edges."""
    seen: set[int] = set()
    queue: list[object] = [start]
    while queue and len(seen) < _WALK_LIMIT:
        obj = queue.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if found(obj):
            return obj
        queue.extend(_neighbours(obj))
    return None


def _is_function_class(obj: object) -> bool:
    return isinstance(obj, type) and "compiled_fw" in vars(obj)


def graph_of(cls: type) -> tuple[str, int] | None:
    """(`__compiled_fn_*` global, graph number) of the graph whose
    CompiledFunction is `cls`: the live graph globals, each walked to its class."""
    if cls in _GRAPHS:
        return _GRAPHS[cls]
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name in [n for n in list(namespace) if n.startswith("__compiled_fn_")]:
            number = graph_number(name)
            if number is None:
                continue
            if _walk(namespace.get(name), lambda o: o is cls) is not None:
                _GRAPHS[cls] = (name, number)
                return name, number
    _GRAPHS[cls] = None     # its graph's global is gone: no later one holds it
    return None


def global_value(name: str) -> object:
    """The value of the graph global `name`, from the module that holds it."""
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict) and name in namespace:
            return namespace[name]
    return None


def has_backward(value: object) -> bool:
    """Whether a graph global's value runs through AOT autograd's
    CompiledFunction (so that a compiled backward can run for it)."""
    return _walk(value, _is_function_class) is not None


def _fx_graph(compiled: object) -> Any:
    """The GraphModule behind a compiled graph (`boxed_nop.<locals>.run`'s `fx_g`)."""
    import torch.fx

    def runs_fx(obj: object) -> bool:
        if not isinstance(obj, types.FunctionType) or "fx_g" not in obj.__code__.co_freevars:
            return False
        cell = obj.__closure__[obj.__code__.co_freevars.index("fx_g")]  # type: ignore[index]  # a free variable: a closure
        try:
            return isinstance(cell.cell_contents, torch.fx.GraphModule)
        except ValueError:
            return False
    run = _walk(compiled, runs_fx)
    if run is None:
        return None
    return run.__closure__[run.__code__.co_freevars.index("fx_g")].cell_contents  # type: ignore[attr-defined]  # found by runs_fx


def _forward_code(gm: object) -> types.CodeType | None:
    """The GraphModule's generated forward code, where torch has made it."""
    forward = getattr(type(gm), "forward", None)
    code = getattr(forward, "__code__", None)
    if isinstance(code, types.CodeType) and code.co_filename.startswith("<eval_with_key>"):
        return code
    return None


@dataclass
class BackwardGraphCode(GraphCode):
    """The backward of one compiled graph. Its GraphModule is compiled at the
    first `backward()`, inside the call that runs it: until then `gm` is
    None and is read from the CompiledFunction as the graph starts."""

    cls: type | None = field(default=None, repr=False)

    def is_frame(self, frame: types.FrameType) -> bool:
        code = frame.f_code
        if self.gm is None:
            if code.co_name != "forward" or not code.co_filename.startswith("<eval_with_key>"):
                return False
            if self.cls is None:
                return False
            gm = _fx_graph(vars(self.cls).get("compiled_bw"))
            if gm is None or id(frame.f_locals.get("self")) != id(gm):
                return False
            self.nodes = list(gm.graph.nodes)
            self.gm = gm
            return True
        return super().is_frame(frame)

    def forward_node(self, node: object) -> object | None:
        """The forward node this backward node differentiates (the same seq_nr)."""
        seq = getattr(node, "meta", {}).get("seq_nr")
        fw = _fx_graph(vars(self.cls).get("compiled_fw")) if self.cls is not None else None
        if seq is None or fw is None:
            return None
        for candidate in fw.graph.nodes:
            if candidate.op == "call_function" and candidate.meta.get("seq_nr") == seq:
                return candidate
        return None


def backward_graph(cls: type, name: str, number: int,
                   backend: str | None) -> BackwardGraphCode | BackwardOutputCode:
    """The backward of graph `number` (its CompiledFunction `cls`), about to
    run: a GraphModule's code (aot_eager), or inductor's output code
    (inductor_backward.py). Raises NoWayIn where its compiled backward is
    neither (a backend whose bw_compiler returns code of its own)."""
    label = f"backward of graph {number}"
    compiled = vars(cls).get("compiled_bw")
    try:
        gm = _fx_graph(compiled) if compiled is not None else None
        inductor = None
        if gm is None and (compiled is not None or backend == "inductor"):
            inductor = inductor_backward(cls, name, number, backend or "inductor",
                                         graph_module(name, global_value(name)))
    except NoOutputCode as why:
        raise NoWayIn(f"{why}; running on") from None
    except Exception as error:  # noqa: BLE001 - a torch change: said, then run on
        raise NoWayIn(f"{label} could not be read ({type(error).__name__}: {error}); "
                      "running on") from None
    if inductor is not None:
        return inductor
    if compiled is not None and gm is None:
        raise NoWayIn(f"{label}: its backend ({backend or 'unknown'}) gives no way in; "
                      "running on")
    code = _forward_code(gm) if gm is not None else None
    nodes = list(gm.graph.nodes) if gm is not None else []
    return BackwardGraphCode(name, number, "backward", backend or "unknown", gm, code, nodes, cls)


def autograd_caller(frame: types.FrameType) -> types.FrameType | None:
    """The user's frame whose call (`loss.backward()`) runs this backward:
    the innermost frame outside torch and dyndbg."""
    import torch
    dyndbg_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    skip = (os.path.dirname(torch.__file__) + os.sep, dyndbg_dir + os.sep)
    back = frame.f_back
    while back is not None:
        filename = back.f_code.co_filename
        if not filename.startswith(skip) and not filename.startswith("<"):
            return back
        back = back.f_back
    return None
