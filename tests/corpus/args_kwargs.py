"""A compiled function taking *args and **kwargs, with a graph break, called
with varying numbers of positional and keyword arguments (each a recompile).
"""
import torch


@torch.compile(backend="eager")
def f(*args, **kwargs):
    total = sum(args)                    # tensors in *args
    for name in sorted(kwargs):
        total = total * kwargs[name]     # tensors in **kwargs
    torch._dynamo.graph_break()
    return total + len(args) + len(kwargs)


a = torch.arange(3, dtype=torch.float32)
b = torch.ones(3)
print("2 args:", f(a, b).tolist())
print("2 args + kw:", f(a, b, scale=torch.full((3,), 2.0)).tolist())
print("1 arg + 2 kw:", f(a, p=b * 3, q=b * 0.5).tolist())
