"""The entry that runs passes its own guards (issue 35): every generated
frame's first stop, with `guards` run there as a user runs it, lists each
guard of the running entry as `ok`. Only a guard torch itself cannot
evaluate out of its frame may say so in words (`n/a`); none may FAIL.

    python tests/programs/guards_hold.py continue|step PROGRAM...

continue: a breakpoint at the entry of every function's and resume
function's generated code (`b *`, `b resume`), so that later frames of a
code start in the compiled core where it can; step: every instruction
stops, as at the first stop of a session. The programs run one after the
other in this process (dynamo reset between them); one line per program:
`GUARDS {"program": P, "first": N, "closures": N, "listed": N, "fail": [...],
"na": [...], "other": [...]}` (first stops, those in code with free
variables, guard lines listed; `other`: a listing that was no guard tree).
"""
import io
import json
import re
import sys

import torch

from dyndbg.attach import attach

from in_process import run_attached  # beside this file

LISTING = re.compile(r"^guards of \[[^\]]*\] \(running\), against this call's inputs:$")
GUARD = re.compile(r"^  (?P<mark>ok  |FAIL|n/a ) +\d+ ")


def _guard_lines(text: str) -> list[str] | None:
    """The lines of the running entry's listing in `guards`' output, or None."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if LISTING.match(line)), None)
    if start is None:
        return None
    listing = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        listing.append(line)
    return listing


def run(program: str, mode: str) -> dict:
    torch._dynamo.reset()
    out = io.StringIO()
    engine = attach(out, [], read_rc=False, read_input=False)
    session = engine.frontend
    plain_interact = session.interact
    onward = "si" if mode == "step" else "c"   # si: s would enter a compiled graph
    found = {"program": program, "first": 0, "closures": 0, "listed": 0, "fail": [], "na": [],
             "other": []}

    def interact(stop):  # noqa: ANN001, ANN202
        if not stop.first_in_frame or stop.entry.original is None:
            session.pending[:0] = [onward]
            plain_interact(stop)
            return
        setup = ["b *", "b resume"] if mode == "continue" and not found["first"] else []
        found["first"] += 1
        found["closures"] += bool(stop.frame.f_code.co_freevars)
        start = out.tell()
        session.pending[:0] = [*setup, "guards", onward]
        plain_interact(stop)
        where = f"{stop.entry.label()} @{stop.instr.offset}"
        listing = _guard_lines(out.getvalue()[start:])
        if listing is None:
            found["other"].append(f"{where}: {out.getvalue()[start:][-300:]}")
            return
        for line in listing:
            match = GUARD.match(line)
            if match is None:
                continue
            found["listed"] += 1
            if match["mark"] == "FAIL":
                found["fail"].append(f"{where}: {line.strip()}"[:300])
            elif match["mark"] == "n/a ":
                found["na"].append(f"{where}: {line.strip()}"[:300])

    session.interact = interact
    run_attached(program, engine)
    return found


def main() -> None:
    mode = sys.argv[1]
    for program in sys.argv[2:]:
        print("GUARDS " + json.dumps(run(program, mode)), flush=True)


if __name__ == "__main__":
    main()
