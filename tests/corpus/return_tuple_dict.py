"""A compiled function (aot_eager backend) returning a nested structure: a
tuple holding a dict of tensors, a list, and a Python int.
"""
import torch


@torch.compile(backend="aot_eager")
def f(x, y):
    stats = {"sum": x + y, "prod": x * y}
    torch._dynamo.graph_break()
    stats["diff"] = x - y
    return stats, [x.max(), y.min()], x.shape[0]


x = torch.arange(3, dtype=torch.float32)
y = torch.ones(3) * 2
for i in range(2):
    stats, extremes, n = f(x, y)
    print(f"call {i}:", {k: v.tolist() for k, v in sorted(stats.items())},
          [t.item() for t in extremes], n)
