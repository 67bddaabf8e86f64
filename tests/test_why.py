"""Why dynamo made the code (issue 37, first part): at each `catch
graph-break` stop, torch's own reason for the break and the user's line; in
a resume function, `why` names the break that made it. Checked against
torch's own account of the same program (its list of graph-break reasons and
`torch._dynamo.explain`), run here in-process on whichever torch the suite
runs on, never against strings copied from one release."""
from __future__ import annotations

import contextlib
import io
import re
import runpy
from pathlib import Path

import pytest

from harness import ROOT, run_dyndbg, run_plain
from transcript import no_traceback

PROGRAM = ROOT / "tests" / "programs" / "five_breaks.py"
# At a stop, above the resume call's arguments: the break, then the user's line.
SHOWN = re.compile(r"^graph break at (\S+):(\d+): (.*?)(?: \((GB\d+)\))?\n  .*\n"
                   r"resume function ", re.M)
GB_LINK = re.compile(r"/gb/gb(\d+)\.html")


@pytest.fixture(scope="module")
def torch_account() -> tuple[list[tuple[str, int, str, str | None]], list]:
    """(file, line, first line, GB id) of each break torch records when the
    program's function compiles, and explain()'s break reasons."""
    import torch
    import torch._dynamo
    program = runpy.run_path(str(PROGRAM))
    torch._dynamo.reset()
    with contextlib.redirect_stdout(io.StringIO()):
        torch.compile(program["f"], backend="eager")(*program["inputs"]())
        recorded = list(torch._dynamo.utils.graph_break_reasons)
        explained = torch._dynamo.explain(program["f"])(*program["inputs"]())
    torch._dynamo.reset()

    def gb(text: str) -> str | None:
        found = GB_LINK.search(text)
        return f"GB{found.group(1)}" if found else None
    return ([(Path(r.user_stack[-1].filename).name, r.user_stack[-1].lineno,
              r.reason.strip().splitlines()[0].strip(), gb(r.reason)) for r in recorded],
            list(explained.break_reasons))


def test_each_graph_break_stop_gives_torchs_reason_and_the_user_line(
        tmp_path: Path, torch_account) -> None:
    recorded, explained = torch_account
    run = run_dyndbg(PROGRAM, ["catch graph-break"] + ["c", "why"] * 6, tmp_path)
    assert (run.stdout, run.returncode) == (run_plain(PROGRAM).stdout, 0), run.stderr[-2000:]
    shown = [(file, int(line), summary, gb or None)
             for file, line, summary, gb in SHOWN.findall(run.transcript)]
    # The five kinds, each on the line the program marks, as torch recorded them.
    marked = [n for n, line in enumerate(PROGRAM.read_text().splitlines(), 1)
              if "# a " in line or "# Tensor.item()" in line or "# an explicit" in line]
    assert len(marked) == 5 and [line for _, line, _, _ in recorded] == marked, recorded
    assert shown == recorded, (shown, recorded)
    # explain() reports the breaks that end a graph: each is among them.
    for reason in explained:
        first = reason.reason.strip().splitlines()[0].strip()
        assert (PROGRAM.name, reason.user_stack[-1].lineno, first) in \
            [(f, n, s) for f, n, s, _ in shown], first


def test_why_in_a_resume_function_names_the_break_that_made_it(
        tmp_path: Path, torch_account) -> None:
    recorded, _ = torch_account
    run = run_dyndbg(PROGRAM, ["catch graph-break", "c", "c", "why", "c", "why", "c", "c", "c"],
                     tmp_path)
    answers = run.transcript.split("(dyndbg) why\n")[1:]
    assert len(answers) == 2, run.transcript[-3000:]
    for answer, (file, line, summary, _) in zip(answers, recorded):
        first, made_by = answer.splitlines()[:2]
        assert re.fullmatch(r"torch_dynamo_resume_in_f_at_\d+ \[\d+/0\] is a resume function: "
                            r"\S+ \[\d+/0\] calls it after its graph break", first), first
        assert made_by.startswith(f"graph break at {file}:{line}: {summary}"), made_by
    # At the resume function's first stop, one line says which break made it.
    assert f"  made by the graph break at {recorded[0][0]}:{recorded[0][1]}: " \
        f"{recorded[0][2]}" in run.transcript


def test_the_editor_gets_the_same_why_and_each_compiles_breaks(tmp_path: Path,
                                                                torch_account) -> None:
    """Through DAP: `dyndbg/why` and `why` in the debug console answer as the
    prompt does at the same stop, and each `dyndbg/compile` of code that
    breaks its graph carries torch's reason."""
    from dap_session import adapter_session
    recorded, _ = torch_account
    cli = run_dyndbg(PROGRAM, ["b torch_dynamo_resume_in_*", "c", "why", "q"], tmp_path)
    expected = cli.transcript.split("(dyndbg) why\n")[1].split("(dyndbg) ")[0].rstrip("\n")
    with adapter_session() as dap:
        client = dap.client
        # At the first resume call (an instruction breakpoint on the CALL of the
        # resume function): the stopped event's text is torch's reason for the
        # break there, as the prompt's line.
        dap.launch(PROGRAM, stop_on_entry=True,
                   function_breakpoints=[{"name": "torch_dynamo_resume_in_*"}])
        dap.stopped(reason="entry")
        listing = dap.disassemble(dap.top()["instructionPointerReference"], 0, 400)
        texts = [i["instruction"] for i in listing]
        loaded = next(n for n, text in enumerate(texts) if "torch_dynamo_resume_in_f" in text)
        call = next(i for i in listing[loaded:] if i["instruction"].startswith("CALL"))
        client.ok("setInstructionBreakpoints",
                  {"breakpoints": [{"instructionReference": call["address"]}]})
        mark = client.mark()
        client.ok("continue", {"threadId": dap.thread})
        body = dap.stopped(after=mark)
        file, line, summary, _ = recorded[0]
        assert body.get("text", "").startswith(f"graph break at {file}:{line}: {summary}"), body
        client.ok("setInstructionBreakpoints", {"breakpoints": []})
        mark = client.mark()
        client.ok("continue", {"threadId": dap.thread})
        dap.stopped(after=mark, reason="function breakpoint")
        frame = dap.top()
        assert client.ok("dyndbg/why", {})["text"] == expected
        assert dap.repl("why", frame["id"]) == expected
        breaks = [b for e in client.events if e["event"] == "dyndbg/compile"
                  for b in e["body"].get("graphBreaks", [])]
        assert breaks and breaks[0]["where"] == f"{recorded[0][0]}:{recorded[0][1]}", breaks
        assert breaks[0]["reason"] == recorded[0][2] and breaks[0]["gbId"] == recorded[0][3]
        dap.disconnect()


GUARD_PROGRAM = ROOT / "tests" / "programs" / "guard_origins.py"
MANAGER = re.compile(r"^  \S+ +\d+ +source=(.*), type=")
LEAF = re.compile(r"^  (?:ok|FAIL|n/a) +(\d+) +\w+: .*?(?:  # (\S+):(\d+)|  \(torch's own\))$")
STACK_FRAME = re.compile(r"^    (\S+):(\d+) in \S+$", re.M)
NUMBERS = range(40)   # `why guard N` for each, more than the listing has


def test_each_guards_line_is_the_last_frame_of_torchs_user_stack(tmp_path: Path) -> None:
    """`guards` gives, for each guard, the line that installed it: the last
    frame of the user stack torch keeps on the Guard (guard_export_fn); `why
    guard N` that whole stack."""
    import torch
    import torch._dynamo
    program = runpy.run_path(str(GUARD_PROGRAM))
    exported: dict[str, set[int]] = {}
    stacks: dict[str, list[list[tuple[str, int]]]] = {}

    def export(guards) -> None:  # type: ignore[no-untyped-def]
        for guard in guards:
            if guard.user_stack:
                exported.setdefault(guard.name, set()).add(guard.user_stack[-1].lineno)
                stacks.setdefault(guard.name, []).append(
                    [(frame.filename, frame.lineno) for frame in guard.user_stack])
    torch._dynamo.reset()
    torch._dynamo.optimize("eager", guard_export_fn=export)(program["f"])(*program["inputs"]())
    torch._dynamo.reset()
    run = run_dyndbg(GUARD_PROGRAM, ["guards", *[f"why guard {n}" for n in NUMBERS], "c"],
                     tmp_path)
    no_traceback(run)
    listing = run.transcript.split("(dyndbg) guards\n")[1].split("(dyndbg) ")[0].splitlines()
    said = {n: run.transcript.split(f"(dyndbg) why guard {n}\n")[1].split("(dyndbg) ")[0]
            for n in NUMBERS}
    shown: dict[str, set[int]] = {}
    source = ""
    for line in listing:
        manager, leaf = MANAGER.match(line), LEAF.match(line)
        if manager:
            source = manager.group(1)
        elif leaf and leaf.group(2):
            assert leaf.group(2) == GUARD_PROGRAM.name, line
            shown.setdefault(source, set()).add(int(leaf.group(3)))
            # The whole stack: one torch recorded for a guard on this source (or
            # on one it reads, as `G['f']`'s closure guard reads `G['f'].__code__`).
            stack = [(file, int(number)) for file, number in
                     STACK_FRAME.findall(said[int(leaf.group(1))])]
            recorded = [each for name, each_stacks in stacks.items()
                        if source.startswith(name) for each in each_stacks]
            assert stack in recorded, (line, said[int(leaf.group(1))], stacks)
            assert stack[-1][1] == int(leaf.group(3)), (line, stack)
        elif leaf:
            assert "torch installs it itself" in said[int(leaf.group(1))], (line, said)
    # The dict item is read in a function f calls: two frames, f's call and the read.
    assert {len(s) for s in stacks["G['TABLE']['scale']"]} == {2}, stacks
    # The three kinds, each on the line the program marks.
    marked = {n for n, text in enumerate(GUARD_PROGRAM.read_text().splitlines(), 1)
              if "# a global" in text or "# a dict" in text or "# an argument" in text}
    assert {line for lines in shown.values() for line in lines} == marked, (shown, listing)
    for name, lines in shown.items():
        recorded = {n for guard, each in exported.items() if name.startswith(guard) for n in each}
        assert lines <= recorded, (name, lines, exported)
    for guard, lines in exported.items():
        if lines & marked:
            assert any(source.startswith(guard) for source in shown), (guard, shown, exported)


RECOMPILES = ROOT / "tests" / "programs" / "recompiles.py"
BECAUSE = re.compile(r"^ +compiled because \[(\d+/\d+)\] failed (.*)  \((\S+)\)$", re.M)


def test_cache_and_why_give_torchs_reasons_for_each_recompile(tmp_path: Path) -> None:
    """What compiled [0/1] and [0/2]: each older entry's failing guard as
    torch's guard_fail_fn receives it, with the line guard_export_fn's user
    stack gives that guard."""
    import torch
    import torch._dynamo
    step = runpy.run_path(str(RECOMPILES))["step"]
    failed: list[str] = []
    lines: dict[str, int] = {}

    def export(guards) -> None:  # type: ignore[no-untyped-def]
        lines.update({g.name: g.user_stack[-1].lineno for g in guards if g.user_stack})
    torch._dynamo.reset()
    compiled = torch._dynamo.optimize("eager", guard_fail_fn=lambda fail: failed.append(fail.reason),
                                      guard_export_fn=export)(step)
    for i in range(3):
        step.__globals__["calls"] = i
        compiled(torch.ones(2))
    torch._dynamo.reset()
    # torch's text: "0/0: <the guard's code>", maybe with its comment after "  # ".
    torch_said = [tuple(text.split("\n")[0].split("  # ")[0].strip().split(": ", 1))
                  for text in failed]
    assert len(torch_said) == 3, failed         # [0/1]: 0/0's; [0/2]: 0/1's and 0/0's

    run = run_dyndbg(RECOMPILES, ["why", "b step", "c", "c", "cache", "p calls", "why", "c"],
                     tmp_path)
    no_traceback(run)
    first = run.transcript.split("(dyndbg) why\n")[1].split("(dyndbg) ")[0]
    calling = next(n for n, text in enumerate(RECOMPILES.read_text().splitlines(), 1)
                   if "compiled(torch.ones(2))" in text)
    assert first == f"step [0/0] is the first compile of step, called from " \
                    f"{RECOMPILES.name}:{calling} in <module>\n", first
    cache = run.transcript.split("(dyndbg) cache\n")[1].split("(dyndbg) ")[0]
    shown = BECAUSE.findall(cache)
    assert sorted((older, guard) for older, guard, _ in shown) == sorted(torch_said), (shown, failed)
    marked = next(n for n, text in enumerate(RECOMPILES.read_text().splitlines(), 1)
                  if "# the global" in text)
    assert {where for _, _, where in shown} == {f"{RECOMPILES.name}:{marked}"}
    assert lines.get("G['calls']") == marked, lines
    answer = run.transcript.split("(dyndbg) why\n")[2].split("(dyndbg) ")[0]
    assert answer.startswith("step [0/2] is a recompile of step"), answer
    assert all(f"[{older}] failed {guard}" in answer for older, guard in torch_said[1:]), answer
    # For this call, each older entry's failing guard, the line that installed it
    # (the failing guard's user stack, which guard_export_fn's agrees with) and
    # the value that failed it: what the program's own `calls` is at this stop.
    calls = run.transcript.split("(dyndbg) p calls\n")[1].split("\n")[0]
    this_call = answer.split("for this call:\n")[1]
    for older, guard in torch_said[1:]:
        assert f"  [{older}] guard failed: {guard}  ({RECOMPILES.name}:{marked})\n" \
               f"    G['calls'] is {calls}\n" in this_call, this_call


GIVES_UP = ROOT / "tests" / "programs" / "gives_up.py"


def test_when_dynamo_gives_up_one_line_says_so_with_torchs_last_reason(tmp_path: Path) -> None:
    """Past config.recompile_limit the function runs eagerly and never reaches
    dyndbg again: one line on dyndbg's output says so, with the limit and
    torch's last reason (the newest entry's failing guard) and its line."""
    import logging

    import torch
    import torch._dynamo
    said: list[tuple] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "recompile_limit" in str(record.args):
                said.append(tuple(record.args or ()))
    keep = Keep()
    logging.getLogger("torch._dynamo.convert_frame").addHandler(keep)
    try:
        program = runpy.run_path(str(GIVES_UP))
        torch._dynamo.reset()
        compiled = torch.compile(program["f"], backend="eager")
        for i in range(torch._dynamo.config.recompile_limit + 2):
            program["f"].__globals__["n"] = i
            compiled(torch.ones(1))
        torch._dynamo.reset()
    finally:
        logging.getLogger("torch._dynamo.convert_frame").removeHandler(keep)
    assert len(said) == 1, said
    limit, value, _, last = said[0][:4]     # then torch's troubleshooting link
    older, guard = str(last).split("\n")[0].split("  # ")[0].strip().split(": ", 1)

    run = run_dyndbg(GIVES_UP, ["c"], tmp_path)
    assert (run.stdout, run.returncode) == (run_plain(GIVES_UP).stdout, 0)
    [line] = [t for t in run.transcript.splitlines() if "gave up" in t]
    marked = next(n for n, text in enumerate(GIVES_UP.read_text().splitlines(), 1)
                  if "# the global" in text)
    assert f"config.{limit} ({value})" in line and "'f'" in line, line
    assert line.endswith(f"[{older}] failed {guard}  ({GIVES_UP.name}:{marked})"), (line, last)
    # With `catch recompile`: a stop at each recompile, then, after the give-up,
    # at the next generated code to run, saying why.
    caught = run_dyndbg(GIVES_UP, ["catch recompile", *["c"] * (int(value) + 1)], tmp_path)
    no_traceback(caught)
    stops = re.findall(r"^> (\w+) \[(\d+/\d+)\]", caught.transcript, re.M)
    assert stops == [("f", "0/0"), *[("f", f"0/{j}") for j in range(1, int(value))],
                     ("after", "1/0")], stops
    calling = next(n for n, text in enumerate(GIVES_UP.read_text().splitlines(), 1)
                   if "# the call dynamo gives up on" in text)
    before_after = caught.transcript.split("> after [1/0]")[0].splitlines()
    assert before_after[-1] == f"Stopped at the first generated code since dynamo gave up on " \
        f"'f' ({GIVES_UP}:{marked - 1}) (catch recompile) at {GIVES_UP}:{calling}", before_after[-3:]
    assert "gave up" in before_after[-2], before_after[-3:]


def test_the_cache_api_gives_each_guards_stack_and_why_an_entry_was_compiled() -> None:
    """dyndbg.cache.guards gives each guard's line and whole user stack, as
    guard_export_fn's Guards have them; dyndbg.cache.why the failing guards
    guard_fail_fn received for each recompile, and the call of the first."""
    import torch
    import torch._dynamo
    import dyndbg.cache as dc
    torch._dynamo.reset()
    program = runpy.run_path(str(GUARD_PROGRAM))
    stacks: list[list[tuple[str, int]]] = []

    def export(guards) -> None:  # type: ignore[no-untyped-def]
        stacks.extend([(f.filename, f.lineno) for f in g.user_stack] for g in guards
                      if g.user_stack)
    torch._dynamo.optimize("eager", guard_export_fn=export)(program["f"])(*program["inputs"]())
    views = dc.guards("0/0")
    mine = [v for v in views if v.origin not in (None, "torch")]
    assert mine and all(v.user_stack is not None for v in mine), views
    for view in mine:
        assert view.user_stack is not None
        frames = [(f.filename, f.lineno) for f in view.user_stack]
        assert frames in stacks, (view, stacks)
        assert f"{Path(frames[-1][0]).name}:{frames[-1][1]}" == view.origin, view
    assert any(len(v.user_stack or ()) == 2 for v in mine), views   # the inlined read
    assert all(v.user_stack is None for v in views if v.origin == "torch"), views
    assert str(views[0]).startswith(f"{views[0].number}: "), views[0]

    torch._dynamo.reset()
    step = runpy.run_path(str(RECOMPILES))["step"]
    failed: list[str] = []
    compiled = torch._dynamo.optimize("eager", guard_fail_fn=lambda f: failed.append(f.reason))(step)
    for i in range(3):
        step.__globals__["calls"] = i
        compiled(torch.ones(2))                         # the call that compiles
    calling = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                   if text.endswith("# the call that compiles"))
    first, third = dc.why("0/0"), dc.why("0/2")
    torch._dynamo.reset()
    assert first.known and first.first_compile and not first.because, first
    assert first.called_from == f"{Path(__file__).name}:{calling} in " \
        "test_the_cache_api_gives_each_guards_stack_and_why_an_entry_was_compiled", first
    torch_said = [tuple(text.split("\n")[0].split("  # ")[0].strip().split(": ", 1))
                  for text in failed]
    assert [(r.older, r.guard) for r in third.because] == torch_said[1:], (third, failed)
    assert str(third).startswith("step [0/2] is a recompile of step"), str(third)


def test_a_tensor_checks_failure_is_never_called_torchs_own() -> None:
    """Torch words a failing tensor check without the guard's line ("tensor 'x'
    dtype mismatch ..."), though the guard came from the program's line
    (guard_export_fn's TENSOR_MATCH has a user stack): no line is given then,
    never "torch's own"."""
    import torch
    import torch._dynamo
    from dyndbg.dynamo.compiles import recompiles as recompile_reasons

    def g(x):
        return x * 3
    failed: list[str] = []
    installed: list[object] = []
    torch._dynamo.reset()
    compiled = torch._dynamo.optimize(
        "eager", guard_fail_fn=lambda f: failed.append(f.reason),
        guard_export_fn=lambda guards: installed.extend(
            guard.user_stack for guard in guards if guard.name == "L['x']"))(g)
    for dtype in (torch.float32, torch.int64):
        compiled(torch.ones(2, dtype=dtype))
    torch._dynamo.reset()
    assert failed and all(stack for stack in installed), (failed, installed)
    reason = recompile_reasons.parse(failed[0])
    assert "dtype mismatch" in reason.guard, failed
    assert reason.where == "" and "torch's own" not in reason.one_line(), reason
