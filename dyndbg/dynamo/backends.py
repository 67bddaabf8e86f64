"""A compile's backend and its name, the one way dyndbg names it.

Dynamo keeps the backend a program passed in two places: each cache entry's
`backend` and, while it compiles, `OutputGraph.compiler_fn` (wrapped for
debugging, the entry's backend as its `_torchdynamo_orig_backend`). Given to
`torch.compile`, it is a `torch._TorchCompileWrapper` whose `compiler_name` is
torch's own name for it: the string passed (`eager`, `inductor`) or the
function's `__name__`. `cache`, `graph`, `graph bisect` and the script
`graph bisect --save` writes all name a backend with `backend_name`.
"""
from __future__ import annotations

from typing import Any


def backend_function(backend: Any) -> Any:
    """The function a backend is: dynamo's debug wrapper and torch.compile's
    wrapper of a user's function taken off."""
    backend = getattr(backend, "_torchdynamo_orig_backend", backend)
    return getattr(backend, "compiler_fn", backend)


def backend_name(backend: object) -> str:
    """`eager`, `aot_eager`, `inductor`, or a custom backend's name, as torch
    names it (`compiler_name`, else the function's `__name__`)."""
    backend = getattr(backend, "_torchdynamo_orig_backend", backend)
    for attr in ("compiler_name", "__name__"):
        name = getattr(backend, attr, None)
        if isinstance(name, str):
            return name
    inner = getattr(backend, "compiler_fn", None)   # a wrapper without a name of its own
    if inner is not None and inner is not backend:
        return backend_name(inner)
    return type(backend).__name__

