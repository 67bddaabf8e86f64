"""A generator function consumed from compiled code (inlined by dynamo), plus
a graph break while the consumed values are live.
"""
import torch


def pieces(x, n):
    for i in range(n):
        yield x * (i + 1)


@torch.compile(backend="eager")
def f(x):
    parts = list(pieces(x, 3))       # generator inlined into the graph
    torch._dynamo.graph_break()
    total = sum(p for p in parts)    # generator expression after the break
    return total, len(parts)


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    total, n = f(x)
    print(f"call {i}:", total.tolist(), n)
