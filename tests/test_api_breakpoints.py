"""`session.breakpoints()` of `with dyndbg.debug()`: each breakpoint's places
(gdb's N.M), as the `b` listing and `ll` show them at the same stop."""
from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import warm_start
from harness import ROOT, TIMEOUT, child_env
from listing import parse_listing
from transcript import segments

PROGRAM = """\
    import io

    import torch
    import dyndbg


    @torch.compile(backend="eager")
    def f(x):
        y = x.sin()
        print("graph break")
        return y + 1


    def report(session):
        # What the API gives, one line a place, into the transcript.
        generated = {g.label: g.code for g in session.generated()}
        for bp in session.breakpoints():
            if not bp.locations:
                out.write(f"NONE {bp.number} {bp.kind}\\n")
            for loc in bp.locations:
                out.write(f"LOC {loc.number}|{loc.where}|{loc.function}|{loc.compile_id}|"
                          f"{list(loc.instructions)}|{list(loc.lines)}|{loc.enabled}|"
                          f"{loc.hits}|{generated.get(loc.where) is loc.code}\\n")


    out = io.StringIO()
    # Conditions that are false: each place counts its hits without stopping.
    with dyndbg.debug(commands=["b f if False", "b __compiled_fn_* if False", "b nowhere_yet",
                                "catch exception", "c"], out=out) as session:
        f(torch.ones(2))
        f(torch.ones(2))
        f(torch.ones(2, dtype=torch.float64))   # recompiled: f [0/1] and its resume function
        dyndbg.set_trace()
        f(torch.ones(2))                         # stops in f [0/0]
    print(out.getvalue())
"""

# At the set_trace() stop: one place off, then the listing, the code and the API.
COMMANDS = ["disable 2.2", "b", "ll", "report(session)", "c"]

# `b`'s line for a place: `2.2         disabled  torch_dynamo_resume_in_f_at_10 [1/0]  hit 2 times`
PLACE = re.compile(r"^(?P<number>\d+\.\d+) +(?P<state>enabled|disabled) +(?P<where>.+?)"
                   r"(?:  hit (?P<hits>\d+) times?)?$")


def _run(tmp_path: Path) -> str:
    script = tmp_path / "places.py"
    script.write_text(textwrap.dedent(PROGRAM))
    proc = warm_start.run([sys.executable, str(script)], input="".join(c + "\n" for c in COMMANDS),
                          capture_output=True, text=True, cwd=ROOT, env=child_env(), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_breakpoints_api_gives_each_place_as_b_and_ll_show_it(tmp_path: Path) -> None:
    output = _run(tmp_path)
    said = {s.command: s.output for s in segments(output)}
    for command in COMMANDS[:-1]:
        assert command in said, f"no {command!r} at the stop:\n{output[-4000:]}"
    api = {}
    for line in said["report(session)"]:
        if line.startswith("LOC "):
            number, where, function, compile_id, instrs, lines, enabled, hits, same = \
                line[4:].split("|")
            api[number] = dict(where=where, function=function, compile_id=compile_id,
                               instructions=eval(instrs), lines=eval(lines),  # noqa: S307
                               enabled=enabled == "True", hits=int(hits), same_code=same)
    assert "NONE 3 break" in said["report(session)"], said["report(session)"]  # pending
    assert "NONE 4 catch" in said["report(session)"], said["report(session)"]  # catchpoint

    # Breakpoint 1 (the entry of f) has a place in each of f's entries; 2 (graph
    # calls) in those and in each resume function, in the order they appeared.
    resume = api["2.2"]["function"]
    assert resume.startswith("torch_dynamo_resume_in_f_at_"), api
    assert [(n, p["where"]) for n, p in api.items()] == [
        ("1.1", "f [0/0]"), ("1.2", "f [0/1]"),
        ("2.1", "f [0/0]"), ("2.2", f"{resume} [1/0]"),
        ("2.3", "f [0/1]"), ("2.4", f"{resume} [1/1]")], api
    assert [(p["function"], p["compile_id"]) for p in api.values()] == [
        ("f", "0/0"), ("f", "0/1"), ("f", "0/0"), (resume, "1/0"), ("f", "0/1"), (resume, "1/1")]
    # The code object is the one session.generated() names the same way.
    assert all(p["same_code"] == "True" for p in api.values()), api

    # Number, state and hits as `b` lists the places, at the same stop.
    listed = {}
    for line in said["b"]:
        match = PLACE.match(line)
        if match:
            listed[match["number"]] = (match["where"], match["state"] == "enabled",
                                       int(match["hits"] or 0))
    assert listed == {n: (p["where"], p["enabled"], p["hits"]) for n, p in api.items()}, \
        (listed, api)
    assert not api["2.2"]["enabled"] and api["2.1"]["enabled"]
    # Breakpoint 1 was set at f [0/0]'s entry in the first call: its entry was
    # reached since by the second call and by this one; f [0/1]'s once.
    assert api["1.1"]["hits"] == 2 and api["1.2"]["hits"] == 1, api

    # The instructions as `ll` marks them in f [0/0] (the stop's code): B1 on
    # f's entry, B2? on the calls breakpoint 2 checks when reached.
    code = parse_listing(said["ll"])
    assert api["1.1"]["instructions"] == [i.index for i in code if i.breakpoint == "B1"], \
        (api["1.1"], said["ll"])
    assert api["2.1"]["instructions"] == [i.index for i in code if i.breakpoint == "B2?"], \
        (api["2.1"], said["ll"])
    assert api["2.1"]["instructions"], said["ll"]
    for number in ("1.1", "2.1"):
        lines = [code.at(index).line for index in api[number]["instructions"]]
        assert api[number]["lines"] == list(dict.fromkeys(lines)), (number, api[number], lines)
    # f [0/1] was compiled like f [0/0]: the same places in it.
    assert api["1.2"]["instructions"] == api["1.1"]["instructions"]
