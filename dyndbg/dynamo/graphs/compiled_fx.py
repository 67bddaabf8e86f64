"""inductor's CompiledFxGraph behind a compiled graph (issue 50): found by
a bounded walk along the wrappers from a `__compiled_fn_*` global (under
no_grad directly, in training as AOT's `CompiledFunction.compiled_fw`), and
the code object of its output code's `call`, the frame that is stepped.
Only read."""
from __future__ import annotations

import types

_SEARCH_LIMIT = 300


def compiled_forward(value: object) -> object | None:
    """Inductor's CompiledFxGraph of the forward behind a graph global."""
    from dyndbg.dynamo.graphs.lookup import _neighbours
    import torch.fx

    seen: set[int] = set()
    queue: list[object] = [value]
    while queue and len(seen) < _SEARCH_LIMIT:
        obj = queue.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if type(obj).__name__ == "CompiledFxGraph":
            return obj
        if isinstance(obj, torch.fx.GraphModule):
            continue
        if isinstance(obj, type):      # AOT's CompiledFunction: the forward only
            fw = vars(obj).get("compiled_fw")
            if fw is not None:
                queue.append(fw)
            continue
        queue.extend(_neighbours(obj))
    return None


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
