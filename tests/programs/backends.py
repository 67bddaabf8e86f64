"""One small compiled function, compiled with the backend named on the command line."""
import sys

import torch

backend = sys.argv[1] if len(sys.argv) > 1 else "eager"


@torch.compile(backend=backend)
def f(x, y):
    a = x.sin() + y
    return a * 2, a.sum()


out, total = f(torch.arange(4.0), torch.ones(4))
print("out:", [round(v, 4) for v in out.tolist()], "total:", round(total.item(), 4))
