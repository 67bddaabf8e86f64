"""A graph break three call levels deep (f -> a -> b -> c), with work after
each call so every level needs its own resume function.
"""
import torch


def c(x):
    y = x * 2
    torch._dynamo.graph_break()  # break three levels below f
    return y + 1


def b(x):
    return c(x + 1) * 3


def a(x):
    return b(x - 1) + x


@torch.compile(backend="eager")
def f(x):
    r = a(x.sin())
    return r.sum(), r.max()


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    s, m = f(x)
    print(f"call {i}: sum={round(s.item(), 4)} max={round(m.item(), 4)}")
