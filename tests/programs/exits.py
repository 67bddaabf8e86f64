"""Ends from inside compiled code: sys.exit(N), os._exit(N), or closing stdout."""
import os
import sys

import torch

how = sys.argv[1]


@torch.compile(backend="eager")
def f(x):
    y = x + 1
    if how == "sys.exit":
        sys.exit(4)
    if how == "os._exit":
        sys.stdout.flush()
        os._exit(5)
    return y * 2


print("before", flush=True)
result = f(torch.ones(2))
if how == "close-stdout":
    sys.stdout.close()
    sys.stderr.write(f"after close: {result.tolist()}\n")
    f(torch.ones(2))
    sys.stderr.write("still running\n")
