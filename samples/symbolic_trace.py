"""Watch dynamo trace f: `catch trace torch_dynamo_resume_in_f*` stops while
dynamo compiles the rest of f after its first graph break (a resume function),
whose data-dependent `if` is a second graph break.

    python -m dyndbg --catch-trace 'torch_dynamo_resume_in_f*' samples/symbolic_trace.py
"""
import torch


def scale(t, k):
    return t * k                 # inlined by dynamo


@torch.compile(backend="eager")
def f(x, n):
    a = x.sin() + n
    print("first graph break")   # print() is not traceable: graph break 1
    b = scale(a, 2).relu()       # traced in the resume function
    if b.sum() > 0:              # data-dependent branch: graph break 2, in the resume function
        b = b + 1
    return b.cos()


x = torch.arange(4, dtype=torch.float32)
print(f"f: {[round(v, 4) for v in f(x, 3).tolist()]}")
