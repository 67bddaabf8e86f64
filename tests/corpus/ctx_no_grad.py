"""torch.no_grad() spanning a graph break: the grad mode is exited before the
break and re-entered in the resume function.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    a = x * 2
    with torch.no_grad():
        b = a + 1
        torch._dynamo.graph_break()  # break inside no_grad
        c = b * 3
    d = c + a
    return a, b, c, d


x = torch.arange(3, dtype=torch.float32).requires_grad_()
for i in range(2):
    for name, t in zip("abcd", f(x)):
        print(f"call {i} {name}: {t.tolist()} requires_grad={t.requires_grad}")
print("grad enabled after:", torch.is_grad_enabled())
