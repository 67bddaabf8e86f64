"""Compiled graphs: from a `__compiled_fn_<N>_<uuid>` global to dynamo's FX graph.

Dynamo stores each compiled graph as a module global holding whatever the
backend returned, wrapped by `torch._dynamo.disable`. Measured on torch 2.13:

- eager:     `value._torchdynamo_orig_callable` is `gm.forward`; `.__self__` is the
             GraphModule.
- aot_eager, inductor (inference and training): the callable is
             `aot_module_simplified.<locals>.forward`, which carries
             `zero_grad = gm.zero_grad`; its `__self__` is dynamo's GraphModule
             (a `GmWrapper` holding it as `.gm` when inputs are boxed). Further
             down, `__wrapped__` chains reach AOT's own graphs (boxed_nop) or
             inductor's `CompiledFxGraph` (whose `source_code` is the output code);
             for training the chain ends in a `CompiledFunction` class holding
             `compiled_fw` / `compiled_bw`, reached from its `apply` (a builtin
             method of the class since torch 2.14, see versions.py).

Dynamo's GraphModule has `gm.meta["backend_id"] == <global name>`, which tells it
apart from AOT's inner graphs, so a small bounded search from the callable finds
it for every backend above without hooking compilation: no capture is installed.
Nothing here calls the compiled function or recompiles anything.
"""
from __future__ import annotations

import re
import sys
import types
from collections import deque
from dataclasses import dataclass, field

from dyndbg.dynamo import versions
from dyndbg.dynamo.versions import torch_version
from dyndbg.dynamo.names import graph_number

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_SEARCH_LIMIT = 400          # objects visited per search; real chains need < 40
# Attributes that lead from a backend's wrapper towards the graphs it wraps.
_EDGES = ("_torchdynamo_orig_callable", "__wrapped__", "gm", "compiled_fw", "compiled_bw",
          "compiled_fn", "current_callable")


@dataclass
class Placeholder:
    """One graph input, as dynamo traced it."""

    name: str
    dtype: str | None            # "float32"; None for non-tensors
    shape: tuple | None          # ints, or strings for symbolic sizes ("s17")
    kind: str = "Tensor"         # "Tensor", "SymInt", "int", ...

    def describe(self) -> str:
        """Short form as FX prints it: `f32[3, s17]`, or the kind for non-tensors."""
        if self.dtype is None:
            return self.kind
        shape = ", ".join(str(s) for s in self.shape or ())
        return f"{_dtype_abbr(self.dtype)}[{shape}]"


@dataclass
class GraphInfo:
    """What a compiled graph is: inputs, outputs, code and where it came from."""

    name: str
    number: int
    placeholders: list[Placeholder]
    outputs: list[str]
    code: str
    source_lines: list[tuple[str, int]]
    note: str | None = None      # set when the graph module could not be reached
    graph_module: object | None = field(default=None, repr=False)


def is_graph_name(name: str) -> bool:
    """Whether `name` is a compiled-graph global's name."""
    return graph_number(name) is not None


def graph_info(name: str, value: object) -> GraphInfo | None:
    """Describe the compiled graph stored in global `name` (value: that global):
    dynamo's GraphModule reached from it, as the backend left it.

    None if `name` is not a graph name or `value` is not callable. If the
    GraphModule cannot be reached, the result has empty placeholders and a
    `note` saying so. Never raises.
    """
    try:
        number = graph_number(name)
        if number is None or not callable(value):
            return None
        gm = _search(name, value).graph_module
        if gm is None:
            note = f"graph module not reachable from this callable with torch {torch_version()}"
            return GraphInfo(name, number, [], [], f"# {note}", [], note)
        return describe(name, gm)
    except Exception as error:  # noqa: BLE001 - a torch change must not break the debugger
        note = f"graph not readable with torch {torch_version()}: {type(error).__name__}: {error}"
        return GraphInfo(name, graph_number(name) or 0, [], [], f"# {note}", [], note)


def graph_module(name: str, value: object) -> object | None:
    """The FX GraphModule dynamo built for graph `name` (its `__compiled_fn_*` global)."""
    return _search(name, value).graph_module


def inductor_output_code(name: str, value: object) -> str | None:
    """Inductor's generated Python for this graph (forward, then backward if compiled).

    None when the graph was not compiled by inductor or the code is not reachable.
    """
    try:
        if not is_graph_name(name) or not callable(value):
            return None
        sources = _search(name, value).inductor_sources
        if not sources:
            return None
        if len(sources) == 1:
            return sources[0]
        return "\n".join(f"# ===== inductor output {i} =====\n{s}" for i, s in enumerate(sources))
    except Exception:  # noqa: BLE001
        return None


# -- search --------------------------------------------------------------------

@dataclass
class _Found:
    graph_module: object | None = None
    inductor_sources: list[str] = field(default_factory=list)


def _search(name: str, value: object) -> _Found:
    """Breadth-first walk from the callable along wrapper edges only."""
    import torch.fx

    found = _Found()
    fallback = None
    seen: set[int] = set()
    queue: deque[object] = deque([value])
    while queue and len(seen) < _SEARCH_LIMIT:
        obj = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.fx.GraphModule):
            backend_id = getattr(obj, "meta", {}).get("backend_id")
            if backend_id == name and found.graph_module is None:
                found.graph_module = obj
            elif backend_id is None and "dynamo_compile_id" in getattr(obj, "meta", {}):
                fallback = fallback or obj          # older torch without backend_id
            continue                                # never walk into a graph's own modules
        if isinstance(obj, torch.nn.Module):
            # GmWrapper (boxed inputs) holds it as .gm; a backend that returns the
            # GraphModule itself gets it wrapped in an OptimizedModule (._orig_mod).
            # Read the submodule table directly: no user __getattr__ runs.
            submodules = vars(obj).get("_modules") or {}
            queue.extend(m for k, m in submodules.items() if k in ("gm", "_orig_mod"))
            continue
        if type(obj).__name__ == "CompiledFxGraph":
            code = getattr(obj, "source_code", None)
            if isinstance(code, str) and code not in found.inductor_sources:
                found.inductor_sources.append(code)
        queue.extend(_neighbours(obj))
    if found.graph_module is None:
        found.graph_module = fallback
    return found


def _neighbours(obj: object) -> list[object]:
    """Objects one wrapper step inside `obj`: wrapped callables, closures, attributes."""
    out: list[object] = []
    if isinstance(obj, types.MethodType):
        return [obj.__self__, obj.__func__]
    if isinstance(obj, type):
        # AOT's CompiledFunction (training) keeps its compiled graphs as class attributes.
        namespace = vars(obj)
        return [namespace[k] for k in ("compiled_fw", "compiled_bw") if k in namespace]
    if isinstance(obj, types.FunctionType):
        for cell in obj.__closure__ or ():
            try:
                out.append(cell.cell_contents)
            except ValueError:                     # empty cell
                pass
        out.extend(v for v in vars(obj).values() if callable(v))  # e.g. forward.zero_grad
        return out
    if isinstance(obj, types.BuiltinFunctionType):
        owner = versions.function_class(obj)      # CompiledFunction.apply, torch >= 2.14
        return [owner] if owner is not None else out
    if isinstance(obj, types.ModuleType):
        return out
    # Other objects: only torch's own wrappers; never walk into user objects, whose
    # attributes could run code.
    if not type(obj).__module__.startswith("torch"):
        return out
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        out.extend(attributes[k] for k in _EDGES if k in attributes)
    return out


# -- description -------------------------------------------------------------------

def describe(name: str, gm: object) -> GraphInfo:
    """What FX GraphModule `gm` of graph `name` holds, listed as FX prints it."""
    number = graph_number(name) or 0
    graph = gm.graph  # type: ignore[attr-defined]  # an fx.GraphModule
    outputs: list[str] = []
    for node in graph.nodes:
        if node.op == "output" and node.args:
            result = node.args[0]
            items = result if isinstance(result, (tuple, list)) else [result]
            outputs = [_describe_output(item) for item in items]
    try:
        code = gm.print_readable(print_output=False)  # type: ignore[attr-defined]  # an fx.GraphModule
    except Exception:  # noqa: BLE001 - older signatures; the bare code is still useful
        code = str(getattr(gm, "code", ""))
    return GraphInfo(name, number, placeholders(gm), outputs, code.rstrip() + "\n",
                     _source_lines(graph), graph_module=gm)


def placeholders(gm: object) -> list[Placeholder]:
    """The inputs of FX GraphModule `gm`, in order."""
    return [_placeholder(n) for n in gm.graph.nodes  # type: ignore[attr-defined]  # an fx.GraphModule
            if n.op == "placeholder"]


def inputs_text(inputs: list[Placeholder]) -> str:
    """`2 inputs: L_x_ f32[4], L_n_ int`, `no inputs`."""
    if not inputs:
        return "no inputs"
    return (f"{len(inputs)} input{'s' if len(inputs) != 1 else ''}: "
            + ", ".join(f"{p.name} {p.describe()}" for p in inputs))


def _example(node: object) -> object:
    meta = getattr(node, "meta", {})
    value = meta.get("example_value")
    return meta.get("val") if value is None else value


def _placeholder(node: object) -> Placeholder:
    target = getattr(node, "target", None)
    name = target if isinstance(target, str) else node.name  # type: ignore[attr-defined]  # an fx.Node
    dtype, shape, kind = _tensor_meta(_example(node))
    return Placeholder(name, dtype, shape, kind)


def _tensor_meta(value: object) -> tuple[str | None, tuple | None, str]:
    import torch

    if isinstance(value, torch.Tensor):
        shape = tuple(int(s) if isinstance(s, int) else str(s) for s in value.shape)
        return str(value.dtype).removeprefix("torch."), shape, "Tensor"
    if value is None:
        return None, None, "unknown"
    return None, None, type(value).__name__


def short_type(value: object) -> str:
    """`f32[3, s17]` for a (fake) tensor, as FX prints it; else the value's kind."""
    dtype, shape, kind = _tensor_meta(value)
    return Placeholder("", dtype, shape, kind).describe()


def _describe_output(item: object) -> str:
    import torch.fx

    if not isinstance(item, torch.fx.Node):
        return repr(item)
    return f"{item.name}: {short_type(_example(item))}"


def _source_lines(graph: object) -> list[tuple[str, int]]:
    """Innermost user frame of each computing node, deduplicated in graph order.

    Placeholders are skipped: their stack trace is their first use, not a definition.
    """
    lines: list[tuple[str, int]] = []
    for node in graph.nodes:  # type: ignore[attr-defined]  # an fx.Graph
        if node.op in ("placeholder", "output"):
            continue
        frame = node_frame(node)
        if frame is not None and frame not in lines:
            lines.append(frame)
    return lines


def node_frame(node: object) -> tuple[str, int] | None:
    """(file, line) of the user's line that made an FX node: the innermost frame
    of its stack trace outside torch (torch's own only if nothing else is)."""
    trace = getattr(node, "meta", {}).get("stack_trace") or ""
    frames = [(f, int(n)) for f, n in _FRAME.findall(trace)]
    torch_dir = _torch_dir()
    user = [fr for fr in frames if not (torch_dir and fr[0].startswith(torch_dir))]
    chosen = user or frames
    return chosen[-1] if chosen else None


def node_line(node: object) -> str:
    """`model.py:12` for an FX node (node_frame), "" where it has no stack trace."""
    import os
    frame = node_frame(node)
    return f"{os.path.basename(frame[0])}:{frame[1]}" if frame else ""


def node_place(node: object) -> str:
    """Where an FX node came from: its line (node_line) or, where dynamo kept no
    stack trace (code of torch's own modules), the innermost module it ran in,
    from dynamo's nn_module_stack: `L['fn'].1 (ReLU)`; "" if neither."""
    line = node_line(node)
    if line:
        return line
    stack = getattr(node, "meta", {}).get("nn_module_stack") or {}
    try:
        path, kind = list(stack.values())[-1]
        return f"{path} ({getattr(kind, '__name__', kind)})"
    except (IndexError, TypeError, ValueError):
        return ""


def _torch_dir() -> str | None:
    import os

    torch = sys.modules.get("torch")
    path = getattr(torch, "__file__", None)
    return os.path.dirname(path) + os.sep if path else None


def _dtype_abbr(dtype: str) -> str:
    try:
        import torch
        from torch.fx.graph import dtype_abbrs
        return dtype_abbrs.get(getattr(torch, dtype), dtype)
    except Exception:  # noqa: BLE001 - table moved: the full name is still readable
        return dtype
