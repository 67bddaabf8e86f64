"""`catch nan` (issue 50): a stop right after the first FX node of a
compiled graph whose output holds a NaN or an Inf, in the real CLI, on
tests/programs/nan_graph.py: eager and aot_eager forward graphs, inductor's
kernels, aot_eager's backward.

Checked against the program's own eager run, never against strings copied
from one release: it prints, after its compiled run, the first torch
function whose output is not finite when the same function runs eagerly
(its name and its line, read by a TorchFunctionMode) and which elements
are NaN and Inf. The program's output is a plain run's (checking changes
nothing).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import ROOT, Run, run_dyndbg, run_plain
from transcript import graph_segments as _segments, no_traceback

PROGRAM = ROOT / "tests" / "programs" / "nan_graph.py"
CAUGHT = re.compile(r"^Catchpoint (\d+) \(nan\), hit (\d+): node (\S+) of graph (\d+) made (.*)$")
AFTER = re.compile(r"^\[graph (\d+) (\S+) forward\] after node (\d+)/(\d+) (\S+): (\S+) (\S+)$")
BEFORE = re.compile(r"^\[graph (\d+) (\S+) forward\] node (\d+)/(\d+) (\S+): (\S+) (\S+)$")
BAD = re.compile(r"^  (nan|inf) at (.*?)(, …)? \((\d+) of (\d+)\)$")


class Eager:
    """The program's eager account of each step: None (finite), or the
    first op's name and line, its NaN and Inf indices, its element count."""

    def __init__(self, run: Run) -> None:
        assert run.returncode == 0, run.stderr[-3000:]
        lines = run.stdout.splitlines()
        self.output = lines[:lines.index("--- eager ---")]
        self.steps: list[tuple[str, int, list, list, int] | None] = []
        for line in lines[lines.index("--- eager ---") + 1:lines.index("--- end ---")]:
            found = re.fullmatch(r"step \d+ first (\S+) (\d+) nan (.*) inf (.*) of (\d+)", line)
            self.steps.append(None if found is None else (
                found[1], int(found[2]), eval(found[3]), eval(found[4]), int(found[5])))


@pytest.fixture(scope="module")
def eager() -> Eager:
    return Eager(run_plain(PROGRAM, "eager"))


def _run(args: str, commands: list[str], tmp: Path) -> Run:
    run = run_dyndbg([PROGRAM, *args.split()], commands, tmp, env={"DYNDBG_TRACER": "settrace"})
    no_traceback(run)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def _bad_lines(lines: list[str]) -> dict[str, tuple[list, int, int]]:
    out = {}
    for line in lines:
        found = BAD.match(line)
        if found:
            at = [[int(i) for i in index.split(", ")] for index in
                  re.findall(r"\[([\d, ]+)\]", found[2])]
            out[found[1]] = (at, int(found[4]), int(found[5]))
    return out


def _check_stops(run: Run, eager: Eager, backend: str) -> list[tuple[str, list[str]]]:
    """Each stop names eager's first non-finite op at its line, with eager's
    bad elements; returns the segments."""
    segments = _segments(run.transcript)
    stops = [(command, lines) for command, lines in segments
             if any(CAUGHT.match(line) for line in lines)]
    bad_steps = [step for step in eager.steps if step is not None]
    assert eager.steps[0] is None and len(bad_steps) == 2     # the program's own account
    assert len(stops) == len(bad_steps), run.transcript[-4000:]
    source = PROGRAM.read_text().splitlines()
    for hit, ((_, lines), (op, line, nan, inf, total)) in enumerate(zip(stops, bad_steps), 1):
        caught = next(CAUGHT.match(x) for x in lines if CAUGHT.match(x))
        assert caught is not None and caught[1] == "1" and caught[2] == str(hit)
        assert caught[5] == "nan and inf", lines
        head = next(AFTER.match(x) for x in lines if AFTER.match(x))
        assert head is not None and head[2] == backend and head[5] == caught[3], lines
        assert head[6] == "call_function" and re.search(rf"\b{op}\b", head[7]), (op, lines)
        place = lines[lines.index(head[0]) + 1].strip()
        assert place == f"at {PROGRAM.name}:{line}: {source[line - 1].strip()}", place
        assert any(x.startswith("  in  ") for x in lines) and \
            any(x.startswith(f"  out {head[5]} = Tensor f32[") for x in lines), lines
        bad = _bad_lines(lines)
        assert bad["nan"] == (nan[:3], len(nan), total), (bad, nan)
        assert bad["inf"] == (inf[:3], len(inf), total), (bad, inf)
    return segments


def test_catch_nan_in_an_eager_graph_then_s_steps_on(tmp_path: Path, eager: Eager) -> None:
    """Two stops (steps 1 and 2; step 0 is finite), each at eager's op,
    line and bad elements; `l` marks the node; `s` stops before the next
    node, whose input is the bad value; the output is a plain run's."""
    run = _run("eager", ["catch nan", "c", "l", "s", "c", "info breakpoints", "c"], tmp_path)
    segments = _check_stops(run, eager, "eager")
    first = next(lines for _, lines in segments if any(CAUGHT.match(x) for x in lines))
    head = next(AFTER.match(x) for x in first if AFTER.match(x))
    assert head is not None
    listing = dict(segments)["l"]
    assert [x.split()[1] for x in listing if x.startswith("->")] == [head[5]], listing
    after = dict(segments)["s"]
    step = BEFORE.match(after[0])
    assert step is not None and int(step[3]) == int(head[3]) + 1, after
    assert any(x.startswith(f"  in  {head[5]} = ") for x in after), after
    table = " ".join(dict(segments)["info breakpoints"])
    assert re.search(r"catch nan\s+hit 2 times", table), table
    assert run.stdout.splitlines()[:len(eager.output)] == eager.output
    assert run.stdout == run_plain(PROGRAM, "eager").stdout


KERNEL = re.compile(r"^Catchpoint 1 \(nan\), hit (\d+): kernel (\S+) of graph (\d+) made (.*)$")


def test_catch_nan_in_aot_and_inductor_graphs_cleared_checks_no_more(tmp_path: Path) -> None:
    """aot_eager (a lazy GraphModule, its code made at its first call, after
    `catch nan`): a stop at eager's op in each bad step; then inductor: a
    stop after the kernel that wrote the bad buffer, naming it, with the bad
    elements of eager's op or of the program's own output; cleared, no more
    stops; help and a bad argument. The output is a plain run's."""
    plain = run_plain(PROGRAM, "aot_eager,inductor")
    account = Eager(plain)
    run = _run("aot_eager,inductor", ["catch nan x", "help catch", "catch nan", "c", "c", "c",
                                      "clear 1", "c"], tmp_path)
    segments = _segments(run.transcript)
    named = dict(segments)
    assert named["catch nan x"] == [
        "*** usage: catch compile | recompile | graph-break | exception | trace [FUNC] | "
        "backward [N] | nan"]
    assert "nan" in " ".join(named["help catch"]).split()
    aot = [(c, lines) for c, lines in segments if any(CAUGHT.match(x) for x in lines)]
    kernel = [(c, lines) for c, lines in segments if any(KERNEL.match(x) for x in lines)]
    assert len(aot) == 2 and len(kernel) == 1, run.transcript[-4000:]
    source = PROGRAM.read_text().splitlines()
    for (_, lines), (op, line, nan, inf, total) in zip(aot, account.steps[1:]):  # type: ignore[misc]
        head = next(AFTER.match(x) for x in lines if AFTER.match(x))
        assert head is not None and head[2] == "aot_eager" and re.search(rf"\b{op}\b", head[7])
        assert lines[lines.index(head[0]) + 1].strip() == \
            f"at {PROGRAM.name}:{line}: {source[line - 1].strip()}"
        bad = _bad_lines(lines)
        assert bad["nan"] == (nan[:3], len(nan), total) and bad["inf"] == (inf[:3], len(inf), total)
    _, lines = kernel[0]
    caught = next(KERNEL.match(x) for x in lines if KERNEL.match(x))
    assert caught is not None and caught[1] == "3", lines
    head = next(x for x in lines if re.match(r"^\[graph \d+ inductor forward\] after step ", x))
    assert caught[2] in head, lines
    # the buffer the kernel wrote: eager's first bad op's, or (fused into the
    # kernel making the graph's output) the program's own output's
    (op, line, nan, inf, total) = account.steps[1]  # type: ignore[misc]
    output = next(x for x in plain.stdout.splitlines() if x.startswith("inductor step 1: "))
    values = output.split(": ", 1)[1].strip("[]").split(", ")
    nan_out = [[i] for i, v in enumerate(values) if v == "nan"]
    found = _bad_lines(lines)["nan"]
    assert found in ((nan[:3], len(nan), total), (nan_out[:3], len(nan_out), len(values))), found
    assert run.stdout == plain.stdout


def test_catch_nan_in_an_aot_backward(tmp_path: Path) -> None:
    """aot_eager's compiled backward, through catch backward's watch (its
    GraphModule compiled in the first backward call, finite; the second's
    makes an Inf): the stop names the gradient of eager's op at its line,
    with the Inf where eager's gradient into that op has it; `s` steps on
    to the next backward node; the output is a plain run's."""
    plain = run_plain(PROGRAM, "train", "aot_eager")
    account = Eager(plain)
    assert account.steps[0] is not None and not account.steps[0][3]  # step 0: all finite
    run = _run("train aot_eager", ["catch nan", "c", "s", "c"], tmp_path)
    segments = _segments(run.transcript)
    stops = [lines for _, lines in segments if any(CAUGHT.match(x) for x in lines)]
    assert len(stops) == 1, run.transcript[-4000:]
    (op, line, nan, inf, total) = account.steps[1]  # type: ignore[misc]
    lines = stops[0]
    caught = next(CAUGHT.match(x) for x in lines if CAUGHT.match(x))
    assert caught is not None and caught[5] == "inf", lines
    head = next(x for x in lines if x.startswith("[backward of graph "))
    assert " after node " in head and f" {caught[3]}: call_function " in head, head
    place = lines[lines.index(head) + 1].strip()
    source = PROGRAM.read_text().splitlines()[line - 1].strip()
    assert re.fullmatch(rf"grad of {PROGRAM.name}:{line} \(forward node {op}\): "
                        + re.escape(source), place), place
    assert _bad_lines(lines) == {"inf": (inf[:3], len(inf), total)}, lines
    after = dict(segments)["s"]
    position = int(re.search(r" after node (\d+)/", head)[1])  # type: ignore[index]
    assert re.match(rf"\[backward of graph \d+ aot_eager\] node {position + 1}/", after[0]), after
    assert run.stdout == plain.stdout


def test_catch_nan_at_the_outputs_of_a_graph_with_no_way_in(tmp_path: Path) -> None:
    """A backend returning a function of its own: one line says so, and the
    stop is at the generated instruction after the graph's call, naming
    the graph's output and its bad elements, those of the program's own
    output (plain run) in each bad step."""
    plain = run_plain(PROGRAM, "opaque")
    run = _run("opaque", ["catch nan", "c", "c", "c"], tmp_path)
    lines = run.transcript.splitlines()
    said = [x for x in lines if "gives no way in" in x and x.startswith("dyndbg: catch nan: ")]
    assert len(said) == 1 and said[0].endswith("its outputs are checked after its call instead"), \
        run.transcript[-3000:]
    stops = [i for i, x in enumerate(lines) if re.fullmatch(r"Catchpoint 1 \(nan\), hit \d+", x)]
    assert [lines[i] for i in stops] == ["Catchpoint 1 (nan), hit 1", "Catchpoint 1 (nan), hit 2"]
    for step, i in zip((1, 2), stops):
        output = next(x for x in plain.stdout.splitlines() if x.startswith(f"opaque step {step}: "))
        values = output.split(": ", 1)[1].strip("[]").split(", ")
        nan = [[k] for k, v in enumerate(values) if v == "nan"]
        assert re.fullmatch(r"graph \d+ output 0 holds nan \(its backend gives no way in: "
                            r"checked after its call\)", lines[i + 1]), lines[i + 1]
        assert _bad_lines(lines[i + 2:i + 3]) == {"nan": (nan[:3], len(nan), len(values))}
        assert lines[i + 3].startswith("> f ["), lines[i + 3]      # generated code, after the call
    assert run.stdout == plain.stdout


class _FakeTracer:
    """A mechanism as settrace.py holds watches: one events a code (None: any
    code), moved onto the frame's code where the None watch takes a frame."""

    name = "fake"

    def __init__(self) -> None:
        self.graphs: dict = {}

    def watch_graph(self, code, events) -> bool:
        self.graphs[None if code is None else id(code)] = events
        return True

    def unwatch_graph(self, code) -> None:
        self.graphs.pop(None if code is None else id(code), None)

    def run(self, frame, lines: int) -> None:
        events = self.graphs.get(id(frame.f_code))
        keyed = events is not None
        events = events if keyed else self.graphs.get(None)
        if events is None or not events.on_graph_start(frame):
            return
        if not keyed and self.graphs.get(None) is events:
            self.graphs[id(frame.f_code)] = self.graphs.pop(None)
        for _ in range(lines):
            (self.graphs.get(id(frame.f_code)) or self.graphs.get(None)).on_graph_line(frame)
        (self.graphs.get(id(frame.f_code)) or self.graphs.get(None)).on_graph_return(frame)


class _Watcher:
    def __init__(self, name: str, log: list, takes=lambda frame: True, adopt=None) -> None:
        self.name, self.log, self.takes, self.adopt = name, log, takes, adopt

    def on_graph_start(self, frame) -> bool:
        return self.takes(frame)

    def on_graph_line(self, frame) -> None:
        self.log.append(self.name)
        if self.adopt is not None:
            self.adopt(frame)
            self.adopt = None

    def on_graph_return(self, frame) -> None:
        self.log.append(self.name + " returns")


def test_graph_watches_serve_several_watchers_of_one_code() -> None:
    """GraphWatches (catch nan, the stepper, catch backward on one code):
    catch nan first; a None watch (a code made as it starts) moved onto the
    frame's code without taking the code's own dispatcher; unwatching one
    leaves the others; one adopted during a line gets that line too."""
    import sys
    from dyndbg.engine.graph_watches import GraphWatches

    tracer = _FakeTracer()
    watches = GraphWatches(lambda: tracer)      # type: ignore[arg-type,return-value]
    log: list[str] = []
    frame = sys._getframe()
    stepper = _Watcher("stepper", log)
    nan = _Watcher("nan", log, adopt=lambda f: watches.adopt(f, late))
    late = _Watcher("late", log)
    watches.first = nan
    assert watches.watch_graph(None, stepper)            # lazy: its code not made yet
    assert watches.watch_graph(frame.f_code, nan)
    tracer.run(frame, 2)
    assert log == ["nan", "stepper", "late", "nan", "stepper", "late",
                   "nan returns", "stepper returns", "late returns"]
    # the None watch moved onto the code; the code's dispatcher kept, no None left
    assert None not in tracer.graphs and id(frame.f_code) in tracer.graphs
    assert watches.shared(frame, nan) is False          # the frame has returned
    watches.unwatch_graph(frame.f_code, stepper)
    assert id(frame.f_code) in tracer.graphs            # nan still watches it
    log.clear()
    tracer.run(frame, 1)
    assert log == ["nan", "nan returns"]
    watches.unwatch_graph(frame.f_code, nan)
    assert tracer.graphs == {}
    # a None watch alone: the frame's code gets a dispatcher of its own
    alone = GraphWatches(lambda: tracer)      # type: ignore[arg-type,return-value]
    log.clear()
    assert alone.watch_graph(None, stepper)
    tracer.run(frame, 1)
    assert log == ["stepper", "stepper returns"]
    assert list(tracer.graphs) == [id(frame.f_code)]
    alone.unwatch_graph(frame.f_code, stepper)
    assert tracer.graphs == {}
