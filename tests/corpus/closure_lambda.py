"""Closures and a lambda created before a graph break and used after it:
the resume function takes them as locals, so its transformed code object
is unhashable (it carries the closure cells).
"""
import torch


@torch.compile(backend="eager")
def f(x, k):
    offset = k + 1

    def shift(t):                # closure over `offset`
        return t + offset

    scale = lambda t: t * k      # lambda over the argument k
    h = x * 2                    # graph 1
    torch._dynamo.graph_break()
    return shift(h) + scale(h)   # graph 2 calls both


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    print(f"call {i}:", f(x, 2).tolist())
