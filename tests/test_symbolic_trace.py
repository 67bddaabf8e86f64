"""Stops while dynamo compiles (`catch trace`, `b --trace`): stepping dynamo's
symbolic trace of tests/programs/traced_compiles.py, whose resume function
inlines scale() and breaks its graph again at a data-dependent `if`.

What is shown is checked against torch's own account of the same program:
the break reasons torch._dynamo.explain gives, the graphs the backend
received, the lines of the program's source. And the invariant: whatever is
looked at, at every instruction dynamo interprets, the program prints the
same and dynamo makes the same bytecode, graphs, guards and compile ids
(the program prints them, from torch's bytecode hook, its backend and
guard_export_fn)."""
from __future__ import annotations

import re

from harness import ROOT, run_dyndbg, run_plain

PROGRAM = ROOT / "tests" / "programs" / "traced_compiles.py"
SOURCE = PROGRAM.read_text().splitlines()
# Every look there is at a stop, after each step.
LOOK = "stack;;locals;;graph;;guards;;where;;l"


def line_of(text: str) -> int:
    """The program's line holding TEXT (no line numbers from one release here)."""
    return next(i for i, line in enumerate(SOURCE, 1) if text in line)


PRINT_LINE = line_of('print("first graph break")')
SCALE_LINE = line_of("return t * k")
IF_LINE = line_of("if b.sum() > 0:")
RELU_LINE = line_of("b = scale(a, 2).relu()")
SIN_LINE = line_of("a = x.sin() + n")


def explained_reasons() -> list[str]:
    run = run_plain(PROGRAM, "--explain")
    assert run.returncode == 0, run.stderr
    return [line.removeprefix("break reason: ") for line in run.stdout.splitlines()
            if line.startswith("break reason: ")]


def outputs(transcript: str) -> list[tuple[str, list[str]]]:
    """(command, its output lines), in order, from a transcript."""
    out: list[tuple[str, list[str]]] = []
    for line in transcript.splitlines():
        found = re.match(r"\((?:dyndbg|dyndbg compile)\) (.*)", line)
        if found:
            out.append((found.group(1).split(";;")[0], []))   # a chain echoes its rest
        elif out:
            out[-1][1].append(line)
    return out


def test_stepping_a_resume_function_while_dynamo_compiles_it_changes_nothing(tmp_path):
    """The issue's own case: catch trace of the resume function stops at its
    first line; s steps every instruction dynamo interprets (the prologue,
    the inlined call); stack shows the fake tensors, graph the node just
    built, the graph-break stop torch's reason; and with all that looked at
    at every stop, the program and what dynamo made are unchanged."""
    plain = run_plain(PROGRAM)
    assert plain.returncode == 0, plain.stderr
    # `p a.proxy` at the start would realize `a` (a guard on it): refused, unrealized.
    run = run_dyndbg(PROGRAM, [LOOK, "p a.proxy", "p a"] + [f"s;;{LOOK}"] * 90, tmp_path,
                     options=["--catch-trace", "torch_dynamo_resume_in_f*", "-c", "c"])
    text = run.transcript
    assert run.returncode == 0, run.stderr + text[-3000:]
    assert run.stdout == plain.stdout          # the output, bytecode, graphs, guards, ids
    assert "Traceback" not in text, text[-3000:]
    said = {command: lines for command, lines in reversed(outputs(text))}   # the first of each
    assert said["p a.proxy"][0].startswith("*** WouldChangeTrace: ") and \
        said["p a"] == ["LazyVariableTracker  Tensor f32[4], unrealized (no guard on it yet)  "
                        "from L['a']"], said
    assert text.count("***") == 1, text[-3000:]

    started = re.search(r"\[compile (\d+/\d+)\] dynamo starts tracing "
                        r"(torch_dynamo_resume_in_f_at_\d+) \(catchpoint 1\)\n"
                        r"  traced_compiles\.py:(\d+) in \2\n", text)
    assert started, text[:3000]
    resume_id, resume = started.group(1), started.group(2)
    assert int(started.group(3)) == PRINT_LINE and resume.endswith(f"_at_{PRINT_LINE}")

    steps = outputs(text)
    places = [line for _, lines in steps for line in lines
              if line.startswith(f"[compile {resume_id}] traced_compiles.py:")]
    assert any("(resume prologue)" in p for p in places), places
    inlined = [p for p in places if p.endswith("in scale (inlined, depth 1)")]
    # its RESUME is on the `def` line
    assert {int(re.search(r":(\d+) ", p).group(1)) for p in inlined} == \
        {line_of("def scale"), SCALE_LINE}, places
    assert any(f":{RELU_LINE} in {resume}" in p for p in places)

    # where, inside scale: the resume function's translator, then scale's inlining one
    wheres = [lines for command, lines in steps if command == "where" and len(lines) == 2]
    assert wheres and wheres[0][0].startswith(f"  {resume} at traced_compiles.py:{RELU_LINE}") \
        and "(InstructionTranslator)" in wheres[0][0], wheres[:1]
    assert wheres[-1][1] == f"> scale at traced_compiles.py:{SCALE_LINE}  " \
                            "(InliningInstructionTranslator)"

    stacks = [line for command, lines in steps if command == "stack" for line in lines]
    assert any(re.fullmatch(r"  \[\d\] TensorVariable  f32\[4\]  node \w+", s) for s in stacks), \
        stacks[:40]

    # The node scale's `t * k` made, marked new at the stop after it, is in the
    # graph the backend received for the resume function.
    new_in_scale = {m.group(1) for command, lines in steps if command == "graph" for line in lines
                    if (m := re.match(rf"  \+ (\w+) +call_\w+ .* traced_compiles\.py:{SCALE_LINE}$",
                                      line))}
    assert len(new_in_scale) == 1, new_in_scale
    node = new_in_scale.pop()
    assert any(re.search(rf"\b{node}\b", code) for code in _made(run.stdout)["graphs"]), node

    # The graph break dynamo decides in the resume function: torch's reason.
    # Stepping on from the graph break: the compile ends, and the step with it.
    assert f"dyndbg: compile {resume_id} ended; the step ends with it" in text

    breaks = re.findall(rf"\[compile {resume_id}\] graph break in {resume}: .*\n"
                        r"  reason: (.*)\n(?:    .*\n)*  traced_compiles\.py:(\d+)", text)
    assert breaks and breaks[0][0] == explained_reasons()[1] and \
        int(breaks[0][1]) == IF_LINE, breaks


def test_first_compile_restart_graph_break_and_recompile_of_f(tmp_path):
    """catch trace f: the first compile's restart and its graph break, each
    with torch's reason, then the recompile (n changed) stops again."""
    plain = run_plain(PROGRAM)
    # n's type check would add a guard on it without realizing it: refused.
    run = run_dyndbg(PROGRAM, ["p n.python_type()", "p n", "c", "guards", "c", "stack", "graph",
                               "c", "c", "c", "c"], tmp_path, options=["--catch-trace", "f"])
    text = run.transcript
    assert run.returncode == 0 and run.stdout == plain.stdout, run.stderr + text[-3000:]
    said = {command: lines for command, lines in reversed(outputs(text))}
    assert said["p n.python_type()"][0].startswith("*** WouldChangeTrace: ") and \
        said["p n"] == ["LazyConstantVariable  int 3, unrealized (no guard on it yet)  "
                        "from L['n']"], said
    reason = explained_reasons()[0]
    restart = re.search(r"\[compile 0/0\] restart \(\w*RestartAnalysis\): dynamo drops this "
                        r"attempt at tracing f .*\n  reason: (.*)\n", text)
    assert restart and restart.group(1) == reason, text[:3000]
    broke = re.search(r"\[compile 0/0_1\] graph break in f: dynamo compiles the graph so far "
                      r"\((\d+) nodes as built, inputs included\)\n  reason: (.*)\n", text)
    assert broke and broke.group(2) == reason
    steps = outputs(text)
    # At the restart, before the graph break's compile: the guards of the line that ran.
    guards = next(lines for command, lines in steps if command == "guards")
    assert any(re.fullmatch(rf"  TENSOR_MATCH +L\['x'\] +traced_compiles\.py:{line_of('a = x.sin()')}"
                            r"  a = x\.sin\(\) \+ n", g) for g in guards), guards
    graph = next(lines for command, lines in steps if command == "graph")
    assert len(graph) == int(broke.group(1)) + 1 and any(" sin " in n for n in graph), graph
    assert re.search(r"\[compile 0/1\] dynamo starts tracing f \(catchpoint 1\)", text), text


def test_trace_breakpoint_in_an_inlined_function_then_return_and_bad_input(tmp_path):
    """b --trace FILE:LINE stops where dynamo inlines that line; r goes back
    to the caller's next instruction; what has no meaning while compiling
    says so in one line. A tbreak --trace says, at its stop, that it is
    deleted (as pdb does), and is gone."""
    run = run_dyndbg(PROGRAM, [f"b --trace traced_compiles.py:{SCALE_LINE}", "c", "where",
                               "cache", "graph 2", "catch trace a b", "b --trace nowhere",
                               "p len(__stack__) >= 0", "r", "where", "nl",
                               f"tbreak --trace traced_compiles.py:{SIN_LINE}", "c", "c", "b"],
                     tmp_path)
    text = run.transcript
    assert run.returncode == 0, run.stderr + text[-3000:]
    assert "Traceback" not in text, text
    steps = outputs(text)
    commands = [command for command, _ in steps]
    assert commands[:2] == [f"b --trace traced_compiles.py:{SCALE_LINE}", "c"], commands
    stop = steps[1][1]
    assert re.match(rf"\[compile \d+/0\] traced_compiles\.py:{SCALE_LINE} in scale "
                    r"\(inlined, depth 1\) \(breakpoint 1\)", stop[0]), stop
    assert steps[2] == ("where", [f"  torch_dynamo_resume_in_f_at_{PRINT_LINE} at "
                                  f"traced_compiles.py:{RELU_LINE}  (InstructionTranslator)",
                                  f"> scale at traced_compiles.py:{SCALE_LINE}  "
                                  "(InliningInstructionTranslator)"]), steps[2]
    said = dict(steps[3:8])
    for command in ("cache", "graph 2", "catch trace a b", "b --trace nowhere"):
        assert len(said[command]) == 1 and said[command][0].startswith("*** "), \
            (command, said[command])
    assert said["p len(__stack__) >= 0"] == ["True"]
    command, back = steps[8]
    assert command == "r" and re.match(rf"\[compile \d+/0\] traced_compiles\.py:{RELU_LINE} in "
                                       r"torch_dynamo_resume_in_f_at_\d+$", back[0]), back
    assert steps[9][1] == [f"> torch_dynamo_resume_in_f_at_{PRINT_LINE} at "
                           f"traced_compiles.py:{RELU_LINE}  (InstructionTranslator)"]
    # nl: over the rest of the line (relu, the store) to the next one
    command, moved = steps[10]
    assert command == "nl" and re.match(rf"\[compile \d+/0\] traced_compiles\.py:{IF_LINE} in "
                                        r"torch_dynamo_resume_in_f_at_\d+$", moved[0]), moved
    # tbreak --trace: past the graph break at the `if`, f's recompile traces its first
    # line; the stop says the breakpoint is gone, and the recompile's restart does not stop there
    command, made = steps[11]
    number = re.fullmatch(rf"Temporary breakpoint (\d+) at --trace traced_compiles\.py:{SIN_LINE}",
                          made[0])
    assert number, made
    command, hit = steps[13]
    assert hit[0] == f"Deleted breakpoint {number[1]} at --trace traced_compiles.py:{SIN_LINE}", hit
    assert re.match(rf"\[compile \d+/1\] .*traced_compiles\.py:{SIN_LINE} in f .*"
                    rf"breakpoint {number[1]}\)$", hit[1]), hit
    assert not any(line.startswith(f"{number[1]} ") for line in steps[14][1]), steps[14]
    assert text.count(f"(breakpoint {number[1]})") == 1, text


def _made(stdout: str) -> dict:
    import json
    line = next(line for line in stdout.splitlines() if line.startswith("made: "))
    return json.loads(line.removeprefix("made: "))


CLOSURES = ROOT / "tests" / "programs" / "closure_builtin.py"
CLOSURE_SOURCE = CLOSURES.read_text().splitlines()


def test_a_closure_s_cells_show_what_they_hold_from_a_real_first_line(tmp_path):
    """Issue 48's program: a free variable holding the builtin float, and one
    the compiled frame stores to. Its compile stops first on COPY_FREE_VARS,
    which has no line: the stop gives the `def` line and says it is before
    the first; `locals` and `p` show each cell with what it holds, the
    stored one as the program itself then reads it."""
    plain = run_plain(CLOSURES)
    def_fn = next(i for i, line in enumerate(CLOSURE_SOURCE, 1) if "def fn(x):" in line)
    run = run_dyndbg(CLOSURES, ["locals", "p t", "where", "c", "c", "nl", "nl", "nl", "locals",
                                "p count", "c"], tmp_path, options=["--catch-trace", "*"])
    text = run.transcript
    assert run.returncode == 0 and run.stdout == plain.stdout, run.stderr + text[-3000:]
    assert f"  closure_builtin.py:{def_fn} (before its first line) in fn\n" \
           f"  {def_fn:<6}def fn(x):\n-> COPY_FREE_VARS" in text, text[:2000]
    said = {command: lines for command, lines in reversed(outputs(text))}
    cell_t = [line for line in said["locals"] if line.split()[0] == "t"]
    # What the program's closure holds: the builtin float, named as dynamo's tracker has it.
    assert len(cell_t) == 1 and re.search(r"\bCellVariable  cell holding \w+ float\b", cell_t[0]), \
        said["locals"]
    assert said["p t"] == [cell_t[0].split(None, 1)[1]]
    assert said["where"] == [f"> fn at closure_builtin.py:{def_fn} (before its first line)  "
                             "(InstructionTranslator)"]
    # After `count = count + 1` dynamo holds the new count, which the program prints last.
    count = next(line for command, lines in reversed(outputs(text)) if command == "locals"
                 for line in lines if line.split()[0] == "count")
    stored = int(plain.stdout.split()[-1])
    assert re.search(rf"cell holding \w*ConstantVariable int {stored}\b.*, set in this trace", count), \
        count
    assert "***" not in text and ":None" not in text, text
