"""Editing dynamo's cache (issue 14): each edit changes which entry runs or what it
computes as its help says, checked on the program's output and torch's counters;
undo restores the original output; bad edits are one line; fuzzed edits never
crash the process."""
from __future__ import annotations

import ast
import random
import re
import sys
from pathlib import Path

import pytest

import warm_start
from harness import ROOT, TIMEOUT, child_env, run_dyndbg, run_plain
from transcript import no_traceback, segments, stops_in

PROGRAMS = ROOT / "tests" / "programs"
SAMPLE = ROOT / "samples" / "cache_edit.py"
UNDO_RECOMPILE = PROGRAMS / "undo_recompile.py"


def _values(stdout: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_api_edits_change_the_output_and_undo_restores_it(backend: str) -> None:
    run = run_plain(PROGRAMS / "cache_api.py", backend)
    assert run.returncode == 0, run.stderr[-3000:]
    got = _values(run.stdout)
    assert got["first"] == "[11.0, 15.0]"
    assert got["entries"] == "['0/1', '0/0']"                 # most recently used first
    assert (got["check 0/0 n=2"], got["check 0/0 n=5"]) == ("True", "False")
    assert got["evict 0/1, n=5"] == "23.0" and got["evict new graphs"] == "1"
    assert got["guard add, n=2"] == "11.0" and got["guard add new graphs"] == "0"
    assert got["guard drop, n=5"] == "14.0"            # 0/0's graph baked in n == 2
    assert got["after undo, n=5"] == "23.0"
    # Undo is exact: the entry compiled while 0/1 was evicted goes too, and 0/1 runs.
    assert got["evict undo also evicted"] == "['0/2']" and got["after undo, n=5 ran"] == "0/1"
    assert got["force once, n=7"] == "[16.0, 31.0]"    # forced once, then right again
    assert got["patched, n=2"] == "111.0" and got["patch new graphs"] == "0"
    assert got["run 0/0 by hand, n=2"] == "111.0"      # the patched code, by hand
    assert got["undo all, n=2"] == "11.0" and got["run 0/0 by hand after undo"] == "11.0"
    # A tensor constant, patched in from Python as the object itself.
    assert got["tensor patched, n=2"] == "[111.0, 211.0]"
    assert got["tensor patch edit"].endswith("LOAD_CONST tensor([100., 200.])")
    assert got["tensor patch loads the object itself"] == "True"
    assert got["tensor patch undone, n=2"] == "11.0"
    assert got["installed, n=2"] == "[42.0, 42.0]"          # called, and run by hand
    assert got["refused"].startswith("the patched code does not assemble") or \
        got["refused"].startswith("refused:")
    assert got["final"] == "[11.0, 15.0, 23.0]"


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_repl_commands_on_a_graph_break_program(tmp_path: Path, backend: str) -> None:
    plain = run_plain(SAMPLE, backend)
    target = [str(SAMPLE), backend]
    listing = run_dyndbg(target, ["ll", "c"], tmp_path).transcript
    ret = max(int(m.group(1)) for m in re.finditer(r"(\d+) @\d+ +RETURN_VALUE", listing))
    commands = ["b f", f"patch 0/0 insert {ret} LOAD_CONST 100",
                f"patch 0/0 insert {ret + 1} BINARY_OP +", "edits", "c",   # n=3: [0/1]
                "c",                                                        # n=2: patched
                "ll", "guards", "evict 0/1", "guard add 0/0 n != 2", "c",  # n=5: recompiles
                "cache", "undo 4", "edits", "run 0/0 x, 2", "undo all", "cache", "c"]
    run = run_dyndbg(target, commands, tmp_path)
    no_traceback(run)
    out, text = run.stdout, run.transcript
    assert "call n=2: 11.0" in out and "call n=3: 15.0" in out     # before the patch ran
    assert "call n=2: 111.0" in out and "call n=5: 23.0" in out
    assert "frames compiled: 5" in out     # 0/0, 0/1, 0/2 (n=5), the resume fn's 1/0 and 1/1
    assert "edit 1: patch 0/0 insert" in text
    assert "!! 2 cache edits active" in text
    assert "f [0/0, edited]" in text
    assert "the edited code of [0/0] runs; these are the entry's own guards" in text
    assert re.search(r"guards of \[0/0\] \(running\).*\n  ok +\d+ ", text), text
    assert re.search(rf"->?\*? *{ret} @\d+ +LOAD_CONST +100", text) or \
        re.search(rf" \* *{ret} @\d+ +LOAD_CONST +100", text), text
    assert "a call with this call's inputs now recompiles f" in text
    assert "[0/1] guard failed: dyndbg: evicted (0/1)" in text
    assert "undid 4: guard add 0/0 n != 2" in text
    assert "[0/0] returned Tensor f32[] cpu [111]" in text, text
    assert re.search(r"\[0/1\] .*\(evicted by edit 3\)", text), text
    # Undoing the last evict evicts 0/2 too: its compile was the evict's doing (0/1, a
    # dynamic entry, passes n=5 on its own guards).
    assert ("undid 3: evict 0/1  [f]\n  also evicted 0/2: compiled because edit 3 (evict "
            "0/1) refused [0/1], whose own guards pass for that call") in text
    assert re.search(r"\[0/2\] .*\(evicted at undo: the edits caused its compile\)", text), text
    assert plain.stdout.count("call n=") == 4


def test_keep_and_detach(tmp_path: Path) -> None:
    run = run_dyndbg(SAMPLE, ["evict 0/0", "keep", "edits"], tmp_path)
    no_traceback(run)
    assert "kept when dyndbg detaches" in run.transcript
    assert "cache edits kept: evict 0/0" in run.transcript + run.stdout + run.stderr
    run = run_dyndbg(SAMPLE, ["evict 0/0", "q"], tmp_path)
    assert "detaching undid the cache edits: evict 0/0" in run.transcript + run.stdout + run.stderr


def test_undo_keeps_what_plain_python_compiles_too() -> None:
    """Issue 23, item 4: undo evicts an entry compiled while calls fell through only
    when the edits caused its compile (an edit refused an entry whose own guards pass);
    one compiled because an entry's own guard failed stays, so that the calls after the
    undo run and compile as in a run without the edit (a twin function, unedited)."""
    run = run_plain(UNDO_RECOMPILE, "api")
    assert run.returncode == 0, run.stderr[-3000:]
    got = _values(run.stdout)
    # A: a guard that always holds, then a new length: [0/0]'s own size guard failed.
    assert got["A retired"] == "[]" and len(ast.literal_eval(got["A kept"])) == 1, got
    assert got["A ran"] == got["A twin ran"], got
    assert got["A compiled"] == got["A twin compiled"] and got["A results"] == "True", got
    # B: the evict alone made the call recompile: that entry goes, the first runs again.
    assert len(ast.literal_eval(got["B retired"])) == 1 and got["B kept"] == "[]", got
    assert got["B ran first again"] == "True"
    # C: one compile of each kind in one edit's life, torch's reason naming the added
    # guard for the second although [0/0]'s own size guard failed too.
    retired, kept = ast.literal_eval(got["C retired"]), ast.literal_eval(got["C kept"])
    assert len(retired) == len(kept) == 1 and retired != kept, got
    assert got["C compiled after undo"] == "0" and got["C ran 7 by"] == kept[0], got
    assert got["C entries not evicted"] == got["C twin entries"], got
    assert got["C results"] == "True"


def test_undo_says_when_no_guard_failure_was_recorded() -> None:
    """Where torch records no guard failure for a compile, undo evicts the entry as it
    did before it could tell, and says that it does not know why it was compiled."""
    run = run_plain(UNDO_RECOMPILE, "unknown")
    assert run.returncode == 0, run.stderr[-3000:]
    got = _values(run.stdout)
    retired = ast.literal_eval(got["D retired"])
    assert len(retired) == 1, got
    assert got["D said"] == (f"also evicted {retired[0]}: compiled while calls fell through, "
                             "and no guard failure was recorded for its compile: evicted as "
                             "if the edits caused it (it may be there without them)")


def test_undo_all_at_the_prompt_keeps_a_recompile_on_an_unedited_guard(tmp_path: Path) -> None:
    """The example of issue 23: `guard add 0/0 x.shape[0] < 100` holds for every input;
    a new length recompiles [0/1] on [0/0]'s own size guard. `undo all` keeps [0/1] and
    says why; the third call runs it, and the program compiles what a plain run does."""
    target = [str(UNDO_RECOMPILE), "cli"]
    plain = run_plain(*target)
    run = run_dyndbg(target, ["b f", "guard add 0/0 x.shape[0] < 100", "c", "undo all",
                              "c", "c"], tmp_path)
    no_traceback(run)
    assert run.stdout == plain.stdout, (run.stdout, plain.stdout)    # entries compiled: 2
    replies = segments(run.transcript)
    assert [seg.command for seg in replies][:4] == ["b f", "guard add 0/0 x.shape[0] < 100",
                                                    "c", "undo all"], run.transcript
    assert stops_in(replies[2].output)[0]["label"] == "f [0/1]"    # compiled, edit active
    undo = replies[3].output
    assert undo[0] == "undid 1: guard add 0/0 x.shape[0] < 100  [f]", undo
    assert undo[1].startswith("  kept 0/1: compiled because every entry failed a guard of "
                              "its own ([0/0] ") and "size mismatch at index 0" in undo[1], undo
    assert undo[1].endswith("; plain python compiles it too"), undo
    assert len(undo) == 2 and "also evicted" not in run.transcript
    after_undo = run.transcript.split("(dyndbg) undo all", 1)[1]
    assert [stop["label"] for stop in stops_in(after_undo.splitlines())] == ["f [0/1]"]


def test_bad_edits_are_one_line(tmp_path: Path) -> None:
    bad = ["evict", "evict zz", "evict 9/9", "force 0/0 twice", "guard add 0/0 (",
           "guard drop 0/0 zz", "guard drop 0/0 999", "guard drop 0/0 1",
           "patch 0/0 replace 999 NOP", "patch 0/0 insert 1 NOT_AN_OP",
           "patch 0/0 insert 1 LOAD_FAST no_such_local", "patch 0/0 delete 5 extra",
           "patch 0/0 insert 5 POP_TOP", "patch 0/0 insert 5 LOAD_CONST (1, 2)",
           "patch 0/0 insert 5 LOAD_GLOBAL NULL + print", "run 0/0 undefined_name", "run 0/0 (",
           "undo 99", "undo", "graph run zz", "graph run 99", "keep on"]
    run = run_dyndbg(SAMPLE, bad + ["edits", "c"], tmp_path)
    no_traceback(run)
    assert "no edits of dynamo's cache" in run.transcript
    assert run.stdout == run_plain(SAMPLE).stdout
    for command in bad:
        after = run.transcript.split(f"(dyndbg) {command}\n", 1)[1]
        reply = after.split("(dyndbg)", 1)[0].strip().splitlines()
        assert len(reply) == 1 and reply[0].startswith("***"), (command, reply)
        if command.startswith("patch "):     # an ARG of several words is one ARG
            assert not re.match(r"\*\*\* [A-Z]\w*(Error|Exception):", reply[0]), (command, reply)


def _run_program(tmp_path: Path, source: str) -> str:
    """Run a small program of the test's own; its stdout (it must exit 0)."""
    program = tmp_path / "program.py"
    program.write_text(source)
    run = run_plain(program)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def test_graph_capture_and_run(tmp_path: Path) -> None:
    out = _run_program(tmp_path,
        "import torch\nimport dyndbg.cache as dc\n"
        "def g(x, y):\n    return (x @ y).relu().sum(0)\n"
        "cg = torch.compile(g, backend='aot_eager')\n"
        "x, y = torch.randn(4, 3), torch.randn(3, 5)\ncg(x, y)\n"
        "number = int([n for n in globals() if n.startswith('__compiled_fn_')][0].split('_')[4])\n"
        "dc.graph_capture(number); cg(x, y)\n"
        "ran = dc.graph_run(number)\nprint('captured run:', ran.same, ran.difference)\n"
        "ran = dc.graph_run(number, x * 2, y)\nprint('given run:', ran.same, "
        "torch.allclose(ran.compiled[0], g(x * 2, y)))\n")
    assert "captured run: True every output agrees" in out
    assert "given run: True True" in out


def test_refused_where_torch_has_precompile_entries(tmp_path: Path) -> None:
    out = _run_program(tmp_path,
        "import torch\nimport dyndbg.cache as dc\n"
        "from torch._dynamo.eval_frame import _debug_get_cache_entry_list\n"
        "def f(x):\n    return x + 1\n"
        "cf = torch.compile(f, backend='eager'); cf(torch.ones(2))\n"
        "e = _debug_get_cache_entry_list(f)[0]\n"
        "torch._C._dynamo.eval_frame._load_precompile_entry(f.__code__, e.guard_manager, e.code)\n"
        "try:\n    dc.force('0/0')\nexcept dc.CacheError as error:\n    print('refused:', error)\n"
        "print('count', len(torch._C._dynamo.eval_frame"
        "._debug_get_precompile_entries(f.__code__)))\n")
    assert "refused: f has precompile entries of torch's own" in out
    assert "count 1" in out                           # torch's own entry is still there


def test_patches_that_crashed_cpython_are_refused_or_raise() -> None:
    run = run_plain(PROGRAMS / "patch_hazards.py")
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    got = _values(run.stdout)
    assert got["store into a cell"].startswith("refused: 'a' is a cell variable")
    assert got["not a code object for MAKE_FUNCTION"].startswith("refused: MAKE_FUNCTION")
    assert got["before FOR_ITER"].startswith("refused: FOR_ITER")
    assert got["in a while loop, before LIST_EXTEND"].startswith("refused: LIST_EXTEND")
    assert got["on the iterator of a comprehension"].startswith("refused:")
    # 3.12+ LOAD_FAST does not check for an unbound local: the patch loads with the checked form.
    assert got["store removed"] == got["load before the store"] == "raises UnboundLocalError"
    assert got["plain value"] == "ran: 6"
    # CPython indexes a table with these arguments unchecked.
    assert got["BINARY_OP out of range"].startswith("refused: BINARY_OP takes one of +")
    assert got["COMPARE_OP out of range"].startswith("refused: COMPARE_OP takes one of <")
    assert got["COMPARE_OP >="] == "ran: (3, False)"       # encoded as this Python does
    # A value op on the NULL of a call (3.13 puts it above the callable, 3.11/3.12 below):
    # without the check each "refused" here was a segfault.
    assert got["NULL of PUSH_NULL"].startswith("refused: UNARY_NEGATIVE")
    # 3.14 borrows: a patched code's loads own their reference (a segfault before).
    assert got["store into a local borrowed on the stack"] == "ran: [1, 1]"
    assert got["borrowed value kept in another local"] == "ran: [1, 1]"
    above = sys.version_info >= (3, 13)
    for producer in ("LOAD_GLOBAL", "LOAD_ATTR"):
        outcome = got[f"NULL of {producer}"]
        assert outcome.startswith("refused: UNARY_NEGATIVE") if above else \
            outcome == "raises TypeError", (producer, outcome)


@pytest.mark.parametrize("seed", [1, 2, 6])
def test_fuzzed_edits_never_crash(seed: int) -> None:
    proc = warm_start.run([sys.executable, str(PROGRAMS / "cache_fuzz.py"), str(seed), "120"],
                          capture_output=True, text=True, cwd=ROOT, env=child_env(),
                          timeout=TIMEOUT)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    summary = proc.stdout.strip().splitlines()[-1]
    applied, refused = map(int, re.findall(r"\d+", summary)[:2])
    assert applied > 10 and refused > 10 and summary.endswith("same True"), summary


@pytest.mark.parametrize("seed", [1, 2])
def test_fuzzed_patches_on_many_code_shapes_never_crash(seed: int) -> None:
    run = run_plain(PROGRAMS / "patch_fuzz.py", str(seed), "400")
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    applied, refused = map(int, re.findall(r"\d+", run.stdout.strip().splitlines()[-1]))
    assert applied > 10 and refused > 10, run.stdout


def _random_edit_command(rng: random.Random) -> str:
    entry = rng.choice(["0/0", "0/1", "9/9", "zz"])
    kind = rng.randrange(7)
    if kind == 0:
        return f"evict {rng.choice([entry, 'all', 'all f', 'all nosuch'])}"
    if kind == 1:
        return f"force {entry}{rng.choice(['', ' once', ' twice'])}"
    if kind == 2:
        return f"guard add {entry} {rng.choice(['n != 2', 'x.sum() > 0', '1/0', '(', 'nope'])}"
    if kind == 3:
        return f"guard drop {entry} {rng.randrange(-1, 12)}"
    if kind == 4:
        action = rng.choice(["replace", "insert", "delete", "swap"])
        opname = rng.choice(["NOP", "LOAD_CONST", "POP_TOP", "BINARY_OP", "UNARY_NEGATIVE",
                             "LOAD_FAST", "STORE_FAST", "RETURN_VALUE", "COPY", "ZZ"])
        arg = rng.choice(["", "1", "+", "x", "n", "99", "'s'", "("])
        return f"patch {entry} {action} {rng.randrange(-1, 130)} {opname} {arg}".strip()
    if kind == 5:
        return f"run {entry} {rng.choice(['x, 2', 'x, 5', 'x', '1/0', ''])}".strip()
    return rng.choice(["edits", f"undo {rng.randrange(0, 30)}", "keep", "keep off"])


@pytest.mark.parametrize("seed", [3, 4])
def test_random_edit_commands_at_the_prompt(tmp_path: Path, seed: int) -> None:
    """Edits made, listed, run by hand and undone at random: each answered in the
    transcript, never a traceback of ours, and after `undo all` the program's own
    results are the plain run's."""
    rng = random.Random(seed)
    commands = ["b f", "c"] + [_random_edit_command(rng) for _ in range(60)] + [
        "undo all", "keep off", "c", "c", "c"]
    run = run_dyndbg(SAMPLE, commands, tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "internal error" not in run.transcript
    calls = [line for line in run.stdout.splitlines() if line.startswith("call n=")]
    assert calls == [line for line in run_plain(SAMPLE).stdout.splitlines()
                     if line.startswith("call n=")]
    assert run.transcript.count("(dyndbg) ") >= len(commands)
