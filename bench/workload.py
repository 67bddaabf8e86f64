"""The timed program for bench/overhead.py: many calls of a compiled function
with a graph break (eager backend). Prints one JSON line with its timings.

    python bench/workload.py calls N            per-call time of the loop
    python bench/workload.py alternate R N CMD...  plain and dyndbg phases in turn
    python bench/workload.py stepping R K        scripted stepping, K and 2K steps in turn
    python bench/workload.py compile            first-compile time of an MLP
Set BENCH_TORCH_DEBUGGER=1 to run the loop inside torch's own bytecode debugger.
"""
import json
import os
import sys
import time

import torch

# One intra-op thread: on a small machine the thread pool's spinning makes
# per-process timings vary more than the overhead being measured.
torch.set_num_threads(1)


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


def warmed_up() -> tuple:
    """The loop's inputs after `other` and 20 calls of `step` (compiled, caches
    settled), for the in-process modes."""
    x, w = torch.ones(8, 8) * 0.01, torch.eye(8)
    other(x)
    for _ in range(20):
        x = step(x, w)
    return x, w


def alternating(rounds: int, n: int, commands: list[str]) -> dict:
    """Plain and debugged phases of the same loop, alternating in one process
    (so process-to-process noise cancels): dyndbg attached with `commands`
    as `python -m dyndbg -c ...` would run them, then detached."""
    import io
    from dyndbg.attach import attach

    x, w = warmed_up()
    plain, debugged, tracer = [], [], ""
    for _ in range(rounds):
        for phase in (plain, debugged):
            engine = attach(io.StringIO(), commands, read_rc=False) if phase is debugged else None
            if engine is not None:  # as `python -m dyndbg --post-mortem` sets it
                engine.keep_failed_calls = os.environ.get("BENCH_POST_MORTEM") == "1"
                tracer = engine.tracer.name
            x = step(x, w)           # the first stop runs the commands; not timed
            start = time.perf_counter()
            for _ in range(n):
                x = step(x, w)
            phase.append((time.perf_counter() - start) / n * 1e6)
            if engine is not None:
                engine.detach()
    return {"plain_us": plain, "debugged_us": debugged, "tracer": tracer}


def stepping(rounds: int, steps: int) -> dict:
    """Scripted stepping in one process: dyndbg attached with `s` K times, then
    `continue`, each stop rendered (into a string, as a pipe would take it);
    runs of K and 2K steps alternate, and their differences are the stepping
    alone (attaching, the first stop and the loop's calls cancel out)."""
    import io
    from dyndbg.attach import attach

    x, w = warmed_up()
    runs: dict[int, list] = {steps: [], 2 * steps: []}
    for _ in range(rounds):
        for count, timed in runs.items():
            out = io.StringIO()
            engine = attach(out, ["s"] * count + ["continue"], read_rc=False)
            start = time.perf_counter()
            x = step(x, w)                      # the first stop
            while engine.frontend.pending:      # until the commands are spent
                x = step(x, w)
            timed.append((time.perf_counter() - start, out.getvalue().count("\n> ")))
            engine.detach()
    return {"short": runs[steps], "long": runs[2 * steps]}


def compile_time() -> dict:
    model = torch.nn.Sequential(*[m for _ in range(6) for m in (torch.nn.Linear(32, 32),
                                                                torch.nn.ReLU())])
    compiled = torch.compile(model, backend="eager")
    x = torch.ones(4, 32)
    other(torch.ones(2))   # dynamo's first use (and dyndbg's first stop) happen here
    start = time.perf_counter()
    compiled(x)
    return {"compile_s": time.perf_counter() - start}


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "alternate":
        result = alternating(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    elif what == "stepping":
        result = stepping(int(sys.argv[2]), int(sys.argv[3]))
    elif what == "calls":
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
