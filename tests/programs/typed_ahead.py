"""Pauses in which a test types ahead: keys typed while the program runs are
for dyndbg's next prompt, or, past the command that resumes it, for the
program's own input(). argv[1]: the length of each pause in seconds."""
import sys
import time

import torch

PAUSE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5


@torch.compile(backend="eager")
def f(x):
    return x + 1


x = f(torch.zeros(3))     # dyndbg's first stop
print("pause 1", flush=True)
time.sleep(PAUSE)
x = f(x)
print("pause 2", flush=True)
time.sleep(PAUSE)
x = f(x)
print("answer:", repr(input("question? ")), flush=True)
x = f(x)
print("done", x.tolist(), flush=True)
