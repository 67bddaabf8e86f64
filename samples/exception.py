"""An IndexError raised at runtime inside the compiled graph (called from the
resume function after a graph break) propagates out of dynamo's frames.
Watch where it is raised and how it unwinds to the caller's except block.
"""
import torch


@torch.compile(backend="eager")
def f(x, idx):
    h = x + 1
    torch._dynamo.graph_break()  # explicit graph break
    return h[idx] * 2            # idx out of range -> IndexError at run time


x = torch.arange(3, dtype=torch.float32)

# Call 1: valid index, compiles both graphs and returns normally.
print("ok:", f(x, torch.tensor([1])).tolist())

# Call 2: same shapes (no recompile), but index 5 is out of bounds for size 3.
try:
    f(x, torch.tensor([5]))
except IndexError as e:
    print("caught:", type(e).__name__)
print("exiting normally")
