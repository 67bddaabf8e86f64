"""Dynamo compiles f into two graphs split by a graph break at print().
Step through to see graph 1, the print running eagerly, then the resume function.
"""
import torch


@torch.compile(backend="eager")
def f(x, y):
    a = x.sin() + y            # graph 1
    print("graph break here")  # print() is not traceable -> graph break
    b = a * 2 + x.cos()        # graph 2 (runs in a resume function)
    return b.sum()


x = torch.arange(4, dtype=torch.float32)
y = torch.ones(4)

# First call compiles; second call reuses the cached code.
for i in range(2):
    out = f(x, y)
    print(f"call {i}: {round(out.item(), 4)}")
