"""dyndbg's overhead, measured side by side in one run.

a-c: plain and debugged phases of the same loop alternate inside one process
     (dyndbg attached with the same commands `python -m dyndbg -c ...` would
     run, then detached), so the machine's process-to-process noise cancels;
     the ratio is the median of the per-pair ratios.
d-f: separate processes, alternating, repeated; medians.
g:   as a, with --post-mortem's recording of the stack before each call out
     of generated code (printed after c, measured like a-c).
h:   as a, with `record on`: every generated instruction recorded with its
     stack and locals (measured like a-c).
Prints ratios; checks nothing (the README lists the targets). The header
names the Python and the tracing mechanism dyndbg used (sys.monitoring on
3.12+, sys.settrace on 3.11); --tracer settrace measures the settrace path
where both exist.

    python bench/overhead.py [--rounds R] [--calls N] [--steps K] [--tracer settrace]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOAD = str(HERE / "workload.py")
PY = sys.executable
DYNDBG = [PY, "-m", "dyndbg", "--no-rc"]  # a ~/.dyndbgrc must not change the figures
# The loop's own code: the graph-break line of `step` in workload.py.
LOOP_LINE = next(i for i, line in enumerate(open(WORKLOAD), 1) if "graph_break()" in line)
ENV = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(HERE.parent)}


def run(argv: list[str], stdin: str = "", env: dict | None = None) -> dict:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=HERE.parent,
                          env={**ENV, **(env or {})}, timeout=900)
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[6:])
    raise RuntimeError(f"no BENCH line from {argv}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def alternate(rounds: int, calls: int, commands: list[str],
              env: dict | None = None) -> tuple[float, float, float, str]:
    """(plain us/call, debugged us/call, median paired ratio, tracing mechanism)
    from one process."""
    result = run([PY, WORKLOAD, "alternate", str(rounds), str(calls), *commands], env=env)
    plain, debugged = result["plain_us"], result["debugged_us"]
    ratios = [d / p for p, d in zip(plain, debugged)]
    return (statistics.median(plain), statistics.median(debugged), statistics.median(ratios),
            result["tracer"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=2500)
    parser.add_argument("--only-alternating", action="store_true",
                        help="a-c, g and h only (the in-process rows)")
    parser.add_argument("--tracer", choices=["default", "settrace"], default="default",
                        help="settrace: force the sys.settrace mechanism (DYNDBG_TRACER)")
    args = parser.parse_args()
    if args.tracer == "settrace":
        ENV["DYNDBG_TRACER"] = "settrace"
    print(f"dyndbg overhead, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"loop: a compiled function with a graph break (eager), {args.calls} calls a phase")
    configs = {
        "a. -c continue, no breakpoints": ["continue"],
        "b. breakpoint on a graph not called": ["b graph 1", "continue"],
        "c. false conditional bp in the loop": [f"b workload.py:{LOOP_LINE}, x is None",
                                                "continue"],
    }
    c_per_call = 0.0
    for k, (name, commands) in enumerate(configs.items()):
        plain, debugged, ratio, tracer = alternate(args.rounds, args.calls, commands)
        if k == 0:
            print(f"tracing mechanism: {tracer}")
            print(f"{'configuration':<44} {'plain us':>9} {'dyndbg us':>10} {'ratio':>6}")
        print(f"{name:<44} {plain:>9.1f} {debugged:>10.1f} {ratio:>6.2f}")
        c_per_call = debugged
    plain, debugged, ratio, _ = alternate(args.rounds, args.calls, ["continue"],
                                          env={"BENCH_POST_MORTEM": "1"})
    print(f"{'g. --post-mortem -c continue (failed calls)':<44} {plain:>9.1f} {debugged:>10.1f} "
          f"{ratio:>6.2f}")
    plain, debugged, ratio, _ = alternate(args.rounds, args.calls, ["record on", "continue"])
    print(f"{'h. record on, -c continue (history)':<44} {plain:>9.1f} {debugged:>10.1f} "
          f"{ratio:>6.2f}")
    if args.only_alternating:
        return

    calls = [WORKLOAD, "calls", str(args.calls)]
    plain_runs, torch_runs, compile_plain, compile_dyndbg, rates = [], [], [], [], []
    for _ in range(max(3, args.rounds // 2)):
        plain_runs.append(run([PY, *calls])["per_call_us"])
        torch_runs.append(run([PY, *calls], stdin="c\n" * 20,
                              env={"BENCH_TORCH_DEBUGGER": "1"})["per_call_us"])
        compile_plain.append(run([PY, WORKLOAD, "compile"])["compile_s"])
        compile_dyndbg.append(run([*DYNDBG, "-c", "continue", WORKLOAD, "compile"])["compile_s"])
        rates.append(stepping_rate(args.steps))
    plain, torch_debugger = statistics.median(plain_runs), statistics.median(torch_runs)
    print(f"{'d. torch bytecode_debugger, continue mode':<44} {plain:>9.1f} {torch_debugger:>10.1f} "
          f"{torch_debugger / plain:>6.2f}")
    print(f"   c is {torch_debugger / c_per_call:.1f}x faster than d")
    cp, cd = statistics.median(compile_plain), statistics.median(compile_dyndbg)
    print(f"{'e. first compile, 6-layer MLP (s)':<44} {cp:>9.3f} {cd:>10.3f} {cd / cp:>6.2f}")
    print(f"f. stepping, scripted, stop display on: {statistics.median(rates):.0f} stops/s")


def stepping_rate(steps: int) -> float:
    """Stops per second in scripted mode, each stop rendered: the difference
    between runs of 2K and K steps, so start-up and compile cancel out."""
    def timed(count: int) -> tuple[float, int]:
        start = time.perf_counter()
        proc = subprocess.run([*DYNDBG, WORKLOAD, "calls", "100"], input="s\n" * count + "c\n",
                              capture_output=True, text=True, cwd=HERE.parent, env=ENV,
                              timeout=900)
        return time.perf_counter() - start, proc.stdout.count("\n> ")
    short_time, short_stops = timed(steps)
    long_time, long_stops = timed(2 * steps)
    return (long_stops - short_stops) / max(long_time - short_time, 1e-9)


if __name__ == "__main__":
    main()
