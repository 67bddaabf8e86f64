"""Keeping dynamo away from dyndbg's own code: what runs in generated frames
(trace functions, expressions evaluated at a stop) is never compiled."""
from __future__ import annotations

import types
from typing import Callable


def shield(*functions: Callable[..., object] | types.CodeType) -> None:
    """Keep dynamo away from these entry points (functions, or code objects
    run by the compiled core) and everything they call.

    Dynamo's frame hook stays active inside generated frames, so without
    this it would try to compile dyndbg's trace functions and any user
    expression evaluated at a stop, shifting the program's compile ids.
    """
    try:
        from torch._C._dynamo.eval_frame import _FrameAction, _FrameExecStrategy
        from torch._C._dynamo.eval_frame import set_code_exec_strategy
    except ImportError:
        return
    skip_all = _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP)
    for function in functions:
        code = function if isinstance(function, types.CodeType) else \
            getattr(function, "__code__", None) or function.__func__.__code__  # type: ignore[attr-defined]  # a bound method
        set_code_exec_strategy(code, skip_all)

