"""A compiled function runs once, then the script calls sys.exit(3).
Use this to check the debugger reports the program's exit status.
"""
import sys

import torch


@torch.compile(backend="eager")
def f(x):
    return (x + 1) * 2


print("result:", f(torch.arange(3)).tolist())
sys.exit(3)                      # exit status 3, no traceback
