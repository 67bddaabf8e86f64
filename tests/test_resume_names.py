"""The names dyndbg gives resume functions and backends, over the whole
corpus, against torch's own account: every `__resume_at_*` global that generated code loads
is shown (`ll`, the stop line, `cache`) by the name of the code object dynamo
installed it for, as `OutputGraph.install_resume_function_global` received it
(tests/programs/corpus_resumes.py records its arguments). Where that code has
free variables (the resume function of a closure's call dynamo inlined) the
global holds a factory that makes the function, whose own name is not the
resume function's. `why` in each resume function names the code that
calls it (found by the global that holds it). The backend `cache` gives
each entry, and the `graph` header each graph called, is the one torch's
compile log names for the compile that made it.
"""
from __future__ import annotations

import re

from harness import ROOT, run_dyndbg
from listing import parse_listing
from transcript import no_traceback, segments

CORPUS_RESUMES = ROOT / "tests" / "programs" / "corpus_resumes.py"
RAW_RESUME = re.compile(r"__resume_at_\d+_\d+")
INSTALLED = re.compile(r"^resume global (?P<name>\S+) (?P<code>\S+) (?P<factory>True|False)$", re.M)
CALLS = re.compile(r"^(?:->|  ) \[\d+/\d+\].*  calls (?P<called>.*)$")
LOGGED_BACKEND = re.compile(r"^backend (?P<id>\S+) (?P<name>\S+)$", re.M)
ENTRY_BACKEND = re.compile(r"^(?:->|  ) \[(?P<id>\d+/\d+)\]\s+guards \d+\s+backend (?P<name>\S+)")
GRAPH_CALLED = re.compile(r"^graph (?P<n>\d+) \(__compiled_fn_\w+\) called from \S+ \[(?P<id>\d+/\d+)\]",
                          re.M)
GRAPH_HEADER = re.compile(r"^graph (?P<n>\d+) \(__compiled_fn_\w+\), backend (?P<name>\S+),", re.M)
ROUNDS = 2000         # more rounds of commands than the corpus has stops


def test_resume_globals_named_by_the_code_dynamo_made(tmp_path) -> None:
    run = run_dyndbg(CORPUS_RESUMES, ["catch graph-break", "b resume", "b __compiled_fn_*"]
                     + ["ll", "dis --raw", "cache", "why", "graph", "c"] * ROUNDS, tmp_path=tmp_path)
    no_traceback(run)
    assert "uncaught_exit1.py ended: RuntimeError" in run.stdout, run.stdout[-3000:]
    installed = {m["name"]: m["code"] for m in INSTALLED.finditer(run.stderr)}
    factories = {m["name"] for m in INSTALLED.finditer(run.stderr) if m["factory"] == "True"}
    assert factories, f"no resume function with free variables in the corpus:\n{run.stderr[-3000:]}"
    parts = segments(run.transcript)
    assert sum(p.command == "c" for p in parts) < ROUNDS, "the input ran out before the program"
    shown: set[str] = set()
    for listed, raw in zip(parts, parts[1:]):
        if (listed.command, raw.command) != ("ll", "dis --raw"):
            continue
        readable, real = parse_listing(listed.output), parse_listing(raw.output)
        for instr in real.find_all("LOAD_GLOBAL", re.compile(rf".*{RAW_RESUME.pattern}")):
            global_name = RAW_RESUME.search(instr.arg).group()      # type: ignore[union-attr]
            expected = instr.arg.replace(global_name, installed[global_name])
            assert readable.at(instr.index).arg == expected, (readable.at(instr.index), instr)
            shown.add(global_name)
    assert factories & shown, (factories, shown)
    logged = {m["id"]: m["name"] for m in LOGGED_BACKEND.finditer(run.stderr)}
    entries = [m for line in run.transcript.splitlines() if (m := ENTRY_BACKEND.match(line))]
    assert entries and {m["name"] for m in entries} >= {"eager", "aot_eager"}, entries[:5]
    # A compile whose graph has no node calls no backend, and torch's log names none.
    checked = [entry for entry in entries if entry["id"] in logged]
    assert len({entry["id"] for entry in checked}) > 50, (len(checked), len(logged))
    for entry in checked:
        assert entry["name"] == logged[entry["id"]], (entry.group(), logged[entry["id"]])
    made_in = {m["n"]: m["id"] for m in GRAPH_CALLED.finditer(run.transcript)}
    headers = list(GRAPH_HEADER.finditer(run.transcript))
    assert len({h["n"] for h in headers}) > 20, headers[:5]
    for header in headers:
        assert header["name"] == logged[made_in[header["n"]]], (header.group(), made_in)
    names = set(installed.values())
    for part in parts:
        if part.command == "cache":
            for line in part.output:
                called = CALLS.match(line)
                for name in called["called"].split(", ") if called else ():
                    assert re.fullmatch(r"graph \d+|nothing", name) or name in names, (line, names)
    resumes = [part for part in parts if part.command == "why"
               and part.output and " is a resume function" in part.output[0]]
    assert resumes, run.transcript[-3000:]
    for part in resumes:
        assert re.match(r".* is a resume function: .* calls it after its graph break$",
                        part.output[0]), part.output[0]
