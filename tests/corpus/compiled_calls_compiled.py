"""A compiled function calling other compiled functions (f -> g -> h, all
torch.compile'd): dynamo inlines the inner ones; g also has a graph break.
"""
import torch


@torch.compile(backend="eager")
def h(x):
    return x.exp() - 1


@torch.compile(backend="eager")
def g(x):
    y = h(x) * 2                     # compiled h inlined into g
    torch._dynamo.graph_break()
    return y + 1


@torch.compile(backend="eager")
def f(x):
    return g(x * 0.5).sum() + h(x).sum()


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    print(f"call {i}: f={round(f(x).item(), 4)}")
print("g alone:", [round(v, 4) for v in g(x).tolist()])
