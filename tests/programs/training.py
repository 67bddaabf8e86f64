"""One training step, compiled with the backend named on the command line: an input
that requires grad makes AOT wrap the graphs in its autograd Function."""
import sys

import torch

backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"


@torch.compile(backend=backend)
def f(x, y):
    a = x.sin() + y
    return a * 2, a.sum()


x = torch.arange(4.0, requires_grad=True)
out, total = f(x, torch.ones(4))
total.backward()
print("total:", round(total.item(), 4), "grad:", [round(v, 4) for v in x.grad.tolist()])
