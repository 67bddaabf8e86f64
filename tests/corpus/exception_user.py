"""User code raises inside compiled code and the caller catches it: once
after a graph break (in the resume frame), once with no break (a raise that
dynamo traces itself).
"""
import torch


@torch.compile(backend="eager")
def after_break(x, fail):
    y = x * 2
    torch._dynamo.graph_break()
    if fail:
        raise ValueError("raised after a graph break")
    return y + 1


@torch.compile(backend="eager")
def no_break(x, limit):
    y = x + 1
    if x.shape[0] > limit:
        raise KeyError("too long")       # traced raise, no graph break
    return y


x = torch.arange(3, dtype=torch.float32)
print("ok:", after_break(x, False).tolist())
try:
    after_break(x, True)
except ValueError as e:
    print("caught:", type(e).__name__, e)
print("ok:", no_break(x, 5).tolist())
try:
    no_break(x, 2)
except KeyError as e:
    print("caught:", type(e).__name__, e)
print("done")
