"""A data-dependent branch (if x.sum() > 0) in a compiled function: dynamo
breaks the graph at the condition and resumes in a per-branch function.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    y = x * 2 - 1
    if y.sum() > 0:              # tensor bool -> graph break
        out = y.relu()
    else:
        out = y.abs() + 10
    return out * 3


print("positive:", f(torch.arange(3, dtype=torch.float32)).tolist())
print("negative:", f(-torch.arange(3, dtype=torch.float32)).tolist())
