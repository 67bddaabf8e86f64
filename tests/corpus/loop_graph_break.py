"""A graph break inside a short Python loop: each iteration splits the
compiled frame, so the loop body resumes in a resume function per break.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    acc = x * 0
    for i in range(3):
        acc = acc + x * (i + 1)      # graph before the break
        torch._dynamo.graph_break()  # break inside the loop body
        acc = acc - 1                # resume function continues the loop
    return acc


x = torch.arange(3, dtype=torch.float32)
for call in range(2):
    print(f"call {call}:", f(x).tolist())
