"""Record and step back through generated code:

    python -m dyndbg --record --post-mortem samples/step_back.py

then `c`: the ZeroDivisionError raised in the resume function stops post
mortem; `back` shows the failing BINARY_OP's operands (31415 and 0), and
further back the call of graph 1, which changed x in place (x.add_(1)):
`p x` before that call shows the old values, after it the new ones.
"""
import torch


@torch.compile(backend="eager")
def scale(x, d):
    x.add_(1)                     # graph 1 changes x in place
    torch._dynamo.graph_break()   # the rest runs in a resume function
    n = 31415
    return x * (n / d)            # d == 0: ZeroDivisionError in generated code


x = torch.ones(3)
print("x before:", x.tolist())
print(scale(x, 0).tolist())
