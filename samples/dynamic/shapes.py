"""Why a size is dynamic, specialized or guarded (README's `why shapes`):
f is called with sizes 8, 6 and 7, so automatic dynamic makes dim 0 of x
symbolic, and then a loop bound makes it a constant again; g's dim 0 is
marked dynamic, with a shape guard on it."""
import torch


@torch.compile(backend="eager")
def f(x):
    if x.shape[0] == 8:                # a shape guard, once dim 0 is dynamic
        return x * 2
    y = x + 1
    for i in range(1, y.shape[0]):     # a loop bound: dim 0 becomes a constant again
        y = y + i
    return y


@torch.compile(backend="eager")
def g(x):
    if x.shape[0] % 2 == 0:            # a shape guard on a dim marked dynamic
        return x.sum()
    return x.mean()


for size in (8, 6, 7):
    print(size, f(torch.ones(size)).sum().item())
x = torch.ones(6)
torch._dynamo.mark_dynamic(x, 0)
print(g(x).item())
