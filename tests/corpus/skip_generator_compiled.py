"""torch.compile applied to a generator function: dynamo declines it ("Attempt
to trace generator") and runs it eagerly; the compiled body() it calls still
runs dynamo-generated code.
"""
import torch


@torch.compile(backend="eager")
def body(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y + 1


@torch.compile(backend="eager")
def gen(x):
    for i in range(2):
        yield body(x + i)


x = torch.arange(3, dtype=torch.float32)
print("values:", [t.tolist() for t in gen(x)])
print("values again:", [t.tolist() for t in gen(x)])
