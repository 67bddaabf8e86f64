"""Closures compiled (issue 48): a free variable holding a builtin (`float`),
and one the compiled frame stores to (`nonlocal count`)."""
import torch


def make(t):
    def fn(x):
        x = x + 1
        return t(x)
    return fn


def counter():
    count = 0

    def bump(x):
        nonlocal count
        count = count + 1
        return x * count
    return bump, lambda: count


cf = torch.compile(make(float), backend="eager", fullgraph=True, dynamic=False)
print(cf(torch.tensor([1.0])))
bump, read = counter()
print(torch.compile(bump, backend="eager")(torch.ones(2)), read())
