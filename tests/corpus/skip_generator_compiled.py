"""torch.compile applied to a generator function: dynamo declines to compile
the generator frame itself, so it runs eagerly (its callees may still compile).
"""
import torch


def body(x):
    return x * 2 + 1


@torch.compile(backend="eager")
def gen(x):
    for i in range(2):
        yield body(x + i)


x = torch.arange(3, dtype=torch.float32)
print("values:", [t.tolist() for t in gen(x)])
print("values again:", [t.tolist() for t in gen(x)])
