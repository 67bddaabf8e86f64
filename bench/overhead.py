"""dyndbg's overhead, measured side by side in one run.

Each configuration runs bench/workload.py in a fresh process; configurations
alternate, each is repeated, and medians are compared. Prints ratios; checks
nothing (see README for the targets).

    python bench/overhead.py [--rounds R] [--calls N] [--steps K]
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
DYNDBG = [PY, "-m", "dyndbg"]
# The loop's own code: the graph-break line of `step` in workload.py.
LOOP_LINE = next(i for i, line in enumerate(open(WORKLOAD), 1) if "graph_break()" in line)


def run(argv: list[str], stdin: str = "", env: dict | None = None) -> dict:
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=HERE.parent,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})}, timeout=600)
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[6:])
    raise RuntimeError(f"no BENCH line from {argv}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    calls = [WORKLOAD, "calls", str(args.calls)]
    configs = {
        "plain": lambda: run([PY, *calls]),
        "a. dyndbg continue": lambda: run([*DYNDBG, "-c", "continue", *calls]),
        "b. bp on a graph not called": lambda: run(
            [*DYNDBG, "-c", "b graph 1", "-c", "continue", *calls]),
        "c. false conditional bp in loop": lambda: run(
            [*DYNDBG, "-c", f"b workload.py:{LOOP_LINE}, x is None", "-c", "continue", *calls]),
        "d. torch bytecode_debugger": lambda: run(
            [PY, *calls], stdin="c\n" * 20, env={"BENCH_TORCH_DEBUGGER": "1"}),
    }
    per_call: dict[str, list[float]] = {name: [] for name in configs}
    compile_s: dict[str, list[float]] = {"plain": [], "dyndbg": []}
    step_rates: list[float] = []
    for _ in range(args.rounds):
        for name, measure in configs.items():
            per_call[name].append(measure()["per_call_us"])
        compile_s["plain"].append(run([PY, WORKLOAD, "compile"])["compile_s"])
        compile_s["dyndbg"].append(
            run([*DYNDBG, "-c", "continue", WORKLOAD, "compile"])["compile_s"])
        step_rates.append(stepping_rate(args.steps))

    plain = statistics.median(per_call["plain"])
    print(f"dyndbg overhead, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"{args.rounds} rounds x {args.calls} calls, medians")
    print(f"{'configuration':<34} {'us/call':>9} {'x plain':>8}")
    for name, values in per_call.items():
        median = statistics.median(values)
        print(f"{name:<34} {median:>9.1f} {median / plain:>8.2f}")
    c = statistics.median(per_call["c. false conditional bp in loop"])
    d = statistics.median(per_call["d. torch bytecode_debugger"])
    print(f"{'c vs d (torch debugger / c)':<34} {'':>9} {d / c:>8.2f}")
    plain_c, dyndbg_c = (statistics.median(compile_s[k]) for k in ("plain", "dyndbg"))
    print(f"e. first compile, 6-layer MLP       plain {plain_c:.3f} s, dyndbg {dyndbg_c:.3f} s, "
          f"ratio {dyndbg_c / plain_c:.2f}")
    print(f"f. stepping, scripted, stop display on: {statistics.median(step_rates):.0f} stops/s")


def stepping_rate(steps: int) -> float:
    """Stops per second: the time of K scripted steps beyond a run with none."""
    def timed(commands: str) -> tuple[float, int]:
        start = time.perf_counter()
        proc = subprocess.run([*DYNDBG, WORKLOAD, "calls", "50"], input=commands,
                              capture_output=True, text=True, cwd=HERE.parent,
                              env={**os.environ, "NO_COLOR": "1"}, timeout=600)
        return time.perf_counter() - start, proc.stdout.count("\n> ")
    base, _ = timed("c\n")
    elapsed, stops = timed("s\n" * steps + "c\n")
    return (stops - 1) / max(elapsed - base, 1e-9)


if __name__ == "__main__":
    main()
