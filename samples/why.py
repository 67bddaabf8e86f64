"""Why dynamo made this code: three kinds of graph break, then a recompile
(README, "Why dynamo made this code")."""
import torch

scale = 1.0


@torch.compile(backend="eager")
def f(x):
    x = x * scale                      # guarded: the global `scale`
    print("printing")                  # print() is not traceable -> graph break
    if x.sum() > 0:                    # a branch on a tensor's value -> graph break
        x = x + 1
    torch._dynamo.graph_break()        # asked for -> graph break
    return x * 2


x = torch.arange(4.0)
f(x)
scale = 2.0                            # fails the guard on `scale` -> recompile
print(f(x))
