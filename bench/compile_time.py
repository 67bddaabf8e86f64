"""What dyndbg costs dynamo's compiles, measured side by side in one run.

In one process, compiles alternate with dyndbg attached (its hooks reading
torch's graph-break reasons and recompile reasons as each compile ends,
`continue` at the first stop) and without it: each round resets dynamo, then
compiles tests/programs/five_breaks.py's function (five graph breaks, six
compiles), tests/programs/recompiles.py's (three compiles, two of them
recompiles) and tests/programs/dynamic_shapes.py's (five compiles with
symbolic shapes: dyndbg reads each one's ShapeEnv as it ends, and notes what
it does not keep as it runs). The ratio is the median of the per-round ratios, so the
machine's drift cancels. Prints; checks nothing.

    python bench/compile_time.py [--rounds R]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import runpy
import statistics
import sys
import time
from pathlib import Path

import torch
import torch._dynamo

PROGRAMS = Path(__file__).resolve().parent.parent / "tests" / "programs"
torch.set_num_threads(1)


def compile_all() -> float:
    """Seconds to compile (and run once) both programs' functions from scratch."""
    breaks = runpy.run_path(str(PROGRAMS / "five_breaks.py"))
    step = runpy.run_path(str(PROGRAMS / "recompiles.py"))["step"]
    torch._dynamo.reset()
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        torch.compile(breaks["f"], backend="eager")(*breaks["inputs"]())
        compiled = torch.compile(step, backend="eager")
        for i in range(3):
            step.__globals__["calls"] = i
            compiled(torch.ones(2))
        # dynamic shapes: automatic dynamic, specializations, mark_dynamic, an
        # unbacked .item(), dynamic=True (five compiles, with symbols and shape guards)
        runpy.run_path(str(PROGRAMS / "dynamic_shapes.py"))
    return time.perf_counter() - start


def timed_reading() -> list[float]:
    """Time spent in reading torch's account of each compile (what `why` adds
    to it: reasons, the guards' user stacks, the call that made it; by the
    engine's hooks and by dyndbg.cache's, which the debugger imports and
    which stays installed for the plain rounds too), and copying each graph
    before its backend sees it (what `graph run` and `graph bisect` compare
    with), summed into the returned list's first element; the shapes' part
    (the ShapeEnv read as each compile ends, and what shapes/watch.py notes
    as it runs) in its second."""
    from dyndbg.dynamo.compiles import breaks as break_reasons, context as compile_context, recompiles as recompile_reasons
    from dyndbg.dynamo.graphs import copies as graph_copies
    from dyndbg.dynamo.shapes import record as shape_record, watch as shape_watch
    spent = [0.0, 0.0]
    for module in (break_reasons, recompile_reasons, compile_context, graph_copies,
                   shape_record, shape_watch):
        slot = 1 if module in (shape_record, shape_watch) else 0
        for name in ("since", "mark", "count", "guard_stacks", "called_from", "_copy_or_none",
                     "compiler_output", "read", "_before", "_noted"):
            function = getattr(module, name, None)
            if function is None:
                continue

            def wrapper(*args, _function=function, _slot=slot):  # type: ignore[no-untyped-def]
                start = time.perf_counter()
                try:
                    return _function(*args)
                finally:
                    spent[_slot] += time.perf_counter() - start
            setattr(module, name, wrapper)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    from dyndbg.attach import attach
    reading = timed_reading()

    compile_all()      # imports and first-use costs, outside the timing
    plain, debugged = [], []
    for _ in range(args.rounds):
        plain.append(compile_all())
        engine = attach(io.StringIO(), ["continue"], read_rc=False)
        debugged.append(compile_all())
        engine.detach()
    ratios = [d / p for p, d in zip(plain, debugged)]
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, {args.rounds} rounds")
    print(f"compiles (14, 5 graph breaks, 2 recompiles; 5 with dynamic shapes), plain {statistics.median(plain):.3f} s, "
          f"under dyndbg {statistics.median(debugged):.3f} s, "
          f"ratio {statistics.median(ratios):.3f} (the whole debugger attached)")
    print(f"of which reading torch's account (break and recompile reasons, guard stacks, "
          "the ShapeEnv as each compile ends and what it does not keep as it runs) "
          "and copying each graph: "
          f"{sum(reading) / args.rounds * 1000:.3f} ms a round "
          f"({sum(reading) / sum(debugged) * 100:.2f}% of the compile time under dyndbg)")
    print(f"of which the shapes (shapes/record.py's read, shapes/watch.py's notes): "
          f"{reading[1] / args.rounds * 1000:.3f} ms a round "
          f"({reading[1] / sum(debugged) * 100:.2f}%)")


if __name__ == "__main__":
    main()
