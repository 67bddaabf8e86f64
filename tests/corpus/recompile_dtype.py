"""Recompile on a new input dtype (float32 -> int64 -> float64): the dtype
guard fails each time and dynamo compiles a new entry.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    return (x * 3 + 1).to(torch.float32).sum()


for dt in (torch.float32, torch.int64, torch.float64):
    x = torch.arange(4, dtype=dt)
    print(f"{dt}: {f(x).item()}")
