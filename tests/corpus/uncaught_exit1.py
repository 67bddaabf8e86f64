"""An exception raised in compiled code after a graph break is never caught:
the traceback goes to stderr and the program exits with status 1.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    y = x * 2
    torch._dynamo.graph_break()
    if y.shape[0] == 3:
        raise RuntimeError("uncaught error from compiled code")
    return y


print("ok:", f(torch.arange(2)).tolist())
f(torch.arange(3))
print("not reached")
