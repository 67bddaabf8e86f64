"""An explicit ValueError raised after a graph break and never caught: dynamo
sees no handler and runs the resume frame eagerly; the script exits 1.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    y = x * 2
    torch._dynamo.graph_break()
    raise ValueError("uncaught error from compiled code")


f(torch.arange(3))
