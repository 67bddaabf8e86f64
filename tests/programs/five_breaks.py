"""Five kinds of graph break in one compiled function (tests/test_why.py)."""
import torch


@torch._dynamo.disable
def not_traced(x):
    return x + 1


def f(x, y):
    a = x.sin() + y
    print("graph break here")         # a builtin
    b = a * 2
    if b.sum() > 0:                    # a data-dependent branch
        b = b + 1
    n = b.sum().item()                 # Tensor.item()
    b = b * n
    torch._dynamo.graph_break()        # an explicit break
    b = b.cos()
    b = not_traced(b)                  # a call dynamo may not trace
    return b.sum()


def inputs():
    return torch.ones(3), torch.ones(3)


if __name__ == "__main__":
    print(round(torch.compile(f, backend="eager")(*inputs()).item(), 4))
