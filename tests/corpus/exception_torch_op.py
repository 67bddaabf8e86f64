"""A torch op fails at run time inside a compiled graph (an out-of-range
tensor index after a graph break) and the caller catches the IndexError.
"""
import torch


@torch.compile(backend="eager")
def f(x, idx):
    h = x * 10
    torch._dynamo.graph_break()
    return h[idx] + 1            # index out of range -> IndexError at run time


x = torch.arange(4, dtype=torch.float32)
print("ok:", f(x, torch.tensor([2, 0])).tolist())
try:
    f(x, torch.tensor([1, 9]))   # same shapes, no recompile; fails in graph 2
except IndexError as e:
    print("caught:", type(e).__name__)
print("ok again:", f(x, torch.tensor([3, 3])).tolist())
