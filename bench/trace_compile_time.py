"""What stopping in dynamo's trace costs its compiles, measured side by side
in one run (dyndbg/engine/compile_stepping.py).

Each round compiles bench/compile_time.py's programs from scratch (five
graph breaks, then three compiles of which two are recompiles), four ways:

- plain: no trace catchpoint; dyndbg installs nothing into dynamo then, so
  this is also "dyndbg with no trace catchpoint";
- other: a trace catchpoint on a function these programs do not have (every
  translator's start is asked about, none is watched);
- every: `catch trace` of every function, each stop answered `c` at once by
  a front end that does nothing (every instruction dynamo interprets is
  reported: what the traced functions pay);
- plain again, to see the drift (the three turn their order each round).

The ratios are the medians of the per-round ratios to the plain round.
Prints; checks nothing.

    python bench/trace_compile_time.py [--rounds R]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compile_time import compile_all  # noqa: E402  (this folder's)

from dyndbg.engine.breakpoints import BreakpointTable  # noqa: E402
from dyndbg.engine.targets import CompileCatchTarget  # noqa: E402
from dyndbg.engine.compile_stepping import CompileStepper, CompileStop  # noqa: E402


class Continues:
    """A front end that answers every trace stop with `c`."""

    stops = 0

    def interact_compile(self, stop: CompileStop) -> None:
        Continues.stops += 1
        stop.state.stack()             # what a stop shows first: read, not kept
        stop.state.instruction()

    def message(self, text: str) -> None:
        print(text)


def with_catch(pattern: str | None) -> float:
    if pattern is None:
        return compile_all()
    table = BreakpointTable()
    stepper = CompileStepper(table, Continues(), lambda where, error: print(where, error))
    table.add(CompileCatchTarget("trace", pattern=pattern))
    stepper.arm()
    try:
        return compile_all()
    finally:
        stepper.disarm()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    with_catch(None)                   # imports and first-time work, not timed
    ratios: dict[str, list[float]] = {"other": [], "every": [], "plain again": []}
    times: dict[str, list[float]] = {"plain": [], **{k: [] for k in ratios}}
    ways = [("other", "no_function_is_named_this"), ("every", "*"), ("plain again", None)]
    for round_ in range(rounds):
        plain = with_catch(None)
        times["plain"].append(plain)
        # The order turns each round, so that no way always follows another.
        turned = ways[round_ % len(ways):] + ways[:round_ % len(ways)]
        for name, pattern in turned:
            seconds = with_catch(pattern)
            times[name].append(seconds)
            ratios[name].append(seconds / plain)
    print(f"compiles of five_breaks.py and recompiles.py, {rounds} rounds, median seconds:")
    for name, values in times.items():
        ratio = f"  ratio {statistics.median(ratios[name]):.2f}" if name in ratios else ""
        print(f"  {name:<12} {statistics.median(values):.3f} s{ratio}")
    print(f"trace stops made in the 'every' rounds: {Continues.stops // rounds} a round")


if __name__ == "__main__":
    main()
