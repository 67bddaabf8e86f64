"""Line stepping over a loop in generated code (tests/test_line_step.py).

print() in the loop is a graph break inside a loop, so dynamo leaves g's
resume function as it is: that loop runs as the function's own bytecode (a
jump back each time round), all on one line.
"""
import torch


@torch.compile(backend="eager")
def g(x):
    x = x + 1
    torch._dynamo.graph_break()    # the rest runs in a resume function
    for i in range(3): x = x * 2; print("tick", i)  # noqa: E702 - one line on purpose
    return x


print(g(torch.zeros(2)).tolist())
