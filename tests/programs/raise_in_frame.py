"""A compiled function whose own generated frame raises: the call of a
disabled validator (made by the generated code, after graph 1) fails in
the first call; the second call passes. Plain python prints the caught
error, then `ok`."""
import torch


@torch._dynamo.disable
def validate(t):
    if t.sum() > 10:
        raise ValueError("sum too large")


@torch.compile(backend="eager")
def f(x):
    y = x * 2
    validate(y)
    return y + 1


try:
    f(torch.ones(3) * 5)
except ValueError as e:
    print("caught:", e)
print("ok:", f(torch.ones(3)).tolist())
