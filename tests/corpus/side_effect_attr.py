"""Attribute stores on a plain Python object (new attribute, updated attribute,
tensor attribute) inside a compiled function, replayed around a graph break.
"""
import torch


class Box:
    def __init__(self):
        self.n = 0


box = Box()


@torch.compile(backend="eager")
def f(x, obj):
    obj.n = obj.n + 1            # int attribute update
    obj.t = x + obj.n            # new tensor attribute
    torch._dynamo.graph_break()
    obj.flag = True              # new bool attribute, after the break
    return obj.t * 2


x = torch.arange(3, dtype=torch.float32)
for i in range(2):
    out = f(x, box)
    print(f"call {i}:", out.tolist(), "n:", box.n, "t:", box.t.tolist(), "flag:", box.flag)
