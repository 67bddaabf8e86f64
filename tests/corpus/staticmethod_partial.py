"""Compiled code calling a staticmethod and a functools.partial, and compiling
a partial object directly; a graph break separates the two calls.
"""
import functools

import torch


class Ops:
    @staticmethod
    def affine(x, a, b):
        return x * a + b


scale3 = functools.partial(Ops.affine, a=3.0, b=1.0)


@torch.compile(backend="eager")
def f(x):
    y = Ops.affine(x, 2.0, 0.5)      # staticmethod inlined
    torch._dynamo.graph_break()
    return scale3(y)                 # partial inlined after the break


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    print(f"call {i}:", f(x).tolist())
cp = torch.compile(functools.partial(Ops.affine, b=-1.0), backend="eager")
print("compiled partial:", cp(x, a=4.0).tolist())
