"""`graph capture | run | bisect | values`: a compiled graph run by hand
against dynamo's graph (dyndbg.cache's graph half), written for people."""
from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

from dyndbg.ui.text.parsing import CommandError, split_expressions
from dyndbg.ui.text.values import cut, summarize

ACTIONS = ("run", "capture", "bisect", "values")
USAGE = {
    "run": "graph run [N] [INPUTS...]",
    "capture": "graph capture [N]",
    "bisect": "graph bisect [N] [--rtol R] [--atol A] [--no-fp64] [--save FILE]",
    "values": "graph values [N] NODE",
}


class BisectOptions(NamedTuple):
    rtol: float
    atol: float
    fp64: bool
    save: str | None


def parse_bisect_options(words: Sequence[str]) -> BisectOptions:
    """--rtol R --atol A --no-fp64 --save FILE, in any order."""
    from dyndbg.dynamo.graphs import DEFAULT_TOLERANCE
    rtol = atol = DEFAULT_TOLERANCE
    fp64, save = True, None
    rest = list(words)
    while rest:
        word = rest.pop(0)
        if word == "--no-fp64":
            fp64 = False
        elif word in ("--rtol", "--atol", "--save"):
            if not rest:
                raise CommandError(f"{word} needs a value: {USAGE['bisect']}")
            value = rest.pop(0)
            if word == "--save":
                save = value
                continue
            try:
                number = float(value)
            except ValueError:
                raise CommandError(f"{word} takes a number, not {value!r}") from None
            if not number >= 0:
                raise CommandError(f"{word} takes a number >= 0, not {value!r}")
            rtol, atol = (number, atol) if word == "--rtol" else (rtol, number)
        else:
            raise CommandError(f"unknown option {word!r}: {USAGE['bisect']}")
    return BisectOptions(rtol, atol, fp64, save)


def bisect_lines(found: object) -> list[str]:
    """What `graph bisect` prints for a Bisection."""
    from dyndbg.dynamo.graphs import Bisection
    assert isinstance(found, Bisection)
    tolerances = (f"rtol={found.rtol:g}, atol={found.atol:g}, "
                  + ("fp64 reference" if found.fp64 else "no fp64 reference"))
    cost = (f"{found.compiles} compile{'s' if found.compiles != 1 else ''}, "
            f"{found.seconds:.2f} s")
    first = found.first
    if first is None:
        return [f"no node differs: graph {found.graph}'s {found.nodes} nodes and its outputs, "
                f"compiled by {found.backend}, agree with dynamo's graph run eagerly "
                f"({tolerances}; {cost})"]
    lines = [first.line_text(),
             f"  eager:    {cut(summarize(first.eager), 150)}",
             f"  compiled: {cut(summarize(first.compiled), 150)}"]
    if first.fp64 is not None:
        lines.append(f"  fp64:     {cut(summarize(first.fp64), 150)}")
    lines.append("  read by: " + (", ".join(first.readers) or "(none: a graph output)"))
    lines.append(f"  graph {found.graph} compiled by {found.backend}: {found.nodes} nodes "
                 f"compared, found {found.how} ({tolerances}; {cost})")
    return lines


def values_lines(shown: object) -> list[str]:
    """What `graph values N NODE` prints for a NodeValues."""
    from dyndbg.dynamo.graphs import NodeValues
    from dyndbg.dynamo.graphs import verdict_line
    assert isinstance(shown, NodeValues)
    at = f" at {shown.line}" if shown.line else ""
    lines = [f"graph {shown.graph}, node {shown.node} ({shown.target}){at}:",
             f"  eager:    {cut(summarize(shown.eager), 150)}",
             f"  fp64:     {cut(summarize(shown.fp64), 150)}",
             f"  compiled: {cut(summarize(shown.compiled), 150)}"]
    agreed = shown.agreement
    if agreed.agree:
        where = "[" + ", ".join(str(i) for i in agreed.where) + "]"
        most = "" if agreed.note or not agreed.where else \
            f" (most at {where}: max abs {agreed.max_abs:.3g}, max rel {agreed.max_rel:.3g})"
        lines.append(f"  agrees{most}")
    else:
        text = verdict_line(shown.node, shown.target, shown.line, agreed, shown.eager,
                            shown.compiled)
        lines.append("  differs: " + text.split(": ", 2)[-1])
    lines.append(f"  (compiled in a compile of the graph up to {shown.node}, "
                 f"{shown.seconds:.2f} s)")
    return lines


def graph_number_of(words: list[str], action: str,
                    called_here: Callable[[], int | None]) -> tuple[int, list[str]]:
    """(N, the other words): N given first, or the graph called at this stop."""
    if words and words[0].isdigit():
        return int(words[0]), words[1:]
    here = called_here()
    if here is None:
        raise CommandError(f"usage: {USAGE[action]} (N: no graph is called at this stop)")
    return here, words


def run_inputs(arg: str) -> list[str]:
    """The INPUTS of `graph run [N] INPUTS...` (arg: all after `graph`), one
    Python expression each: separated by spaces or commas outside brackets
    and strings."""
    rest = arg.strip()[len("run"):].lstrip()
    first = rest.split(None, 1)
    if first and first[0].isdigit():
        rest = rest[len(first[0]):]
    return split_expressions(rest)
