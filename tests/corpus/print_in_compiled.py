"""print() inside compiled code (with a tensor and with plain values): each
print is a graph break that runs eagerly between graphs.
"""
import torch


@torch.compile(backend="eager")
def f(x, tag):
    a = x + 1
    print("tag:", tag, "a:", a.tolist())   # break 1 (prints a tensor's values)
    b = a * a
    print("shape:", tuple(b.shape))         # break 2
    return b - x


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    print(f"call {i}:", f(x, "demo").tolist())
