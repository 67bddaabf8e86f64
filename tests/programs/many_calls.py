"""Hundreds of compiled calls, then a function compiled late, then more calls.
Prints in how many of the calls tracing was on (a trace function, or
sys.monitoring events in the generated code)."""
import torch

from tracestate import generated_code_traced


@torch.compile(backend="eager")
def f(x):
    y = x.cos()
    torch._dynamo.graph_break()
    return y + 1


@torch.compile(backend="eager")
def late(x):
    return x * 3


x = torch.ones(3)
traced_calls = 0
for i in range(300):
    x = f(x) * 0.5
    traced_calls += generated_code_traced()
print("calls with a trace function installed:", traced_calls)
print("late:", late(x).tolist())
for i in range(3):
    x = f(x)
print("done:", [round(v, 4) for v in x.tolist()])
