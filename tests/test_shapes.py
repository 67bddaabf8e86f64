"""Why a size is dynamic, specialized or guarded (issue 51): `guards` lists
each shape guard on its own line with the user line torch recorded for it,
`why guard N` its user stack, `why shapes` each symbol's source, value,
range and reason and what torch replaced it by, `why` at a recompile made by
a size the line that specialized it. Checked against torch's own account of
the same program run without dyndbg on whichever torch runs the suite
(tests/programs/shape_account.py: the ShapeEnv's guards with their SLocs,
replacements, var_to_range, var_to_sources, the structured trace's user
stacks, TORCH_LOGS=dynamic's lines), never against strings copied from one
release. One dyndbg run serves every prompt test here."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import warm_start
from harness import ROOT, TIMEOUT, Run, child_env, run_dyndbg, run_plain
from transcript import no_traceback, segments, stops_in

PROGRAM = ROOT / "tests" / "programs" / "dynamic_shapes.py"
ACCOUNT = ROOT / "tests" / "programs" / "shape_account.py"
NUMBERS = range(24)      # `why guard N` for each, more than a listing here has
# torch's log lines (TORCH_LOGS=dynamic), by compile id: the user frame after `  # `
LOG = re.compile(r"\[(?P<compile>\d+/\d+)\] (?P<what>.*)$")
WHERE = re.compile(r"  # (?P<file>[^#]*?):(?P<line>\d+) in \w+ \(")


class Account:
    """Torch's account of PROGRAM, run without dyndbg (or, `watched`, with the
    hooks dyndbg.cache installs)."""

    def __init__(self, proc: object) -> None:
        out = proc.stdout  # type: ignore[attr-defined]
        self.shapes = {d["compile"]: d for d in _records(out, "SHAPES")}
        self.parts = {d["compile"]: d["parts"] for d in _records(out, "PARTS")}
        self.stacks = _records(out, "STACK")
        self.log = [(m["compile"], m["what"]) for m in map(LOG.search, proc.stderr.splitlines())  # type: ignore[attr-defined]
                    if m]
        self.stdout = [line for line in out.splitlines()
                       if not line.startswith(("SHAPES ", "PARTS ", "STACK "))]

    def logged(self, compile_id: str, start: str) -> list[str]:
        return [what for cid, what in self.log if cid == compile_id and what.startswith(start)]


def _records(out: str, tag: str) -> list[dict]:
    return [json.loads(line[len(tag) + 1:]) for line in out.splitlines() if line.startswith(tag + " ")]


def _account(*extra: str) -> Account:
    proc = warm_start.run([sys.executable, str(ACCOUNT), *extra, str(PROGRAM)],
                          capture_output=True, text=True, cwd=ROOT, env=child_env(),
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Account(proc)


def place(user_loc: str | None) -> str:
    """`dynamic_shapes.py:18` from torch's `maybe_user_loc` (`<line>  # <file>:<line> in <fn>`)."""
    found = re.search(r"  # ([^#]*?):(\d+) in \S+$", user_loc or "")
    return f"{Path(found.group(1)).name}:{found.group(2)}" if found else "torch"


def logged_place(what: str) -> str:
    found = WHERE.search(what)
    return f"{Path(found.group('file')).name}:{found.group('line')}" if found else "torch"


@pytest.fixture(scope="module")
def account() -> Account:
    return _account()


DIVIDED = next(n for n, text in enumerate(PROGRAM.read_text().splitlines(), 1)
               if text.endswith("# a divisibility guard"))
COMMANDS = ["b grow", "b marked", "b halves", "c",                # grow [0/1]
            "guards", "why shapes", "why", "c",                   # grow [0/2]
            "guards", "why shapes", "why", "c",                   # marked [1/0]
            "guards", "why shapes", *[f"why guard {n}" for n in NUMBERS], "c",  # marked [1/1]
            "guards all", "why",
            f"b --trace {PROGRAM.name}:{DIVIDED}", "c",          # compiling halves
            "why shapes", "c",                                    # halves [2/0]
            "guards", "why shapes", *[f"why guard {n}" for n in NUMBERS], "why shapes now",
            "why shape", "c"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_dyndbg(PROGRAM, COMMANDS, tmp_path_factory.mktemp("shapes"))


def at_stops(run: Run) -> dict[str, dict[str, list[str]]]:
    """Each command's answer, by the compile id of the stop it was typed at."""
    stops: dict[str, dict[str, list[str]]] = {}
    current = "?"
    # the prompt at a stop while dynamo compiles is another: one segment per prompt
    for segment in segments(run.transcript.replace("(dyndbg compile) ", "(dyndbg) ")):
        stops.setdefault(current, {})[segment.command] = segment.output
        found = stops_in(segment.output)
        compiling = [line for line in segment.output if line.startswith("[compile ")]
        if found:
            current = re.search(r"\[(\d+/\d+)\]", found[-1]["label"]).group(1)  # type: ignore[union-attr]
        elif compiling:
            current = "compiling " + compiling[-1].split()[1].rstrip("]")
    return stops


LISTED = re.compile(r"^  (?P<mark>ok  |FAIL|n/a ) +(?P<number>\d+)(?P<indent> +)(?P<code>.*?)"
                    r"(?:  # (?P<origin>\S+)|  \(torch's own\))?$")


def shape_lines(listing: list[str]) -> list[dict]:
    """The lines under the shape guards' lambda in a `guards` listing."""
    found: list[dict] = []
    header = None
    for line in listing:
        match = LISTED.match(line)
        if match is None:
            continue
        if "LAMBDA_GUARD: the shape guards" in line:
            header = len(match["indent"])
        elif header is not None and len(match["indent"]) > header:
            found.append(match.groupdict())
        else:
            header = None
    return found


def test_the_program_and_its_compiles_are_torchs_own(run: Run, account: Account) -> None:
    """The program prints what it prints alone, and dyndbg's hooks (the
    ShapeEnv watch) change nothing torch records: each guard's SLoc, each
    replacement's, the shape guards' code parts and the log lines are those of
    a run with the hooks installed."""
    no_traceback(run)
    assert (run.stdout, run.returncode) == (run_plain(PROGRAM).stdout, 0), run.stderr[-2000:]
    assert account.stdout == run.stdout.splitlines()
    watched = _account("--watched")
    assert watched.shapes == account.shapes and watched.parts == account.parts
    assert watched.stacks == account.stacks
    assert [(cid, what) for cid, what in watched.log] == account.log


def test_guards_lists_each_shape_guard_with_the_line_torch_recorded(run: Run,
                                                                   account: Account) -> None:
    stops = at_stops(run)
    for compile_id in ("1/0", "2/0"):
        listing = stops[compile_id]["guards"]
        shown = shape_lines(listing)
        parts = [p for lam in account.parts[compile_id] for p in lam]
        assert [s["code"] for s in shown] == [p.split("  # ")[0].strip() for p in parts], listing
        slocs = {sloc: user for _, sloc, user in account.shapes[compile_id]["guards"]}
        added = {logged_place(what) for what in account.logged(compile_id, "eval ")
                 if "[guard suppressed]" not in what}
        for line, part in zip(shown, parts):
            comment = part.split("  # ", 1)[1]
            expected = place(slocs[comment]) if comment in slocs else "torch"
            assert (line["origin"] or "torch") == expected, (line, part)
            assert line["mark"] == "ok  ", line      # the running entry passed them
            if expected != "torch":
                assert expected in added, (expected, added)
        assert not any("tensor.py" in line or "_prims_common" in line for line in listing)
        # One line for the lambda torch checks them with, numbered, under which they stand.
        assert any("LAMBDA_GUARD: the shape guards" in line for line in listing), listing


def test_why_guard_gives_a_shape_guards_user_stack(run: Run, account: Account) -> None:
    """The inlined guard's two frames, as torch's structured trace gives them."""
    stops = at_stops(run)
    listing = stops["1/0"]["guards"]
    inlined = next(m for m in shape_lines(listing) if m["origin"])
    said = stops["1/0"][f"why guard {inlined['number']}"]
    frames = [(Path(f).name, int(n)) for f, n in
              re.findall(r"^    (\S+):(\d+) in \S+$", "\n".join(said), re.M)]
    traced = [[(Path(f).name, n) for f, n in s["stack"]] for s in account.stacks
              if s["compile"] == "1/0" and len(s["stack"]) == 2]
    assert frames in traced and len(frames) == 2, (said, account.stacks)
    assert frames[-1] == (PROGRAM.name, _marked_line("the inlined shape guard"))
    # The range guard is torch's own, said in torch's words.
    ranged = next(m for m in shape_lines(listing) if not m["origin"])
    assert stops["1/0"][f"why guard {ranged['number']}"][1].startswith("  torch's own: ")


def _marked_line(comment: str) -> int:
    return next(n for n, text in enumerate(PROGRAM.read_text().splitlines(), 1) if comment in text)


SYMBOL = re.compile(r"^  (?P<symbol>[su]\d+)  (?:(?P<source>\S+) = (?P<value>\S+) at this call "
                    r"\((?:being )?compiled for (?P<hint>\S+)\), range (?P<range>\[.*\])|.*range "
                    r"(?P<urange>\[.*\]))$")
MADE = re.compile(r"^    (?P<why>.+), made at (?P<place>\S+)  ")
REPLACED = re.compile(r"^    replaced by (?P<target>\S+) \((?P<reason>\w+)\) at (?P<became_at>\S+)  ")
MARKING = {"automatic dynamic": "automatic dynamic/PGO", "mark_dynamic": "mark_dynamic",
           "dynamic=True (assume_static_by_default=False)": "assume_static_by_default = False"}


def _symbols(lines: list[str]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    current: dict = {}
    for line in lines:
        for pattern in (SYMBOL, MADE, REPLACED):
            match = pattern.match(line)
            if match:
                if pattern is SYMBOL:
                    current = found.setdefault(match["symbol"], {})
                current.update({k: v for k, v in match.groupdict().items() if v is not None})
    return found


def test_why_shapes_names_each_symbols_source_value_range_and_reason(run: Run,
                                                                    account: Account) -> None:
    stops = at_stops(run)
    for compile_id in ("0/1", "0/2", "1/0", "2/0"):
        said = stops[compile_id]["why shapes"]
        symbols = _symbols(said)
        shapes = account.shapes[compile_id]
        assert set(symbols) == set(shapes["ranges"]), (said, shapes)
        for symbol, shown in symbols.items():
            low, high = shapes["ranges"][symbol]
            assert shown.get("range", shown.get("urange")) == f"[{low}, {high}]", shown
            created = account.logged(compile_id, f"create_symbol {symbol} ") or \
                account.logged(compile_id, f"create_unbacked_symint {symbol} ")
            assert len(created) == 1 and shown["place"] == logged_place(created[0]), \
                (shown, created)
            if symbol.startswith("u"):
                assert symbol not in shapes["sources"] and "unbacked" in shown["why"], shown
                continue
            assert [shown["source"]] == shapes["sources"][symbol], shown
            assert created[0].startswith(f"create_symbol {symbol} = {shown['hint']} for "
                                         f"{shown['source']} "), (shown, created)
            # Torch says it when it decides: automatic dynamic once, when a size changes.
            base = shown["source"].split(".size()")[0]
            frame, number = compile_id.split("/")
            said_before = [what for cid, what in account.log if cid.split("/")[0] == frame
                           and int(cid.split("/")[1]) <= int(number)]
            assert f"marking {base} as dynamic (from {MARKING[shown['why']]})" in \
                said_before, (shown, account.log)
            replaced = shapes["replacements"].get(symbol)
            if replaced is None:
                assert "target" not in shown, shown
                continue
            target, sloc = replaced
            [logged] = account.logged(compile_id, f"set_replacement {symbol} = ")
            assert logged.startswith(f"set_replacement {symbol} = {shown['target']} "
                                     f"({shown['reason']})") and target == shown["target"]
            assert shown["became_at"] == place(sloc.rsplit(" (", 1)[0]), (shown, sloc)
        # The guards torch added, in its own form, each with the line its log gives.
        listed = re.findall(r"^    (\S.*?)  (\S+\.py:\d+)  ", "\n".join(said), re.M)
        added = [(what.split(" [guard added]")[0][5:], logged_place(what))
                 for what in account.logged(compile_id, "eval ") if "[guard suppressed]" not in what]
        assert listed == added, (listed, added)


def test_a_specialized_dim_is_said_plainly_and_why_names_the_line_at_the_recompile(
        run: Run, account: Account) -> None:
    stops = at_stops(run)
    loop = _marked_line("a loop bound: specializes dim 0")
    code = PROGRAM.read_text().splitlines()[loop - 1].split("#")[0].strip()
    for compile_id, size, entries in (("0/1", "6", 2), ("0/2", "7", 3)):
        [plain] = [line for line in stops[compile_id]["why shapes"] if " is specialized" in line]
        assert plain.startswith(f"  dim 0 of L['x'] is specialized to {size} by `{code}` "
                                f"({PROGRAM.name}:{loop}): each new size compiles again "
                                f"({entries} cache entries now"), plain
    # At [0/2], why names [0/1]'s specialization, torch's reason for it and the
    # entries toward the limit; [0/0] was static, and this compile made the dim symbolic.
    said = "\n".join(stops["0/2"]["why"])
    [reason] = [what.split("(")[1].split(")")[0]
                for what in account.logged("0/1", "set_replacement s77 = 6 ")]
    limit = account.shapes["0/2"]["recompile_limit"]
    assert f"    [0/1] had specialized dim 0 of L['x'] to 6 by `{code}` ({PROGRAM.name}:{loop}, " \
           f"{reason}): each new size compiles again; grow has 3 cache entries toward " \
           f"config.recompile_limit ({limit})" in said, said
    assert "    [0/0] was compiled for a static dim 0 of L['x']; this compile made it symbolic " \
           "(s77: automatic dynamic)" in said, said


def test_why_shapes_while_dynamo_compiles_gives_what_is_made_so_far(run: Run,
                                                                   account: Account) -> None:
    """At a stop while dynamo compiles halves, past its specializing line: the
    symbols and guards torch has made so far, as its account has them at the end."""
    said = at_stops(run)["compiling 2/0"]["why shapes"]
    assert said[0].startswith("halves [2/0] (compiling): "), said
    symbols = _symbols(said)
    shapes = account.shapes["2/0"]
    assert symbols and set(symbols) <= set(shapes["sources"]), (said, shapes)
    for symbol, shown in symbols.items():
        assert [shown["source"]] == shapes["sources"][symbol], shown
    listed = re.findall(r"^    (\S.*?)  (\S+\.py:\d+)  ", "\n".join(said), re.M)
    assert listed and [expr for expr, _ in listed] == \
        [g[0] for g in shapes["guards"]][:len(listed)], (listed, shapes["guards"])


def test_a_failing_shape_guard_is_named_with_its_line(run: Run, account: Account) -> None:
    """marked [1/1]: size 7 failed [1/0]'s shape guard. `guards all` marks that
    condition FAIL with the value this call gave it, under the lambda; `why`
    names it with the line torch recorded for it, as torch's ShapeEnv has it."""
    stops = at_stops(run)
    listing = stops["1/1"]["guards all"]
    older = listing[listing.index("guards of [1/0], against this call's inputs:"):]
    [failed] = [line for line in shape_lines(older) if line["mark"] == "FAIL"]
    [(expr, sloc, user)] = [g for g in account.shapes["1/0"]["guards"]]
    assert failed["origin"] == place(user), (failed, user)
    after = older[older.index(next(line for line in older if line.startswith(
        f"  FAIL {failed['number']:>3}"))) + 1]
    assert after.strip() == "^ L['x'].size()[0] is 7", after
    said = stops["1/1"]["why"]
    assert f"  [1/0] guard failed: {failed['code']}  ({place(user)})" in said, said
    assert f"    a shape guard torch added at {place(user)}: sizes that fail it compile again; " \
           f"marked has 2 cache entries toward config.recompile_limit " \
           f"({account.shapes['1/1']['recompile_limit']})" in said, said


def test_why_shapes_bad_input_gets_one_line(run: Run) -> None:
    stops = at_stops(run)
    assert stops["2/0"]["why shapes now"] == ["*** usage: why [guard N | shapes]"]
    assert stops["2/0"]["why shape"] == ["*** usage: why [guard N | shapes]"]


def test_the_editor_gets_a_shapes_scope_and_the_same_why_shapes(run: Run) -> None:
    """Through DAP at grow [0/2]: a Shapes scope with each symbol (its summary
    and what `why shapes` says of it as children), the shape guards and the
    specialization said plainly; `dyndbg/why` with `shapes` and the console
    answer as the prompt does at the same stop."""
    from dap_session import adapter_session
    expected = at_stops(run)["0/2"]["why shapes"]
    with adapter_session() as dap:
        client = dap.client
        dap.launch(PROGRAM, stop_on_entry=False, function_breakpoints=[{"name": "grow"}])
        dap.stopped(reason="function breakpoint")          # grow [0/0]
        for _ in range(2):                                 # [0/1], then [0/2]
            mark = client.mark()
            client.ok("continue", {"threadId": dap.thread})
            dap.stopped(after=mark, reason="function breakpoint")
        frame = dap.top()
        assert "[0/2]" in frame["name"], frame
        scopes = client.ok("scopes", {"frameId": frame["id"]})["scopes"]
        [shapes] = [s for s in scopes if s["name"] == "Shapes"]
        rows = client.ok("variables", {"variablesReference": shapes["variablesReference"]})
        by_name = {v["name"]: v for v in rows["variables"]}
        symbol = by_name["s77 L['x'].size()[0]"]
        assert symbol["value"].startswith("7, range [7, 7], automatic dynamic, replaced by 7")
        fields = {v["name"]: v["value"] for v in client.ok(
            "variables", {"variablesReference": symbol["variablesReference"]})["variables"]}
        said = "\n".join(expected)

        def shown(text: str) -> str:       # a long value is cut, as every variable's
            return text.split("\u2026")[0]
        assert f"made at {shown(fields['made_at'])}" in said and fields["seen_before"] in said
        assert f"replaced by {shown(fields['replaced_by'])}" in said, (fields, said)
        assert f"  {shown(by_name['specialized s77']['value'])}" in said
        guards = client.ok("variables", {"variablesReference":
                                         by_name["shape guards"]["variablesReference"]})
        assert [f"    {v['value']}" for v in guards["variables"]] == \
            [line for line in expected if line.startswith("    ") and "  dynamic_shapes.py:" in
             line and not line.startswith("    automatic") and "replaced by" not in line]
        assert client.ok("dyndbg/why", {"args": "shapes"})["text"].splitlines() == expected
        assert dap.repl("why shapes", frame["id"]).splitlines() == expected
        dap.disconnect()


API = """
import runpy, sys, torch
import dyndbg.cache as dc
runpy.run_path(sys.argv[1])
print(dc.shapes("0/2", torch.ones(7), 2))
print("without a call:", dc.shapes("1/0").symbols[0].value == "")
"""


def test_the_cache_api_gives_the_same_answer(run: Run) -> None:
    proc = warm_start.run([sys.executable, "-c", API, str(PROGRAM)], capture_output=True,
                          text=True, cwd=ROOT, env=child_env(), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    answer = lines[lines.index(next(line for line in lines if line.startswith("grow [0/2]: "))):]
    assert answer[:-1] == at_stops(run)["0/2"]["why shapes"], answer
    assert answer[-1] == "without a call: True"
