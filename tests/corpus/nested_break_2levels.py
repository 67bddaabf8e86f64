"""A graph break two call levels deep: compiled f calls g, g calls h, and
h breaks; dynamo resumes h, then g, then f after the inlined calls.
"""
import torch


def h(x):
    y = x + 1
    torch._dynamo.graph_break()  # break two levels below f
    return y * 2


def g(x):
    return h(x * 3) - 1


@torch.compile(backend="eager")
def f(x):
    a = x.cos()
    b = g(a)
    return (b + x).sum()


x = torch.arange(4, dtype=torch.float32)
for i in range(2):
    print(f"call {i}: {round(f(x).item(), 4)}")
