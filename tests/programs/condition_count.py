"""A breakpoint condition with a side effect (it counts its evaluations),
false until the fourth call: each hit must evaluate it exactly once."""
import torch

evaluations = []


def seen() -> bool:
    evaluations.append(1)
    return False


@torch.compile(backend="eager")
def f(x, i):
    y = x + i
    torch._dynamo.graph_break()     # the breakpoint's line (its generated code)
    return y * 2


for k in range(6):
    f(torch.ones(2), torch.tensor(k))
print("evaluations", len(evaluations))
