"""Compiled calls with plain Python (sleeping) between them, until `running`
is set false: a Ctrl-C lands outside generated code all but a few
microseconds in every 50 milliseconds."""
import time

import torch


@torch.compile(backend="eager")
def f(x):
    return x + 1


running = True
x = f(torch.zeros(3))     # compiled before the loop is announced
print("looping", flush=True)
while running:
    time.sleep(0.05)
    x = f(x)
print("done", flush=True)
