"""A compiled function that kills the process (os.abort, a graph break):
no Python exception, no post mortem; only what was flushed before survives."""
import os

import torch


@torch.compile(backend="eager")
def f(x):
    y = x + 1
    os.abort()
    return y


print("calling", flush=True)
f(torch.ones(3))
print("not reached", flush=True)
