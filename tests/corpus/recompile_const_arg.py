"""Recompile on Python constant arguments: an int (specialized, static) and
a bool flag picking a branch; each new value fails a guard.
"""
import torch


@torch.compile(backend="eager", dynamic=False)
def f(x, n, neg):
    y = x * n                    # int n baked into the graph
    if neg:                      # bool guards on its value
        y = -y
    return y + n


x = torch.arange(3, dtype=torch.float32)
print("n=2 neg=False:", f(x, 2, False).tolist())
print("n=3 neg=False:", f(x, 3, False).tolist())   # recompile: int changed
print("n=3 neg=True:", f(x, 3, True).tolist())     # recompile: bool changed
