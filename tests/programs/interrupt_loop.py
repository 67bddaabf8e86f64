"""A loop of compiled calls for about two seconds, then two seconds of plain
Python (sleeping): Ctrl-C lands in generated code or outside it."""
import sys
import time

import torch


@torch.compile(backend="eager")
def f(x):
    # Heavy enough that a Ctrl-C during the loop lands inside the compiled call.
    y = (x @ x.T).cos() / 400
    torch._dynamo.graph_break()
    return ((y @ y).sin() + 1) * 0.5


x = torch.ones(400, 400)
x = f(x)            # compiled before the loop is announced: a Ctrl-C must not land in the compile
print("compiled loop", flush=True)
start = time.time()
# Nothing but the call in the loop: a Ctrl-C lands in it, not in plain code,
# all but a few microseconds in every few milliseconds.
while time.time() - start < float(sys.argv[1]):
    x = f(x)
print("plain part", flush=True)
time.sleep(float(sys.argv[2]))
print("done", round(float(x.sum()), 2), flush=True)
