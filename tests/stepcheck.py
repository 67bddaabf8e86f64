"""Step through every instruction of a program under the real CLI and check
the value stack at every stop against torch's own reader, and each load's
pushed object; shared by the samples test and the soak corpus test."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from conftest import Run, run_dyndbg

ORACLE = ("None if __exception__ else (lambda s, f, E: sum(1 for a, b in zip(s, "
          "E._get_frame_value_stack_with_depth(f, len(s))) if not (a is b or (repr(a) == "
          "'<NULL>' and b is E.NULL_STACK_VALUE))))(__stack__, __frame__, "
          "__import__('torch._C._dynamo.eval_frame', fromlist=['_']))")
# What the current instruction will push, for the loads whose value we can name.
EXPECTED_PUSH = (
    "(lambda f, c, dis: None if f.f_lasti and c[f.f_lasti - 2] == dis.EXTENDED_ARG else "
    "('LOAD_FAST', id(f.f_locals[f.f_code.co_varnames[c[f.f_lasti + 1]]])) "
    "if dis.opname[c[f.f_lasti]] == 'LOAD_FAST' else "
    "('LOAD_CONST', id(f.f_code.co_consts[c[f.f_lasti + 1]])) "
    "if dis.opname[c[f.f_lasti]] == 'LOAD_CONST' else None)"
    "(__frame__, __frame__.f_code.co_code, __import__('dis'))")
TOP_ID = "id(__stack__[-1]) if __stack__ else None"
# dyndbg's static depth (for frames suspended in a call) against the live stack.
DEPTH = ("__import__('dyndbg.cpython', fromlist=['_']).depth_before(__frame__.f_code, "
         "__frame__.f_lasti) - len(__stack__)")
STOP = re.compile(r"^> (?P<label>\S+ \[[^\]]+\])  instr (?P<index>\d+)/\d+ @\d+  (?P<op>\w+)")

STEPS = 6000


def _parse_stops(transcript: str) -> list[dict]:
    """One dict per stop: frame label, instruction index, displays, exception flag."""
    displays = {f"1: {ORACLE} = ": "oracle", f"2: {EXPECTED_PUSH} = ": "push",
                f"3: {TOP_ID} = ": "top", f"4: {DEPTH} = ": "depth"}
    stops: list[dict] = []
    exception_banner = False
    for line in transcript.splitlines():
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


def step_every_instruction(script: Path, reference: Run, tmp_path: Path,
                           args: tuple[str, ...] = ()) -> Covered:
    """Single-step `script` to its end with `stack` and `locals` at each stop."""
    commands = [f"display {ORACLE}", f"display {EXPECTED_PUSH}", f"display {TOP_ID}",
                f"display {DEPTH}"]
    commands += ["stack", "locals", "s"] * STEPS
    run = run_dyndbg([script, *args], commands, tmp_path)
    assert run.stdout == reference.stdout
    assert run.returncode == reference.returncode
    assert run.stderr == reference.stderr
    assert "Traceback" not in run.transcript
    assert "*** " not in run.transcript, [l for l in run.transcript.splitlines() if "***" in l][:5]
    assert "end of input" not in run.transcript, "ran out of steps before the program ended"

    stops = _parse_stops(run.transcript)
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
            assert nxt["top"] == str(push[1]), f"{push[0]} at {stop} did not push its value"
            loads += 1
    return Covered(len(stops), loads, {s["label"] for s in stops})
