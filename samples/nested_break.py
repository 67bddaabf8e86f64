"""outer() calls inner(), which has a graph break: dynamo makes a resume
function for inner's frame and one for outer's frame (after the call).
Step through to see both resume functions and the work after the call.
"""
import torch


def inner(x):
    y = x * 2
    torch._dynamo.graph_break()  # break inside the nested (inlined) call
    return y + 1


@torch.compile(backend="eager")
def outer(x):
    a = x.cos()
    b = inner(a)                 # graph break happens in here
    c = b * b + x                # more work after the call, in outer
    return c.sum()


x = torch.arange(4, dtype=torch.float32)
for i in range(2):
    print(f"call {i}: {round(outer(x).item(), 4)}")
