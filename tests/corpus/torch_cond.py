"""torch.cond(pred, true_fn, false_fn, (x,)) captures both branches as
subgraphs in one graph; the predicate is a tensor, so no graph break.
"""
import torch


def true_fn(x):
    return x.sin() + 1


def false_fn(x):
    return x.cos() - 1


@torch.compile(backend="eager")
def f(x):
    return torch.cond(x.sum() > 0, true_fn, false_fn, (x,)) * 2


x = torch.arange(3, dtype=torch.float32)
print("pred true:", [round(v, 4) for v in f(x).tolist()])
print("pred false:", [round(v, 4) for v in f(-x).tolist()])
