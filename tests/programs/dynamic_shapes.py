"""Dynamic shapes of each kind (issue 51), for `guards`, `why shapes` and
`why` at a recompile made by a size: automatic dynamic (grow called with 8,
then 6 and 7) then specialized again by a loop bound; mark_dynamic with a
shape guard made in a function the compiled one inlines, which size 7 then
fails (a recompile made by a shape guard); an unbacked symbol
from .item(); dynamic=True with a divisibility guard; a size used as a Python
int. The comments name what each line makes."""
import torch

torch._dynamo.config.capture_scalar_outputs = True    # .item() gives an unbacked symbol


def doubled_if_even(t):
    if t.shape[0] % 2 == 0:                            # the inlined shape guard
        return t * 2
    return t


@torch.compile(backend="eager")
def grow(x, n):
    if x.shape[0] == 8:                                # a shape guard once dim 0 is dynamic
        return x * n
    y = x + n
    for i in range(1, y.shape[0]):                     # a loop bound: specializes dim 0
        y = y + i
    return y


@torch.compile(backend="eager")
def marked(x, y):
    x = doubled_if_even(x)                             # calls the inlined shape guard
    k = y.sum().item()                                 # an unbacked symbol
    return x.sum() * k


@torch.compile(backend="eager", dynamic=True)
def halves(x, scale):
    weights = [0.5] * x.shape[1]                       # a Python int: specializes dim 1
    return x.sum(1).reshape(2, -1).sum(1) * sum(weights) * scale  # a divisibility guard


for size in (8, 6, 7):
    print("grow", size, grow(torch.ones(size), 2).sum().item())
for size in (6, 7):                                    # 7 fails the shape guard: a recompile
    x = torch.ones(size)
    torch._dynamo.mark_dynamic(x, 0)
    print("marked", size, marked(x, torch.tensor([3])).item())
print("halves", halves(torch.ones(4, 3), 3).tolist())
