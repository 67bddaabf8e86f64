"""The shape of torch's own bytecode-debugger tests: two compiled functions,
each with torch's marker (bytecode_debugger.breakpoint()), and a four-line
body with a graph break in the middle."""
import torch
from torch._dynamo import bytecode_debugger


@torch.compile(backend="eager")
def first(x):
    bytecode_debugger.breakpoint()
    return x + 1


@torch.compile(backend="eager")
def second(x):
    y = x * 2
    bytecode_debugger.breakpoint()
    return y - 1


@torch.compile(backend="eager")
def four_lines(x, n):
    a = x + n
    print("graph break in the middle")
    b = a * n
    return b.sum()


for n in range(1, 3):
    print(first(torch.ones(2)).tolist(), second(torch.ones(2)).tolist(),
          round(float(four_lines(torch.ones(2), n)), 2))
