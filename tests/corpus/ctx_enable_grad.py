"""torch.enable_grad() nested inside torch.no_grad(), with a graph break in
the inner block, so both grad modes are restored in the resume function.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
            torch._dynamo.graph_break()  # break inside enable_grad in no_grad
            c = b + 1
        d = c * 2
    return a, b, c, d


x = torch.ones(3, requires_grad=True)
for i in range(2):
    outs = f(x)
    print(f"call {i}:", [t.requires_grad for t in outs], [t.tolist() for t in outs])
with torch.no_grad():
    print("under outer no_grad:", [t.requires_grad for t in f(x)])
