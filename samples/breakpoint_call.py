"""dyndbg.breakpoint() inside a compiled function: dynamo breaks the graph
there and calls it from the transformed code, so the debugger stops right
after the call, at the graph boundary, with graph 1's outputs on the stack.
Run it with plain python: the breakpoint starts the debugger itself.
"""
import torch

import dyndbg


@torch.compile(backend="eager")
def f(x):
    y = x.sin() + 1          # graph 1
    dyndbg.breakpoint()      # graph break; the debugger stops right after this call
    return (y * 2).sum()     # graph 2, in the resume function


x = torch.arange(4, dtype=torch.float32)
print("f(x) =", round(f(x).item(), 4))
print("eager =", round(((x.sin() + 1) * 2).sum().item(), 4))
