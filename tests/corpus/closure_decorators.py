"""Compiled functions that are closures (issue 35): a `functools.wraps`
decorator's wrapper, compiled as Hugging Face models' forwards are, around a
function and around a module's forward with a graph break; a closure two
levels deep; and a free variable that a closure the frame calls rebinds
after a graph break (the guards read what the frame had at its start)."""
import functools

import torch


def scaled(func):
    @functools.wraps(func)
    def wrapper(*args, scale=2.0, **kwargs):
        return func(*args, **kwargs) * scale
    return wrapper


@scaled
def body(x):
    return x.sin() + 1


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.full((3,), 0.5))

    @scaled
    def forward(self, x):
        y = x * self.w
        torch._dynamo.graph_break()
        return y.cos()


def outer(k):
    offset = torch.full((3,), float(k))

    def middle(m):
        def inner(x):            # free variables from two levels: offset and k, and m
            return (x + offset) * k - m
        return inner
    return middle(0.5)


def counting():
    calls = 0

    def bump():
        nonlocal calls
        calls += 1

    def f(x):
        y = x * (calls + 1)      # guarded: calls == its value at the frame's start
        torch._dynamo.graph_break()
        bump()                   # rebinds the cell the frame's guards read
        return y + calls
    return f


x = torch.arange(3, dtype=torch.float32)
layer = Layer()
with torch.no_grad():
    compiled_body = torch.compile(body, backend="eager")
    compiled_layer = torch.compile(layer, backend="eager")
    compiled_inner = torch.compile(outer(2), backend="eager")
    compiled_count = torch.compile(counting(), backend="eager")
    for i in range(2):
        print(f"call {i}:", compiled_body(x).tolist(), compiled_body(x, scale=3.0).tolist())
        print("  layer:", [round(v, 4) for v in compiled_layer(x).tolist()])
        print("  inner:", compiled_inner(x).tolist())
        print("  count:", compiled_count(x).tolist())
