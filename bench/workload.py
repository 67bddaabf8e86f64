"""The timed program for bench/overhead.py: many calls of a compiled function
with a graph break (eager backend). Prints one JSON line with its timings.

    python bench/workload.py calls N            per-call time of the loop
    python bench/workload.py compile            first-compile time of an MLP
Set BENCH_TORCH_DEBUGGER=1 to run the loop inside torch's own bytecode debugger.
"""
import json
import os
import sys
import time

import torch


@torch.compile(backend="eager")
def other(x):
    # Compiled once before the loop: its graph is the one "never called by the loop".
    return x - 1


@torch.compile(backend="eager")
def step(x, w):
    y = torch.tanh(x @ w)
    torch._dynamo.graph_break()     # the loop runs two graphs and a resume function
    return y * 0.5 + x


def calls(n: int) -> dict:
    x, w = torch.ones(8, 8) * 0.01, torch.eye(8)
    other(x)
    for _ in range(20):             # warm-up: compile and settle caches
        step(x, w)
    start = time.perf_counter()
    for _ in range(n):
        x = step(x, w)
    elapsed = time.perf_counter() - start
    return {"per_call_us": elapsed / n * 1e6, "checksum": round(float(x.sum()), 3)}


def compile_time() -> dict:
    model = torch.nn.Sequential(*[m for _ in range(6) for m in (torch.nn.Linear(32, 32),
                                                                torch.nn.ReLU())])
    compiled = torch.compile(model, backend="eager")
    x = torch.ones(4, 32)
    start = time.perf_counter()
    compiled(x)
    return {"compile_s": time.perf_counter() - start}


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "calls":
        n = int(sys.argv[2])
        if os.environ.get("BENCH_TORCH_DEBUGGER") == "1":
            import torch._dynamo.bytecode_debugger as torch_debugger
            with torch_debugger.debug():
                result = calls(n)
        else:
            result = calls(n)
    else:
        result = compile_time()
    print("BENCH " + json.dumps(result), flush=True)
