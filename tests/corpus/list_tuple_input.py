"""A list and a tuple of tensors as inputs: dynamo guards on their lengths and
sources each element; a different list length recompiles.
"""
import torch


@torch.compile(backend="eager")
def f(tensors, pair):
    total = torch.stack(tensors).sum(dim=0)
    torch._dynamo.graph_break()
    a, b = pair
    return total * a + b, len(tensors)


pair = (torch.full((2,), 2.0), torch.ones(2))
two = [torch.arange(2, dtype=torch.float32), torch.ones(2)]
three = two + [torch.full((2,), 3.0)]
print("two:", [r if isinstance(r, int) else r.tolist() for r in f(two, pair)])
print("three:", [r if isinstance(r, int) else r.tolist() for r in f(three, pair)])
