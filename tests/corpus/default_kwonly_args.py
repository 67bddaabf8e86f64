"""A compiled function with a default argument and keyword-only arguments
(with and without defaults): a new clamp recompiles the resume function,
a new positional bias recompiles f.
"""
import torch


@torch.compile(backend="eager")
def f(x, bias=1.0, *, scale, clamp=None):
    y = x * scale + bias
    torch._dynamo.graph_break()
    if clamp is not None:
        y = y.clamp(max=clamp)
    return y - 1


x = torch.arange(4, dtype=torch.float32)
print("defaults:", f(x, scale=2).tolist())
print("kw clamp:", f(x, scale=2, clamp=3.0).tolist())        # recompile
print("positional bias:", f(x, 0.5, scale=2).tolist())       # recompile
