"""The dynamo-aware features, through the real CLI and a real torch.compile:
breakpoints on code that does not exist yet (graphs, resume functions, user
functions), graph-boundary views checked against torch's own printed graph
code, guards and cache entries, `graph` on three backends, catchpoints,
readable names, `source`.

Each session is one dyndbg subprocess (module-scoped fixture) and several tests
assert on parts of its transcript. Where a session runs with
TORCH_LOGS=graph_code, torch prints every FX graph it compiles on stderr; that
text is the independent oracle for what dyndbg says about placeholders and
outputs (`torch_graphs`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import pytest

from harness import ROOT, SAMPLES, GraphBreakCode, Run, plain, run_dyndbg, run_plain, with_null
from listing import Instr, parse_listing
from transcript import PROMPT, STOP, Segment, no_traceback, segments, stops_in

GRAPH_BREAK = SAMPLES / "graph_break.py"
RECOMPILE = SAMPLES / "recompile.py"
NESTED = SAMPLES / "nested_break.py"
MODULE_BRANCH = SAMPLES / "module_branch.py"
BACKENDS = ROOT / "tests" / "programs" / "backends.py"

RESUME_F = "torch_dynamo_resume_in_f_at_10"   # graph_break.py's resume function

# ---------------------------------------------------------------------------------------
# Transcript helpers beyond those in transcript.py.

IN_LINE = re.compile(r"^\s+in (?P<i>\d+)\s+(?P<name>[^\s:]+): (?P<desc>\S+)\s+(?P<value>.*)$")
OUT_LINE = re.compile(r"^\s+out (?P<i>\d+)\s+(?P<name>\S+): (?P<desc>\S+)\s+(?P<value>.*)$")


def head(run: Run) -> list[str]:
    """What dyndbg printed before the first prompt: the first stop."""
    return run.transcript.split(PROMPT, 1)[0].splitlines()


def continue_stops(run: Run, commands: tuple[str, ...] = ("c",)) -> list[dict | None]:
    """For each prompt whose command is in `commands`: the stop it reached (None: none)."""
    result = []
    for seg in segments(run.transcript):
        if seg.command in commands:
            stops = stops_in(seg.output)
            result.append(stops[0] if stops else None)
    return result


def nth_segment(run: Run, command: str, nth: int = 0) -> Segment:
    matches = [s for s in segments(run.transcript) if s.command == command]
    assert len(matches) > nth, \
        f"only {len(matches)} prompts echoed {command!r}; transcript:\n{run.transcript[-3000:]}"
    return matches[nth]


def row(listing: list[str], number: int) -> str:
    rows = [line for line in listing if re.match(rf"^{number}\s", line)]
    assert rows, f"breakpoint {number} not listed:\n" + "\n".join(listing)
    return rows[0]


def is_tensor(value: str, expected: str, whole: bool = True) -> bool:
    """A tensor summary, `f32[4] cpu [0, 1, 2, 3]`, maybe after its type name
    (`Tensor f32[4] ...`); `whole=False`: `expected` is its start."""
    pattern = r"(?:Tensor )?" + re.escape(expected) + ("" if whole else r" ")
    return bool((re.fullmatch if whole else re.match)(pattern, value))


def program_unchanged(run: Run, expected: Run) -> None:
    no_traceback(run)
    assert run.returncode == expected.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout == expected.stdout


# ---------------------------------------------------------------------------------------
# The oracle: torch's own graph code (TORCH_LOGS=graph_code) on stderr.

@dataclass
class TorchGraph:
    name: str                                   # __compiled_fn_N_<uuid>
    compile_id: str                             # [0/0] in the log prefix, without _N
    placeholders: list[tuple[str, str]] = field(default_factory=list)  # (name, "f32[4]")
    outputs: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)          # node -> "f32[4]"
    code: list[str] = field(default_factory=list)


LOG_LINE = re.compile(r"\] \[(?P<cid>\d+/\d+)(?:_\d+)?\] \[__graph_code\] ?(?P<text>.*)$")
ANNOTATION = re.compile(r'(\w+): "([^"]+)"')


def _dtype_shape(annotation: str) -> str:
    """torch prints `f32[4][1]cpu` (dtype, shape, stride, device); keep `f32[4]`."""
    match = re.match(r"^([a-z]+\d*\[[^\]]*\])", annotation)
    assert match, f"unexpected annotation {annotation!r}"
    return match.group(1)


def torch_graphs(stderr: str) -> dict[str, TorchGraph]:
    graphs: dict[str, TorchGraph] = {}
    current: TorchGraph | None = None
    for line in stderr.splitlines():
        match = LOG_LINE.search(line)
        if not match:
            continue
        text = match["text"]
        header = re.search(r"===== (__compiled_fn_\w+) =====", text)
        if header:
            current = graphs[header.group(1)] = TorchGraph(header.group(1), match["cid"])
            continue
        if current is None:
            continue
        current.code.append(text)
        stripped = text.strip()
        if stripped.startswith("def forward(self"):
            current.placeholders = [(n, _dtype_shape(a)) for n, a in ANNOTATION.findall(stripped)]
        elif stripped.startswith("return "):
            inside = stripped[len("return "):].strip("()")
            current.outputs = [o.strip() for o in inside.split(",") if o.strip()]
        else:
            node = re.match(r'^(\w+): "([^"]+)" =', stripped)
            if node:
                current.annotations[node.group(1)] = _dtype_shape(node.group(2))
    return graphs


def graph_of(run: Run, number: int) -> TorchGraph:
    graphs = torch_graphs(run.stderr)
    found = [g for name, g in graphs.items() if re.fullmatch(rf"__compiled_fn_{number}_\w+", name)]
    assert found, f"torch printed no graph {number}; it printed {sorted(graphs)}:\n{run.stderr[-3000:]}"
    return found[0]


def boundary_inputs(lines: list[str]) -> tuple[str, list[dict]]:
    """The `graph N (NAME) called from ...` line's NAME and the `in` rows after it."""
    starts = [i for i, line in enumerate(lines) if re.match(r"^graph \d+ \(\S+\) called from ", line)]
    assert starts, "no graph-call view:\n" + "\n".join(lines)
    name = re.match(r"^graph \d+ \((\S+)\)", lines[starts[0]]).group(1)
    rows = []
    for line in lines[starts[0] + 1:]:
        match = IN_LINE.match(line)
        if not match:
            break
        rows.append(match.groupdict())
    return name, rows


def boundary_outputs(lines: list[str]) -> tuple[int, int, list[dict]]:
    """(graph number, count said, the `out` rows) of a `graph N returned K outputs:` view."""
    starts = [i for i, line in enumerate(lines) if re.match(r"^graph \d+ returned \d+ output", line)]
    assert starts, "no graph-output view:\n" + "\n".join(lines)
    said = re.match(r"^graph (\d+) returned (\d+) output", lines[starts[0]])
    rows = []
    for line in lines[starts[0] + 1:]:
        match = OUT_LINE.match(line)
        if not match:
            break
        rows.append(match.groupdict())
    return int(said.group(1)), int(said.group(2)), rows


def check_inputs_against_torch(lines: list[str], graph: TorchGraph) -> None:
    name, rows = boundary_inputs(lines)
    assert name == graph.name, f"dyndbg shows {name}, torch compiled {graph.name}"
    assert [(r["name"], r["desc"]) for r in rows] == graph.placeholders, \
        f"dyndbg's inputs {rows} != torch's placeholders {graph.placeholders}"
    # Each runtime value summary starts with the same dtype/shape as its placeholder.
    for r in rows:
        assert is_tensor(r["value"], r["desc"], whole=False), r


def check_outputs_against_torch(lines: list[str], number: int, graph: TorchGraph) -> None:
    said_number, said_count, rows = boundary_outputs(lines)
    assert said_number == number
    assert said_count == len(graph.outputs) == len(rows), (said_count, graph.outputs, rows)
    assert [r["name"] for r in rows] == graph.outputs, \
        f"dyndbg's outputs {[r['name'] for r in rows]} != torch's return {graph.outputs}"
    for r in rows:
        assert r["desc"] == graph.annotations[r["name"]], (r, graph.annotations)
        assert is_tensor(r["value"], r["desc"], whole=False), r


def _with_graph_code_log(target, commands, tmp_path) -> Run:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TORCH_LOGS", "graph_code")
        return run_dyndbg(target, commands, tmp_path=tmp_path)


# ---------------------------------------------------------------------------------------
# Session A: named breakpoints set at the first stop (only f [0/0] compiled), graph
# boundaries against torch's graph code, readable names, source. graph_break.py:
# f [0/0] calls graph 2, prints, calls the resume function [1/0], which calls graph 5.

NAMED_SESSION = [
    "b",                              # nothing yet
    "b __compiled_fn_5",              # 1  pending: graph 5 lives in the resume function
    "b graph 5",                      # 2  pending
    "b resume",                       # 3  pending
    "b torch_dynamo_resume_in_f*",    # 4  pending
    "b __resume_at_*",                # 5  pending
    "b graph 2",                      # 6  resolved: in f [0/0]
    "b",                              # listing 0
    "c",                              # call 0: graph 2 call (6)
    "n",                              # its outputs
    "ll",
    "dis --raw",
    "c",                              # call 0: resume entry (3, 4, 5)
    "b",                              # listing 1
    "source",
    "until {import}",                 # its first load of a module dynamo imported
    "c",                              # call 0: graph 5 call (1, 2)
    "n",                              # its outputs
    "c",                              # call 1: graph 2 (6)
    "c",                              # call 1: resume entry (3, 4, 5)
    "c",                              # call 1: graph 5 (1, 2)
    "b",                              # listing 2
    "c",                              # the program completes
    "p 12345",                        # never read
]


IMPORT_GLOBAL = re.compile(r"__import_(\w+)")


def dotted(raw: str) -> str:
    """An argument with dynamo's import globals (`__import_torch_dot__dynamo_dot_utils`)
    named by the module they hold (`torch._dynamo.utils`), as dyndbg should name them."""
    return IMPORT_GLOBAL.sub(lambda m: m.group(1).replace("_dot_", "."), raw)


@pytest.fixture(scope="module")
def resume_import(graph_break_code: GraphBreakCode) -> Instr:
    """The resume function's first LOAD_GLOBAL of a module dynamo imported (torch 2.13:
    torch._dynamo.utils; 2.15: torch.autograd.profiler, its profiler template)."""
    raw = graph_break_code.resume_raw
    found = raw.first("LOAD_GLOBAL", re.compile(r".*__import_\w+.*"))
    assert raw.on_every_path(found), raw.text
    return found


@pytest.fixture(scope="module")
def named(tmp_path_factory, resume_import: Instr) -> Run:
    commands = [c.replace("{import}", str(resume_import.index)) for c in NAMED_SESSION]
    return _with_graph_code_log(GRAPH_BREAK, commands, tmp_path_factory.mktemp("named"))


def _listing(run: Run, nth: int) -> list[str]:
    return nth_segment(run, "b", nth).output


def test_oracle_graph_5_is_compiled_in_the_resume_function(named: Run) -> None:
    """The premise of the pending breakpoints: torch compiles graph 5 for [1/0],
    the resume function, after the first stop."""
    g5 = graph_of(named, 5)
    assert g5.compile_id == "1/0", g5.compile_id
    assert any(f"in {RESUME_F}" in line for line in g5.code), g5.code
    assert graph_of(named, 2).compile_id == "0/0"


def test_named_breakpoints_pending_before_code_exists(named: Run) -> None:
    assert nth_segment(named, "b", 0).output == ["No breakpoints."]
    for command in ["b __compiled_fn_5", "b graph 5", "b resume", "b torch_dynamo_resume_in_f*",
                    "b __resume_at_*"]:
        out = nth_segment(named, command).output
        assert len(out) == 1 and out[0].startswith("Breakpoint ") and "pending" in out[0], \
            f"{command!r} printed {out}"
    # The uuid suffix is optional: `__compiled_fn_5` means graph 5.
    assert nth_segment(named, "b __compiled_fn_5").output[0].startswith("Breakpoint 1 at graph 5 ")
    g2 = nth_segment(named, "b graph 2").output
    assert g2 and "resolved" in g2[0] and "f [0/0]" in g2[0], g2
    listing = _listing(named, 1)   # listing 0 is the "No breakpoints." one
    for number in range(1, 6):
        assert "pending" in row(listing, number) and "hit" not in row(listing, number), listing
    assert "resolved" in row(listing, 6), listing


def test_named_breakpoints_resolved_after_compile_with_hit_counts(named: Run) -> None:
    after_first = _listing(named, 2)
    for number in range(1, 6):
        r = row(after_first, number)
        assert "resolved" in r and f"{RESUME_F} [1/0]" in r, r
    for number in (3, 4, 5):
        assert re.search(r"\bhit 1 time\b", row(after_first, number)), after_first
    for number in (1, 2):      # graph 5 not called yet
        assert "hit" not in row(after_first, number), after_first
    assert re.search(r"\bhit 1 time\b", row(after_first, 6)), after_first
    final = _listing(named, 3)
    for number in range(1, 7):
        assert re.search(r"\bhit 2 times\b", row(final, number)), final


def test_graph_call_breakpoints_stop_at_the_call(named: Run) -> None:
    stops = continue_stops(named)
    assert len(stops) == 7, stops
    graph2, resume0, graph5, graph2b, resume1, graph5b, end = stops
    for stop, hits in ((graph2, 1), (graph2b, 2)):
        assert stop is not None and stop["label"] == "f [0/0]", stop
        assert stop["breakpoints"] == [(6, hits)], stop
        assert "CALL" in stop["line"]
    for stop, hits in ((graph5, 1), (graph5b, 2)):
        assert stop is not None and stop["label"] == f"{RESUME_F} [1/0]", stop
        assert stop["breakpoints"] == [(1, hits), (2, hits)], stop
        assert "CALL" in stop["line"]
    assert end is None, "the program did not complete after the last `c`"


def test_resume_breakpoints_stop_at_resume_entry(named: Run) -> None:
    """`b resume`, `b torch_dynamo_resume_in_f*` and `b __resume_at_*` all stop at
    the first instruction of the resume function, once per call of f."""
    stops = continue_stops(named)
    assert len(stops) >= 5, stops
    for stop, hits in ((stops[1], 1), (stops[4], 2)):
        assert stop is not None, stops
        assert stop["label"] == f"{RESUME_F} [1/0]", stop["line"]
        assert stop["index"] == 1, stop["line"]           # instr 0 is RESUME: never stops
        assert stop["breakpoints"] == [(3, hits), (4, hits), (5, hits)], stop


def test_graph_inputs_match_torch_placeholders(named: Run) -> None:
    c_segs = [s for s in segments(named.transcript) if s.command == "c"]
    check_inputs_against_torch(c_segs[0].output, graph_of(named, 2))
    check_inputs_against_torch(c_segs[2].output, graph_of(named, 5))
    check_inputs_against_torch(c_segs[3].output, graph_of(named, 2))   # call 1, cached code


def test_graph_outputs_match_torch_return(named: Run) -> None:
    n_first = nth_segment(named, "n", 0).output       # after graph 2's call
    check_outputs_against_torch(n_first, 2, graph_of(named, 2))
    n_third = nth_segment(named, "n", 1).output       # after graph 5's call
    check_outputs_against_torch(n_third, 5, graph_of(named, 5))
    # Values: a = sin(x) + y with x = arange(4), y = ones(4).
    _, _, rows = boundary_outputs(n_first)
    expected = ", ".join(f"{math.sin(i) + 1:.4g}" for i in range(4))
    assert is_tensor(rows[0]["value"], f"f32[4] cpu [{expected}]"), rows[0]


def test_readable_names_in_stop_lines(named: Run, resume_import: Instr,
                                      graph_break_code: GraphBreakCode) -> None:
    first = stops_in(head(named))
    assert first and first[0]["index"] == 1, head(named)
    assert "LOAD_GLOBAL" in first[0]["line"] and f"{with_null('graph 2')} " in first[0]["line"], \
        first[0]
    until = nth_segment(named, f"until {resume_import.index}").output
    after = stops_in(until)
    assert after and after[0]["label"] == f"{RESUME_F} [1/0]", until
    assert (after[0]["index"], after[0]["offset"]) == (resume_import.index, resume_import.offset), \
        (after[0], resume_import)
    # The module by its name, as the listing shows it: not the global dynamo made for it.
    readable = dotted(resume_import.arg)
    assert graph_break_code.resume.at(resume_import.index).arg == readable, graph_break_code.resume.text
    assert re.search(rf"  LOAD_GLOBAL +{re.escape(readable)} ", after[0]["line"]), \
        (after[0]["line"], readable)
    assert "__import_" not in after[0]["line"], after[0]["line"]
    for stop in continue_stops(named)[:-1]:
        assert "__compiled_fn_" not in stop["line"] and "__import_" not in stop["line"], stop


def test_ll_readable_and_dis_raw_shows_raw_names(named: Run) -> None:
    ll = nth_segment(named, "ll").output
    raw = nth_segment(named, "dis --raw").output
    text, raw_text = "\n".join(ll), "\n".join(raw)
    assert re.search(rf"LOAD_GLOBAL\s+{re.escape(with_null('graph 2'))}$", text, re.M), text
    assert re.search(rf"LOAD_GLOBAL\s+{RESUME_F}$", text, re.M), text
    assert "__compiled_fn_" not in text and "__import_" not in text \
        and "__resume_at_" not in text, text
    graph2 = graph_of(named, 2).name
    assert re.search(rf"LOAD_GLOBAL\s+{re.escape(with_null(graph2))}$", raw_text, re.M), raw_text
    assert re.search(r"LOAD_GLOBAL\s+__resume_at_\d+_\d+$", raw_text, re.M), raw_text
    # Every module dynamo imported (torch._dynamo.utils; on 2.15 torch.autograd.profiler
    # too) is named by the module in `ll`, by dynamo's global in `dis --raw`, with the
    # call's NULL where it was (3.13 pushes it after the callable, or later).
    readable, real = parse_listing(ll), parse_listing(raw)
    imports = real.find_all("LOAD_GLOBAL", re.compile(r".*__import_\w+.*"))
    assert imports, raw_text
    for instr in imports:
        assert readable.at(instr.index).arg == dotted(instr.arg), (readable.at(instr.index), instr)
    # Same instructions, only the names differ: the whole code object, each once.
    total = int(STOP.match(stops_in(head(named))[0]["line"])["total"])
    assert [i.index for i in readable] == [i.index for i in real] == list(range(total))
    assert len(ll) == len(raw)
    for a, b in zip(ll, raw):
        assert a.split()[:3] == b.split()[:3], (a, b)


def test_source_marks_current_line(named: Run) -> None:
    """At the resume function's entry the current line is 10, the graph break."""
    out = nth_segment(named, "source").output
    file_lines = GRAPH_BREAK.read_text().splitlines()
    parsed = []
    for line in out:
        match = re.match(r"^(->|  ) +(\d+)  ?(.*)$", line)
        assert match, f"unexpected source line {line!r}"
        parsed.append((match.group(1) == "->", int(match.group(2)), match.group(3)))
    marked = [number for is_current, number, _ in parsed if is_current]
    assert marked == [10], out
    numbers = [number for _, number, _ in parsed]
    assert 9 in numbers and 11 in numbers, out
    for _, number, text in parsed:
        assert text.rstrip() == file_lines[number - 1].rstrip(), (number, text)


def test_named_session_program_unchanged(named: Run) -> None:
    program_unchanged(named, plain("graph_break.py"))


# ---------------------------------------------------------------------------------------
# Session B: condition, tbreak, ignore, disable/enable, clear on named breakpoints.

NAMED_BOOKKEEPING = [
    "b resume, x.sum() > 100",        # 1  false (x.sum() == 6) until changed
    "tbreak graph 5",                 # 2  one stop, then deleted
    "b __compiled_fn_2",              # 3  disabled, enabled later
    "disable 3",
    "b __resume_at_*",                # 4  its first crossing ignored
    "ignore 4 1",
    "b torch_dynamo_resume_in_f*",    # 5  cleared
    "clear 5",
    "b",
    "c",                              # call 0: graph 5 (2); resume entry: 1 false, 4 ignored
    "b",
    "condition 1 x.sum() > 5",
    "enable 3",
    "c",                              # call 1: graph 2 (3)
    "c",                              # call 1: resume entry (1, 4); graph 5: tbreak gone
    "b",
    "c",                              # completes
    "c",                              # never read
]


@pytest.fixture(scope="module")
def bookkeeping(tmp_path_factory) -> Run:
    return run_dyndbg(GRAPH_BREAK, NAMED_BOOKKEEPING, tmp_path=tmp_path_factory.mktemp("bookkeeping"))


def test_named_bookkeeping_stops(bookkeeping: Run) -> None:
    stops = continue_stops(bookkeeping)
    assert len(stops) == 4, stops
    tb, g2, resume, end = stops
    assert tb is not None and tb["label"] == f"{RESUME_F} [1/0]" and tb["breakpoints"] == [(2, 1)], \
        f"call 0 should stop only at the tbreak on graph 5 (condition false, ignore, " \
        f"disabled, cleared): {tb}"
    assert g2 is not None and g2["label"] == "f [0/0]" and g2["breakpoints"] == [(3, 1)], g2
    assert resume is not None and resume["index"] == 1, resume
    # Hits count the crossing with a false condition and the ignored one (pdb's rule).
    assert resume["breakpoints"] == [(1, 2), (4, 2)], resume
    assert end is None, "the deleted tbreak (or the cleared breakpoint) stopped again"


def test_named_bookkeeping_listings(bookkeeping: Run) -> None:
    first = _listing(bookkeeping, 0)
    assert "if x.sum() > 100" in row(first, 1)
    assert row(first, 2).split()[1] == "tbreak"
    assert "disabled" in row(first, 3)
    assert "ignore next 1" in row(first, 4)
    assert not any(re.match(r"^5\s", line) for line in first), first
    second = _listing(bookkeeping, 1)
    assert not any(re.match(r"^2\s", line) for line in second), "tbreak still listed"
    assert re.search(r"\bhit 1 time\b", row(second, 1)), second   # false condition still counts
    assert "hit" not in row(second, 3), "a disabled breakpoint counted a hit"
    third = _listing(bookkeeping, 2)
    assert "if x.sum() > 5" in row(third, 1) and "enabled" in row(third, 3), third
    assert nth_segment(bookkeeping, "clear 5").output == ["Deleted breakpoint 5"]


def test_named_bookkeeping_program_unchanged(bookkeeping: Run) -> None:
    program_unchanged(bookkeeping, plain("graph_break.py"))


# ---------------------------------------------------------------------------------------
# User functions compiled later, by plain and module-qualified name; Class.method.
# nested_break.py: outer [0/0] runs first; inner is compiled as its own frame
# ([1/0]) only when it is called eagerly after outer's graph break.

@pytest.fixture(scope="module")
def nested(tmp_path_factory) -> Run:
    return run_dyndbg(NESTED, ["b inner", "b __main__.inner", "b", "c", "b", "c", "c", "c"],
                      tmp_path=tmp_path_factory.mktemp("nested"))


def test_break_function_compiled_later(nested: Run) -> None:
    for command in ("b inner", "b __main__.inner"):
        out = nth_segment(nested, command).output
        assert out and "pending" in out[0], out
    before = _listing(nested, 0)
    assert "pending" in row(before, 1) and "pending" in row(before, 2), before
    stops = continue_stops(nested)
    # inner's code entry in each call of outer; never inner's resume function.
    assert len(stops) == 3 and stops[2] is None, stops
    for stop, hits in ((stops[0], 1), (stops[1], 2)):
        assert stop is not None and re.fullmatch(r"inner \[\d+/0\]", stop["label"]), stop
        assert stop["index"] == 1 and stop["breakpoints"] == [(1, hits), (2, hits)], stop
        assert "nested_break.py:8" in stop["line"], stop["line"]
    after = _listing(nested, 1)
    for number in (1, 2):
        assert "resolved" in row(after, number) and "inner [" in row(after, number), after
        assert re.search(r"\bhit 1 time\b", row(after, number)), after


def test_nested_program_unchanged(nested: Run) -> None:
    program_unchanged(nested, plain("nested_break.py"))


@pytest.fixture(scope="module")
def method(tmp_path_factory) -> Run:
    return run_dyndbg(MODULE_BRANCH, ["b Net.forward", "b __main__.Net.forward",
                                      "b module_branch.Net.forward", "b", "c", "c"],
                      tmp_path=tmp_path_factory.mktemp("method"))


def test_break_class_method(method: Run) -> None:
    """Net.forward is the first compiled code, so it resolves at once; it stops
    at forward's entry in the second call (the first stop was the first call).
    The script's module is `__main__`; its file's name names it too, and the
    breakpoint says so."""
    out = nth_segment(method, "b Net.forward").output
    assert out and out[0].startswith("Breakpoint 1 at Net.forward") and "forward [0/0]" in out[0], out
    out = nth_segment(method, "b module_branch.Net.forward").output
    assert out == ["Breakpoint 3 at module_branch.Net.forward (resolved: in forward [0/0])",
                   "  module_branch runs as __main__: module_branch.Net.forward matches "
                   "__main__.Net.forward"], out
    stops = continue_stops(method)
    assert len(stops) == 2 and stops[1] is None, stops
    assert stops[0] is not None and stops[0]["label"] == "forward [0/0]", stops[0]
    assert stops[0]["index"] == 1 and stops[0]["breakpoints"] == [(1, 1), (2, 1), (3, 1)], stops[0]


def test_method_program_unchanged(method: Run) -> None:
    program_unchanged(method, plain("module_branch.py"))


# ---------------------------------------------------------------------------------------
# Catchpoints on graph_break.py and the resume-function view.
# Compiled code objects: f [0/0] (compiled before the first stop; its first run IS
# the first stop) and the resume function [1/0] (first run in call 0). So after
# `catch compile` at the first stop, it can fire only once: at [1/0] in call 0.
# Each call of f leaves its graph once for the resume function: `catch graph-break`
# fires twice.

CATCH_GB = ["catch graph-break", "catch compile",
            "p sorted(v.__code__.co_varnames[:v.__code__.co_argcount] "
            "for k, v in globals().items() if k.startswith('__resume_at_'))",
            "c", "c", "c", "c", "c", "c"]


@pytest.fixture(scope="module")
def catch_gb(tmp_path_factory) -> Run:
    return run_dyndbg(GRAPH_BREAK, CATCH_GB, tmp_path=tmp_path_factory.mktemp("catch_gb"))


def _catch_reports(run: Run, event: str) -> list[dict]:
    return [s for s in continue_stops(run) if s is not None
            and any(e == event for _, e, _ in s["catches"])]


def test_catch_graph_break_fires_once_per_call(catch_gb: Run) -> None:
    fired = _catch_reports(catch_gb, "graph-break")
    assert [s["catches"] for s in fired] == [[(1, "graph-break", 1)], [(1, "graph-break", 2)]], fired
    for stop in fired:
        assert stop["label"] == "f [0/0]" and "CALL_FUNCTION_EX" in stop["line"], stop["line"]


def test_catch_compile_once_per_compiled_code(catch_gb: Run) -> None:
    fired = _catch_reports(catch_gb, "compile")
    labels = [s["label"] for s in fired]
    assert labels == [f"{RESUME_F} [1/0]"], \
        f"`catch compile` should stop once (the resume function's first run); it stopped at " \
        f"{labels}. f [0/0]'s first run was the initial stop: its run in call 1 is no compile."


def test_resume_call_view_lists_parameters_with_values(catch_gb: Run) -> None:
    p = nth_segment(catch_gb, CATCH_GB[2]).output
    assert len(p) == 1, p
    # The resume function's real parameters (the oracle), from its code object.
    params = [name for name in re.findall(r"'([^']+)'", p[0])]
    assert {"___stack0", "x", "a"} <= set(params), p
    c_segs = [s for s in segments(catch_gb.transcript) if s.command == "c"]
    views = 0
    for seg in c_segs:
        if not any(e == "graph-break" for s in stops_in(seg.output) for _, e, _ in s["catches"]):
            continue
        views += 1
        lines = seg.output
        start = [i for i, line in enumerate(lines) if line == f"resume function {RESUME_F} called with:"]
        assert start, lines
        shown = {}
        for line in lines[start[0] + 1:]:
            match = re.match(r"^  (\S+)\s+(.*)$", line)
            if not match:
                break
            shown[match.group(1)] = match.group(2)
        assert list(shown) == params, f"view names {list(shown)} != parameters {params}"
        assert is_tensor(shown["x"], "f32[4] cpu [0, 1, 2, 3]"), shown
        a = ", ".join(f"{math.sin(i) + 1:.4g}" for i in range(4))
        assert is_tensor(shown["a"], f"f32[4] cpu [{a}]"), shown
        assert shown["___stack0"] == "None", shown       # print()'s result
    assert views == 2


def test_catch_gb_program_unchanged(catch_gb: Run) -> None:
    program_unchanged(catch_gb, plain("graph_break.py"))


# ---------------------------------------------------------------------------------------
# Guards, cache, catch compile/recompile on recompile.py: f compiled three times,
# [0/0] for f32[3], [0/1] for f32[4] (size guard fails), [0/2] for i64[3] (dtype).

GUARD_SESSION = [
    "guards",            # at [0/0]
    "cache",
    "catch compile",     # 1
    "catch recompile",   # 2
    "c",                 # [0/1]
    "guards",
    "guards all",
    "cache",
    "c",                 # [0/2]
    "guards",
    "guards all",
    "cache",
    "b",
    "c",                 # completes
    "c",                 # never read
]


@pytest.fixture(scope="module")
def guard_session(tmp_path_factory) -> Run:
    return _with_graph_code_log(RECOMPILE, GUARD_SESSION, tmp_path_factory.mktemp("guards"))


def _guard_sections(lines: list[str]) -> dict[str, list[str]]:
    """`guards of [ID]...:` header -> its lines."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in lines:
        match = re.match(r"^guards of \[(\d+/\d+)\]", line)
        if match:
            current = sections.setdefault(match.group(1), [line])
        elif current is not None:
            current.append(line)
    return sections


def _marks(section: list[str]) -> list[str]:
    return [m.group(1) for line in section[1:] if (m := re.match(r"^  (ok|FAIL)\b", line))]


def test_recompile_entry_lines_name_rejected_guard(guard_session: Run) -> None:
    first = "\n".join(head(guard_session))
    assert re.search(r"^  cache entry \[0/0\] runs$", first, re.M), first
    stops = continue_stops(guard_session)
    assert stops[0] is not None and stops[0]["label"] == "f [0/1]", stops
    assert stops[1] is not None and stops[1]["label"] == "f [0/2]", stops
    c_segs = [s for s in segments(guard_session.transcript) if s.command == "c"]
    shape = [line for line in c_segs[0].output if line.startswith("  cache entry ")]
    assert shape and shape[0].startswith("  cache entry [0/1] runs; "), c_segs[0].output
    assert re.search(r"\[0/0\] guard failed: [^;]*size mismatch[^;]*expected 3, actual 4", shape[0]), shape
    dtype = [line for line in c_segs[1].output if line.startswith("  cache entry ")]
    assert dtype and dtype[0].startswith("  cache entry [0/2] runs; "), c_segs[1].output
    assert re.search(r"\[0/0\] guard failed: [^;]*dtype mismatch", dtype[0]), dtype
    assert re.search(r"\[0/1\] guard failed: [^;]*mismatch", dtype[0]), dtype


def test_guards_all_ok_for_running_entry(guard_session: Run) -> None:
    for nth, cid in ((0, "0/0"), (1, "0/1"), (2, "0/2")):
        out = nth_segment(guard_session, "guards", nth).output
        sections = _guard_sections(out)
        assert list(sections) == [cid], out
        assert "(running)" in sections[cid][0]
        marks = _marks(sections[cid])
        assert marks and set(marks) == {"ok"}, out
        assert any("TENSOR_MATCH" in line for line in out), out


def test_guards_all_shows_fail_for_rejected_entries(guard_session: Run) -> None:
    at_shape = _guard_sections(nth_segment(guard_session, "guards all", 0).output)
    assert list(at_shape) == ["0/1", "0/0"], at_shape
    assert set(_marks(at_shape["0/1"])) == {"ok"}
    assert "FAIL" in _marks(at_shape["0/0"])
    assert any("^" in line and "size mismatch" in line for line in at_shape["0/0"]), at_shape["0/0"]
    at_dtype = _guard_sections(nth_segment(guard_session, "guards all", 1).output)
    assert list(at_dtype) == ["0/2", "0/1", "0/0"], at_dtype
    assert set(_marks(at_dtype["0/2"])) == {"ok"}
    for cid in ("0/1", "0/0"):
        fails = [line for line in at_dtype[cid] if line.startswith("  FAIL")]
        assert any("TENSOR_MATCH" in line for line in fails), at_dtype[cid]
    assert any("^" in line and "dtype mismatch" in line for line in at_dtype["0/0"]), at_dtype["0/0"]


def test_cache_lists_entries_with_backend_and_graph(guard_session: Run) -> None:
    torch_said = {g.compile_id: int(re.match(r"__compiled_fn_(\d+)_", name).group(1))
                  for name, g in torch_graphs(guard_session.stderr).items()}
    assert set(torch_said) == {"0/0", "0/1", "0/2"}, torch_said
    for nth, expected in ((0, ["0/0"]), (1, ["0/1", "0/0"]), (2, ["0/2", "0/1", "0/0"])):
        out = nth_segment(guard_session, "cache", nth).output
        assert out and re.match(rf"^f \(.*recompile\.py:8\): {len(expected)} cache entr", out[0]), out
        # Each entry's line, then why dynamo compiled it (test_why.py checks against torch).
        why = [line for line in out[1:] if line.startswith("     compiled")]
        # [0/0]: "the first compile"; [0/j]: one failing guard per older entry.
        assert len(why) == sum(max(1, int(e.split("/")[1])) for e in expected), out
        rows = [re.match(r"^(->|  ) \[(\d+/\d+)\]  guards (\d+)  backend (\S+)  calls (.*)$", line)
                for line in out[1:] if not line.startswith("     compiled")]
        assert all(rows) and [r.group(2) for r in rows] == expected, out
        assert [r.group(1) for r in rows] == ["->"] + ["  "] * (len(expected) - 1), out
        for r in rows:
            assert r.group(4) == "eager" and int(r.group(3)) > 0, r.group(0)
            assert r.group(5) == f"graph {torch_said[r.group(2)]}", (r.group(0), torch_said)


def test_catch_compile_and_recompile_counts(guard_session: Run) -> None:
    """Three compiled code objects: [0/0]'s first run is the initial stop (before
    any catchpoint exists), so `catch compile` fires twice, at [0/1] and [0/2]:
    three stops at first runs in all. `catch recompile` fires at the same two."""
    stops = continue_stops(guard_session)
    assert stops[2] is None and len(stops) == 3, stops
    assert [s["label"] for s in stops[:2]] == ["f [0/1]", "f [0/2]"]
    assert stops[0]["catches"] == [(1, "compile", 1), (2, "recompile", 1)], stops[0]
    assert stops[1]["catches"] == [(1, "compile", 2), (2, "recompile", 2)], stops[1]
    first_runs = [stops_in(head(guard_session))[0]["label"]] + [s["label"] for s in stops[:2]]
    assert first_runs == ["f [0/0]", "f [0/1]", "f [0/2]"]
    listing = _listing(guard_session, 0)
    assert re.search(r"\bhit 2 times\b", row(listing, 1)) and re.search(r"\bhit 2 times\b", row(listing, 2))


def test_guard_session_program_unchanged(guard_session: Run) -> None:
    program_unchanged(guard_session, plain("recompile.py"))


# ---------------------------------------------------------------------------------------
# `graph` on three backends (tests/programs/backends.py BACKEND). One inductor run.

BACKEND_SESSION = ["b graph 1", "c", "graph", "graph --output-code", "n", "c", "c"]


@pytest.fixture(scope="module")
def backend_runs(tmp_path_factory):
    cache: dict[str, Run] = {}

    def get(backend: str) -> Run:
        if backend not in cache:
            cache[backend] = _with_graph_code_log([BACKENDS, backend], BACKEND_SESSION,
                                                  tmp_path_factory.mktemp(f"backend_{backend}"))
        return cache[backend]
    return get


@pytest.fixture(scope="module")
def backends_plain() -> Run:
    # The program prints values rounded to 4 places: the same for every backend.
    return run_plain(BACKENDS, "eager")


def _check_graph_command(run: Run, backend: str) -> None:
    out = nth_segment(run, "graph").output
    g1 = graph_of(run, 1)
    assert out and out[0].startswith(f"graph 1 ({g1.name}), backend {backend}, 2 inputs, 2 outputs"), out
    text = "\n".join(out)
    assert "code: a = x.sin() + y" in text and "code: return a * 2, a.sum()" in text, text
    assert re.search(r'def forward\(self, L_x_: "f32\[4\]", L_y_: "f32\[4\]"\)', text), text
    c_segs = [s for s in segments(run.transcript) if s.command == "c"]
    check_inputs_against_torch(c_segs[0].output, g1)
    check_outputs_against_torch(nth_segment(run, "n").output, 1, g1)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_graph_command_backends(backend_runs, backends_plain: Run, backend: str) -> None:
    run = backend_runs(backend)
    _check_graph_command(run, backend)
    out = nth_segment(run, "graph --output-code").output
    assert len(out) == 1 and out[0].startswith("***") and "inductor" in out[0], out
    program_unchanged(run, backends_plain)


@pytest.mark.slow   # inductor compiles
def test_graph_command_inductor_and_output_code(backend_runs, backends_plain: Run) -> None:
    run = backend_runs("inductor")
    _check_graph_command(run, "inductor")
    code = "\n".join(nth_segment(run, "graph --output-code").output)
    assert not code.startswith("***"), code[:500]
    assert re.search(r"^\s*def call\(self, args\):", code, re.M) or \
        re.search(r"^def call\(args\):", code, re.M), code[-3000:]
    assert "async_compile" in code and "empty_strided_cpu" in code, code[:3000]
    program_unchanged(run, backends_plain)
