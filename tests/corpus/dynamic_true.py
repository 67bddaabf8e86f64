"""Dynamic shapes via torch.compile(dynamic=True): sizes are symbolic from the
start; a reshape using the symbolic size and a graph break.
"""
import torch


@torch.compile(backend="eager", dynamic=True)
def f(x):
    n = x.shape[0]
    y = x.reshape(n // 2, 2) * n     # symbolic size arithmetic
    torch._dynamo.graph_break()
    return y.sum(dim=1)


for n in (6, 8):
    print(f"n={n}:", f(torch.arange(n, dtype=torch.float32)).tolist())
