"""A graph break inside `with torch.no_grad():`: dynamo must exit the grad
mode before the break and re-enter it in the resume function.
Watch the no_grad setup/teardown code around the break.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    a = x * 2                    # grad enabled: a requires grad
    with torch.no_grad():
        b = x + 1                # graph 1, no grad
        torch._dynamo.graph_break()
        c = b * 3                # resume function, still no grad
    d = c + a                    # grad enabled again
    return a, b, c, d


x = torch.ones(3, requires_grad=True)
for name, t in zip("abcd", f(x)):
    print(f"{name}: {t.tolist()} requires_grad={t.requires_grad}")
