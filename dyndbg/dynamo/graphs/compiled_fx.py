"""inductor's CompiledFxGraph behind a compiled graph (issue 50): found by
a bounded walk along the wrappers from a `__compiled_fn_*` global (under
no_grad directly, in training as AOT's `CompiledFunction.compiled_fw`), and
the code object of its output code's `call`, the frame that is stepped.
Only read."""
from __future__ import annotations

import types
from typing import Callable

_FORWARD_LIMIT = 300       # objects visited from a graph global
_BACKWARD_LIMIT = 100      # from AOT's compiled_bw


def _find(start: object, limit: int,
          instead: Callable[[object], list[object] | None]) -> object | None:
    """The first CompiledFxGraph breadth first from `start` along wrapper
    edges (lookup._neighbours); `instead(obj)`: what to follow from `obj` in
    place of its neighbours, None for its neighbours."""
    from dyndbg.dynamo.graphs.lookup import _neighbours

    seen: set[int] = set()
    queue: list[object] = [start]
    while queue and len(seen) < limit:
        obj = queue.pop(0)
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        if type(obj).__name__ == "CompiledFxGraph":
            return obj
        follow = instead(obj)
        queue.extend(_neighbours(obj) if follow is None else follow)
    return None


def compiled_forward(value: object) -> object | None:
    """Inductor's CompiledFxGraph of the forward behind a graph global."""
    import torch.fx

    def instead(obj: object) -> list[object] | None:
        if isinstance(obj, torch.fx.GraphModule):
            return []
        if isinstance(obj, type):      # AOT's CompiledFunction: the forward only
            return [vars(obj).get("compiled_fw")]
        return None
    return _find(value, _FORWARD_LIMIT, instead)


def compiled_backward(compiled_bw: object) -> object | None:
    """Inductor's CompiledFxGraph behind AOT's `compiled_bw`, if it is one."""
    return _find(compiled_bw, _BACKWARD_LIMIT, lambda obj: [] if isinstance(obj, type) else None)


def cuda_graph_replay(compiled: object) -> bool:
    """Whether cudagraph_post_compile wrapped its `call` in cudagraphify
    (mode="reduce-overhead"): a replay runs no Python, no kernel to step between."""
    return getattr(compiled, "cudagraph_info", None) is not None \
        and getattr(compiled, "disabled_cudagraphs_reason", None) is None


def call_code(compiled: object) -> types.CodeType | None:
    """The code of the output code's `call`: `Runner.call` (the bound
    `current_callable`'s function, `compiled_fn_runner`'s class), or a
    module-level `call` on older torch."""
    runner = getattr(compiled, "compiled_fn_runner", None)
    call = getattr(type(runner), "call", None) if runner is not None else None
    if isinstance(call, types.FunctionType):
        return call.__code__
    current = getattr(compiled, "current_callable", None)
    if isinstance(current, types.MethodType):
        current = current.__func__
    if isinstance(current, types.FunctionType) and current.__name__ == "call":
        return current.__code__
    return None
