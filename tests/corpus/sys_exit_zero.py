"""Compiled work with a graph break, then the script ends with sys.exit(0)
(SystemExit raised at module level after compiled frames have finished).
"""
import sys

import torch


@torch.compile(backend="eager")
def f(x):
    y = x.cos() * 2
    torch._dynamo.graph_break()
    return y + 1


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    print(f"call {i}:", [round(v, 4) for v in f(x).tolist()])
sys.exit(0)
print("not reached")
