"""In-place ops on inputs in compiled code (aot_eager, so functionalization
writes them back): mul_ before a graph break, add_ and a slice copy after.
"""
import torch


@torch.compile(backend="aot_eager")
def f(x, y):
    x.mul_(2)                        # mutate input before the break
    torch._dynamo.graph_break()
    x.add_(y)                        # mutate input after the break
    y[0] = -1.0                      # slice assignment on the other input
    return x.sum()


x = torch.arange(3, dtype=torch.float32)
y = torch.ones(3)
for i in range(2):
    s = f(x, y)
    print(f"call {i}: sum={s.item()} x={x.tolist()} y={y.tolist()}")
