"""A helper wrapped with torch._dynamo.disable called from compiled code:
dynamo skips it (a graph break) and runs it eagerly, then resumes.
"""
import torch

trace = []


@torch._dynamo.disable
def helper(x):
    trace.append(int(x.numel()))     # runs eagerly, never traced
    return x + 100


@torch.compile(backend="eager")
def f(x):
    a = x * 2
    b = helper(a)                    # disabled call -> graph break
    return b - a


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    print(f"call {i}:", f(x).tolist())
print("trace:", trace)
