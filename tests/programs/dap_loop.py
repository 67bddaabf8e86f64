"""A compiled function called in a loop until a file exists (argv[1]), at
most 120 s: a running program to pause (tests/test_dap.py). What it prints
does not depend on how long it ran."""
import os
import sys
import time

import torch


@torch.compile(backend="eager")
def halve(x):
    return x * 0.5 + 1


x = torch.zeros(3)
print("looping", flush=True)
deadline = time.monotonic() + 120
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    x = halve(x)
print("done", x.shape)
