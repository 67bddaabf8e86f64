"""A crash inside a compiled graph: graph 2 indexes with a value only known at
run time, out of range. Run with `python -m dyndbg --post-mortem -c c` to land
at the failing call of graph 2 with the inputs it was given on the stack.
"""
import torch


@torch.compile(backend="eager")
def f(x, idx):
    h = x.sin() * 2
    print("graph break")      # graph 1 ends here
    return h[idx] + 1         # graph 2: idx holds 7, x has 4 elements


f(torch.arange(4, dtype=torch.float32), torch.tensor([1, 7]))
