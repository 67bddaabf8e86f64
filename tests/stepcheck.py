"""Step through every instruction of a program under the real CLI and check
the value stack at every stop against torch's own reader, and each load's
pushed object; shared by the samples test and the soak corpus test."""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

from harness import ROOT, Run, run_dyndbg

# The walk back at the program's end: a sitecustomize there stops in one more
# compiled call (soak_end) and walks the history from it.
SOAK_END = ROOT / "tests" / "soak_end"
END_STOP = "\n> soak_end ["

ORACLE = ("None if __exception__ else (lambda s, f, E: sum(1 for a, b in zip(s, "
          "E._get_frame_value_stack_with_depth(f, len(s))) if not (a is b or (repr(a) == "
          "'<NULL>' and b is E.NULL_STACK_VALUE))))(__stack__, __frame__, "
          "__import__('torch._C._dynamo.eval_frame', fromlist=['_']))")
# What the current instruction does that the next stop can check, for the
# loads whose value we can name and for STORE_FAST (it pops the top into a
# local): the checks hold whatever the static depth tables say. A LOAD_FAST of
# a cell or free variable pushes the cell on 3.13: not named here. 3.14 adds
# LOAD_FAST_BORROW and LOAD_SMALL_INT (its argument is the int).
EXPECTED_PUSH = (
    "(lambda f, c, dis: None if f.f_lasti and c[f.f_lasti - 2] == dis.EXTENDED_ARG else "
    "(lambda op, arg, v: "
    "(op, id(f.f_locals[v[arg]])) if op in ('LOAD_FAST', 'LOAD_FAST_BORROW') and arg < len(v) "
    "and v[arg] not in f.f_code.co_cellvars + f.f_code.co_freevars else "
    "('LOAD_CONST', id(f.f_code.co_consts[arg])) if op == 'LOAD_CONST' else "
    "('LOAD_SMALL_INT', id(arg)) if op == 'LOAD_SMALL_INT' else "
    "('STORE_FAST', v[arg]) if op == 'STORE_FAST' and arg < len(v) "
    "and v[arg] not in f.f_code.co_cellvars + f.f_code.co_freevars else None)"
    "(dis.opname[c[f.f_lasti]], c[f.f_lasti + 1], f.f_code.co_varnames))"
    "(__frame__, __frame__.f_code.co_code, __import__('dis'))")
# The id of the local stored by the instruction just before this one in the
# code (CACHE entries read as 0 in co_code), if that is a STORE_FAST.
STORED_ID = (
    "(lambda f, c, dis: (lambda p: id(f.f_locals[f.f_code.co_varnames[c[p + 1]]]) "
    "if p >= 0 and dis.opname[c[p]] == 'STORE_FAST' and c[p + 1] < len(f.f_code.co_varnames) "
    "and (p == 0 or c[p - 2] != dis.EXTENDED_ARG) "
    "and f.f_code.co_varnames[c[p + 1]] in f.f_locals else None)"
    "(max([q for q in range(0, f.f_lasti, 2) if c[q]], default=-1)))"
    "(__frame__, __frame__.f_code.co_code, __import__('dis'))")
TOP_ID = "id(__stack__[-1]) if __stack__ else None"
# dyndbg's static depth (for frames suspended in a call) against the live stack.
DEPTH = ("__import__('dyndbg.cpython', fromlist=['_']).depth_before(__frame__.f_code, "
         "__frame__.f_lasti) - len(__stack__)")
STOP = re.compile(r"^> (?P<label>\S+ \[[^\]]+\])  instr (?P<index>\d+)/\d+ @\d+  (?P<op>\w+)")

STEPS = 6000


def _parse_stops(transcript: str) -> list[dict]:
    """One dict per stop: frame label, instruction index, displays, exception
    flag, and the lines of `stack` there (its values, without the header)."""
    displays = {f"1: {ORACLE} = ": "oracle", f"2: {EXPECTED_PUSH} = ": "push",
                f"3: {TOP_ID} = ": "top", f"4: {DEPTH} = ": "depth",
                f"5: {STORED_ID} = ": "stored"}
    stops: list[dict] = []
    exception_banner = False
    in_stack = False
    for line in transcript.splitlines():
        if line.startswith("(dyndbg) "):
            in_stack = line == "(dyndbg) stack" and bool(stops)
            if in_stack:
                stops[-1]["stack"] = []
            continue
        if in_stack:
            if not line.startswith("value stack"):
                stops[-1]["stack"].append(line)
            continue
        match = STOP.match(line)
        if match:
            stops.append({"label": match["label"], "index": int(match["index"]),
                          "exception": exception_banner})
            exception_banner = False
        elif line.startswith("!! ") and "raised at instr" not in line:
            exception_banner = True  # the banner comes just before its stop line
        else:
            for prefix, key in displays.items():
                if line.startswith(prefix):
                    stops[-1][key] = line[len(prefix):]
    return stops



@dataclass
class Covered:
    stops: int
    loads: int
    frames: set[str]
    stacks: list[list[str]]   # what `stack` listed at each stop but exception stops
    walked: int               # recorded points compared in the walk back


def step_every_instruction(script: Path, reference: Run, tmp_path: Path,
                           args: tuple[str, ...] = (), walk_back: bool = False) -> Covered:
    """Single-step `script` to its end with `stack` and `locals` at each stop.
    `walk_back`: recording on (--record), and when the program ends the
    history is walked back to its start (tests/soak_end): each recorded
    point must list the stack seen live there."""
    # Wide enough that no value is cut: a cut hides where a recorded value
    # differs (a closure cell inside a list, shown empty, was cut off).
    commands = ["set width 100000", f"display {ORACLE}", f"display {EXPECTED_PUSH}",
                f"display {TOP_ID}", f"display {DEPTH}", f"display {STORED_ID}"]
    commands += ["stack", "locals", "si"] * STEPS   # si: a graph's call is one instruction
    options, env = [], None
    if walk_back:
        options = ["--record"]
        env = {"PYTHONPATH": os.pathsep.join([str(SOAK_END), str(ROOT)])}
    run = run_dyndbg([script, *args], commands, tmp_path, options=options, env=env)
    assert run.stdout == reference.stdout
    assert run.returncode == reference.returncode
    assert run.stderr == reference.stderr
    assert "Traceback" not in run.transcript
    assert "*** " not in run.transcript, [l for l in run.transcript.splitlines() if "***" in l][:5]
    assert "end of input" not in run.transcript, "ran out of steps before the program ended"
    transcript, walk = run.transcript, ""
    if walk_back:
        assert END_STOP in transcript, "no stop at the program's end for the walk back"
        transcript, walk = transcript.split(END_STOP, 1)

    stops = _parse_stops(transcript)
    loads = 0
    for i, stop in enumerate(stops):
        if stop["exception"]:
            assert stop["oracle"] == "None"
        else:
            assert stop["oracle"] == "0", f"stack differs from torch's reader at {stop}"
            assert stop["depth"] == "0", f"static stack depth differs at {stop}"
        nxt = stops[i + 1] if i + 1 < len(stops) else None
        push = ast.literal_eval(stop["push"]) if stop["push"] != "None" else None
        if push and nxt and nxt["label"] == stop["label"] and nxt["index"] == stop["index"] + 1 \
                and not nxt["exception"]:
            if push[0] == "STORE_FAST":
                assert nxt["stored"] == stop["top"], f"STORE_FAST at {stop} did not store its top"
            else:
                assert nxt["top"] == str(push[1]), f"{push[0]} at {stop} did not push its value"
            loads += 1
    covered = Covered(len(stops), loads, {s["label"] for s in stops},
                      [s.get("stack", []) for s in stops if not s["exception"]], 0)
    if walk_back:
        covered.walked = _check_walk(walk, covered.stacks)
    return covered


# -- the recorded history, walked back from the end ---------------------------------------------
_ADDRESS = re.compile(r"0x[0-9a-f]+")
# The history keeps values, not the autograd graph: its copies have no grad_fn.
_AUTOGRAD = re.compile(r", grad_fn=<\w+(>|…)|, requires_grad=True")
_CUT = re.compile(r"… \(\d+ chars\)$")
# What the history keeps of an object it does not copy: a summary of its type.
_SUMMARY = re.compile(r"<[\w.]+ object at 0x\?>|\w+\(…\)|\(not copied|\(a tensor subclass"
                      r"|^ +\d+ +\w+ +<\w+ of \d+ items>$")

# In a container: one too large or too deep, an object kept as its type.
_NESTED_SUMMARY = re.compile(r"<\w+ of \d+ items>|<[\w.]+ object at 0x\?>")


def _comparable(line: str) -> str:
    return _AUTOGRAD.sub(lambda m: "…" if m[0].endswith("…") else "",
                         _ADDRESS.sub("0x?", line))


def _same_value(live: str, recorded: str) -> bool:
    live, recorded = _comparable(_CUT.sub("…", live)), _comparable(_CUT.sub("…", recorded))
    if live == recorded:
        return True
    # Cut at the width (at different places once grad_fn is gone): a prefix.
    if live.endswith("…") or recorded.endswith("…"):
        shorter, longer = sorted((live.rstrip("…"), recorded.rstrip("…")), key=len)
        if longer.startswith(shorter):
            return True
    # A container kept with a summary inside (too deep or too large): the
    # same up to that summary.
    nested = _NESTED_SUMMARY.search(recorded)
    if nested:
        before = recorded[:nested.start()]
        shorter, longer = sorted((live.rstrip("…"), before), key=len)
        if longer.startswith(shorter):
            return True
    # A summary: the type column must agree; the value is not the object's repr.
    return bool(_SUMMARY.search(recorded)) and live.split()[:2] == recorded.split()[:2]


def _check_walk(walk: str, live: list[list[str]]) -> int:
    """The `stack` listings of the walk back (newest first) against the live
    ones (oldest first); the number of points compared."""
    points: list[list[str]] = []
    lines = walk.splitlines()
    for i, line in enumerate(lines):
        if line == "(dyndbg) stack" and i + 1 < len(lines) and "(recorded, " in lines[i + 1]:
            values = []
            for rest in lines[i + 2:]:
                if rest.startswith("(dyndbg)"):
                    break
                values.append(rest)
            points.append(values)
    assert "at the oldest recorded instruction" not in walk   # the walk ends there exactly
    points.reverse()     # oldest first, as the soak stopped
    assert len(points) == len(live), (len(points), len(live))
    for k, (seen, kept) in enumerate(zip(live, points)):
        assert len(seen) == len(kept) and all(map(_same_value, seen, kept)), \
            f"recorded point {k} of {len(points)}: live {seen} != recorded {kept}"
    return len(points)
