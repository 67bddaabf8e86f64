"""Reports what a trace function could see: during dynamo's compile, in a plain
function called from generated code, and between compiled calls. Under dyndbg
every line must read as in a plain run."""
import sys

import torch
import torch._dynamo.utils

from tracestate import anything_traced, frame_traced, ordinary_code_traced

compile_traces = []


def backend(gm, example_inputs):
    compile_traces.append(anything_traced())  # dynamo's compiler must run untraced
    return gm.forward


@torch._dynamo.disable
def helper(x):
    # A plain frame called from generated code: it must not be traced.
    frame = sys._getframe()
    print("helper frame traced:", frame_traced(frame))
    return x


def inner(x):
    torch._dynamo.graph_break()
    return x * 3


@torch.compile(backend=backend)
def f(x):
    y = x + 1
    helper(y)
    z = inner(y)            # inner compiles while f's generated code runs
    return z.sum()


print("trace before:", ordinary_code_traced())
for i in range(2):
    print("result:", f(torch.arange(3.0)).item())
    print("trace between calls:", ordinary_code_traced())
print("traced during compile:", any(compile_traces), len(compile_traces))
frames = {k: v for k, v in torch._dynamo.utils.counters["frames"].items()}
print("dynamo frame counters:", sorted(frames.items()))
print("unique graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
