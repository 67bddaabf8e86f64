"""dyndbg's overhead, measured side by side in one run.

a-c: plain and debugged phases of the same loop alternate inside one process
     (dyndbg attached with the same commands `python -m dyndbg -c ...` would
     run, then detached), so the machine's process-to-process noise cancels;
     the ratio is the median of the per-pair ratios.
d, e: separate processes, alternating, repeated; medians.
f:   scripted stepping in one process: runs of K and 2K steps alternate, and
     the rate is the median of the pairs' differences (start-up, attaching
     and the first stop cancel out; from separate processes, start-up's
     variation swamped the stepping being timed).
g:   as a, with --post-mortem's recording of the stack before each call out
     of generated code (printed after c, measured like a-c).
h:   as a, with `record on`: every generated instruction recorded with its
     stack and locals (measured like a-c).
i:   a real model (tests/programs/tiny_gpt2.py) stepped through every
     generated instruction, over its plain run (separate processes).
j:   as a, with a line breakpoint inside the loop's first graph (`b
     workload.py:LINE` on `step`'s matmul line, which has no generated
     instruction: its location is the graph), its condition on a node
     value false: the graph's code is watched and the condition evaluated
     at each run of it (issue 50). `--rows aj` measures a and j alone,
     side by side.
Each dyndbg figure is given for each core (DYNDBG_CORE=python, then =c where
the compiled core was built), measured one after the other in this run.
Prints ratios; checks nothing (the README lists the targets). The header
names the Python and the tracing mechanism dyndbg used (sys.monitoring on
3.12+, sys.settrace on 3.11); --tracer settrace measures the settrace path
where both exist.

    python bench/overhead.py [--rounds R] [--calls N] [--steps K] [--tracer settrace]
                             [--core both|python|c] [--only-alternating] [--rows LETTERS]
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
# A line computed inside the loop's first graph (no generated instruction has it).
GRAPH_LINE = next(i for i, line in enumerate(open(WORKLOAD), 1) if "torch.tanh(x @ w)" in line)
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


CORES = ["python", "c"]   # DYNDBG_CORE: the pure-Python core and the compiled one


def built_cores() -> list[str]:
    """The cores this checkout can run (the compiled one only where it was built)."""
    probe = subprocess.run([PY, "-c", "from dyndbg import cores; print(cores.core())"],
                           capture_output=True, text=True, cwd=HERE.parent, env=ENV)
    return CORES if probe.stdout.strip() == "c" else ["python"]


def row(name: str, plain: float, per_core: dict[str, tuple[float, float]]) -> None:
    """A line of the table: the plain figure, then each core's figure and ratio."""
    cells = "".join(f" {value:>9.1f} {ratio:>6.2f}" for value, ratio in per_core.values())
    print(f"{name:<44} {plain:>9.1f}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=2500)
    parser.add_argument("--only-alternating", action="store_true",
                        help="a-c, f, g and h only (the in-process rows)")
    parser.add_argument("--tracer", choices=["default", "settrace"], default="default",
                        help="settrace: force the sys.settrace mechanism (DYNDBG_TRACER)")
    parser.add_argument("--core", choices=["both", *CORES], default="both",
                        help="the core(s) measured (DYNDBG_CORE); both: a column each")
    parser.add_argument("--rows", default="",
                        help="only these in-process rows, by letter (e.g. aj); no others")
    args = parser.parse_args()
    if args.tracer == "settrace":
        ENV["DYNDBG_TRACER"] = "settrace"
    cores = built_cores() if args.core == "both" else [args.core]
    print(f"dyndbg overhead, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"loop: a compiled function with a graph break (eager), {args.calls} calls a phase")
    configs = {
        "a. -c continue, no breakpoints": (["continue"], {}),
        "b. breakpoint on a graph not called": (["b graph 1", "continue"], {}),
        "c. false conditional bp in the loop": ([f"b workload.py:{LOOP_LINE}, x is None",
                                                 "continue"], {}),
        "g. --post-mortem -c continue (failed calls)": (["continue"], {"BENCH_POST_MORTEM": "1"}),
        "h. record on, -c continue (history)": (["record on", "continue"], {}),
        "j. false conditional bp inside a graph": ([f"b workload.py:{GRAPH_LINE}, l_x_ is None",
                                                    "continue"], {}),
    }
    if args.rows:
        configs = {name: config for name, config in configs.items() if name[0] in args.rows}
    c_per_call = 0.0
    for k, (name, (commands, env)) in enumerate(configs.items()):
        per_core, plains = {}, []
        for core in cores:
            plain, debugged, ratio, tracer = alternate(args.rounds, args.calls, commands,
                                                       env={**env, "DYNDBG_CORE": core})
            per_core[core] = (debugged, ratio)
            plains.append(plain)
        if k == 0:
            print(f"tracing mechanism: {tracer}; cores: {', '.join(cores)} "
                  "(us a call, then the ratio to plain, for each)")
            print(f"{'configuration':<44} {'plain us':>9}" +
                  "".join(f" {core + ' us':>9} {'ratio':>6}" for core in cores))
        row(name, statistics.median(plains), per_core)
        if name.startswith("c."):
            c_per_call = per_core[cores[-1]][0]
    if args.rows:
        return
    print("f. stepping, scripted, stop display on: " +
          ", ".join(f"{core} {stepping_rate(args.rounds, args.steps, core):.0f} stops/s"
                    for core in cores))
    if args.only_alternating:
        return

    calls = [WORKLOAD, "calls", str(args.calls)]
    plain_runs, torch_runs, compile_plain, compile_dyndbg = [], [], [], []
    model: dict[str, list[float]] = {core: [] for core in cores}
    for _ in range(max(3, args.rounds // 2)):
        plain_runs.append(run([PY, *calls])["per_call_us"])
        torch_runs.append(run([PY, *calls], stdin="c\n" * 20,
                              env={"BENCH_TORCH_DEBUGGER": "1"})["per_call_us"])
        compile_plain.append(run([PY, WORKLOAD, "compile"])["compile_s"])
        compile_dyndbg.append(run([*DYNDBG, "-c", "continue", WORKLOAD, "compile"])["compile_s"])
        for core in cores:
            model[core].append(model_stepping(core))
    plain, torch_debugger = statistics.median(plain_runs), statistics.median(torch_runs)
    print(f"{'d. torch bytecode_debugger, continue mode':<44} {plain:>9.1f} {torch_debugger:>9.1f} "
          f"{torch_debugger / plain:>6.2f}")
    print(f"   c is {torch_debugger / c_per_call:.1f}x faster than d")
    cp, cd = statistics.median(compile_plain), statistics.median(compile_dyndbg)
    print(f"{'e. first compile, 6-layer MLP (s)':<44} {cp:>9.3f} {cd:>9.3f} {cd / cp:>6.2f}")
    print("i. tiny GPT-2 (transformers), every generated instruction stepped, whole run: " +
          ", ".join(f"{core} {statistics.median(model[core]):.2f}x" for core in cores))


def model_stepping(core: str) -> float:
    """The run of a real model (tests/programs/tiny_gpt2.py: GPT-2 with random
    weights and a graph break in its forward) stepped through every generated
    instruction, `s` by `s` with the stop display on, over its plain run."""
    program = str(HERE.parent / "tests" / "programs" / "tiny_gpt2.py")

    def timed(argv: list[str], stdin: str = "") -> float:
        start = time.perf_counter()
        subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=HERE.parent,
                       env={**ENV, "DYNDBG_CORE": core}, timeout=900, check=True)
        return time.perf_counter() - start
    plain = timed([PY, program])
    stepped = timed([*DYNDBG, program], stdin="s\n" * 4000 + "c\n")
    return stepped / plain


def stepping_rate(rounds: int, steps: int, core: str) -> float:
    """Stops per second in scripted mode, each stop rendered (workload.py
    stepping): the median over rounds of the difference between runs of 2K
    and K steps in one process."""
    result = run([PY, WORKLOAD, "stepping", str(max(3, rounds // 2)), str(steps)],
                 env={"DYNDBG_CORE": core})
    rates = [(long_stops - short_stops) / max(long_time - short_time, 1e-9)
             for (short_time, short_stops), (long_time, long_stops)
             in zip(result["short"], result["long"])]
    return statistics.median(rates)


if __name__ == "__main__":
    main()
