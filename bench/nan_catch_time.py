"""What `catch nan` costs a loop of a small model's compiled calls, side by
side in one process.

Each round times the same loop three ways, their order turning each round:
plain (no dyndbg), dyndbg attached with `continue` (catch nan unset:
nothing is watched), and dyndbg attached with `catch nan`, `continue` (each
graph's code watched, one isfinite per node output, all finite). The model
is a 3-layer MLP with tanh (one graph, 11 computing nodes in eager's graph),
compiled with the eager backend, then aot_eager and inductor (forward
only, no_grad; inductor: checked after each kernel).
Prints the median microseconds a call and the medians of the per-round
ratios to plain.

    PYTHONPATH=. python bench/nan_catch_time.py [--rounds R] [--calls N]
"""
from __future__ import annotations

import argparse
import io
import statistics
import sys
import time

import torch

torch.set_num_threads(1)      # as bench/workload.py: steadier timings on a small machine


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(64, 64)
        self.c = torch.nn.Linear(64, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.a(x))
        h = torch.tanh(self.b(h)) * 0.5 + h[:, :64]
        return torch.log(torch.sigmoid(self.c(h)) + 1e-3)


def loop(model, x, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        out = model(x)
    elapsed = time.perf_counter() - start
    assert bool(torch.isfinite(out).all())
    return elapsed / n * 1e6


def phase(model, x, n: int, commands: list[str] | None) -> float:
    from dyndbg.attach import attach

    engine = attach(io.StringIO(), commands, read_rc=False) if commands is not None else None
    try:
        model(x)            # the first stop runs the commands; not timed
        return loop(model, x, n)
    finally:
        if engine is not None:
            engine.detach()


def measure(backend: str, rounds: int, n: int) -> dict[str, list[float]]:
    torch.manual_seed(0)
    model = torch.compile(MLP(), backend=backend)
    x = torch.randn(16, 32)
    for _ in range(20):
        model(x)            # compiled, caches settled
    ways = {"plain": None, "unset": ["continue"], "catch nan": ["catch nan", "continue"]}
    times: dict[str, list[float]] = {way: [] for way in ways}
    order = list(ways)
    for r in range(rounds):
        for way in order[r % 3:] + order[:r % 3]:
            times[way].append(phase(model, x, n, ways[way]))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    print(f"catch nan's cost, Python {sys.version.split()[0]}, torch {torch.__version__}, "
          f"{args.rounds} rounds of {args.calls} calls a way")
    print(f"{'backend':<10} {'plain us':>9} {'unset us':>9} {'ratio':>6} "
          f"{'set us':>9} {'ratio':>6}")
    with torch.no_grad():
        for backend in ("eager", "aot_eager", "inductor"):
            t = measure(backend, args.rounds, args.calls)
            ratio = {way: statistics.median(w / p for w, p in zip(t[way], t["plain"]))
                     for way in ("unset", "catch nan")}
            print(f"{backend:<10} {statistics.median(t['plain']):>9.1f} "
                  f"{statistics.median(t['unset']):>9.1f} {ratio['unset']:>6.2f} "
                  f"{statistics.median(t['catch nan']):>9.1f} {ratio['catch nan']:>6.2f}")


if __name__ == "__main__":
    main()
