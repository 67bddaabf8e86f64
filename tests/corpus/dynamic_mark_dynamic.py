"""Dynamic shapes via torch._dynamo.mark_dynamic: f's dim 0 is symbolic from
the first compile, so f is not recompiled for a new length; its resume
function (whose input y was not marked) recompiles once, then goes dynamic.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y.sum() + x.shape[0]      # shape[0] is a SymInt


for n in (3, 5, 7):
    x = torch.arange(n, dtype=torch.float32)
    torch._dynamo.mark_dynamic(x, 0)
    print(f"n={n}: {f(x).item()}")
