"""Recompile on a new input shape (static shapes via dynamic=False), with a
graph break so both the frame and its resume function are recompiled.
"""
import torch


@torch.compile(backend="eager", dynamic=False)
def f(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y + x.shape[0]        # shape baked in as a constant


print("[3]:", f(torch.arange(3, dtype=torch.float32)).tolist())
print("[5]:", f(torch.arange(5, dtype=torch.float32)).tolist())   # recompile
print("[3] again:", f(torch.ones(3)).tolist())                     # cache hit
