"""dyndbg's own Python, called from inside a compiled frame, kept away from dynamo.

Generated code that calls a wrapper dyndbg put in a module global (graph
capture's, in place of `__compiled_fn_N`) enters it with dynamo's frame callback
still set, so dynamo compiles the wrapper as it would user code: extra compiled
frames, a graph break and a UserWarning at `Tensor.clone`, recompiles counted
against the program's own recompile_limit. torch's recursive `disable` runs the
wrapper, and everything it calls, with the callback unset: what dynamo does to
its own compiled graphs. The same API on torch 2.13, 2.14 and 2.15.
"""
from __future__ import annotations

from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable[..., object])


def untraced(function: F, reason: str) -> F:
    """`function` wrapped so that dynamo never traces it nor anything it calls.
    The wrapper's `__wrapped__` is `function`."""
    import torch
    return torch.compiler.disable(function, recursive=True,  # type: ignore[return-value]
                                  reason=f"dyndbg: {reason}")
