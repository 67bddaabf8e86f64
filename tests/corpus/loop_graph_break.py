"""Graph breaks and loops. A break inside a for loop makes dynamo skip f's
frame (it runs as-is) while step(), called from the loop, compiles with its
own break each iteration; g breaks before a loop that its resume unrolls.
"""
import torch


def step(acc, w):
    acc = acc + w                    # graph before the break
    torch._dynamo.graph_break()      # break inside step's frame
    return acc - 1                   # step's resume function


@torch.compile(backend="eager")
def f(x):
    acc = x * 0
    for i in range(3):               # break in this loop -> frame skipped
        acc = step(acc, x * (i + 1))
    return acc


@torch.compile(backend="eager")
def g(x):
    y = x + 1
    torch._dynamo.graph_break()      # break before the loop
    for i in range(3):               # unrolled in the resume function
        y = y * 2 - i
    return y


x = torch.arange(3, dtype=torch.float32)
for call in range(2):
    print(f"call {call}: f={f(x).tolist()} g={g(x).tolist()}")
