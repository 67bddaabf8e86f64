"""Reading dyndbg's scripted transcripts: one segment per prompt (the command
echoed after `(dyndbg) ` and what it printed), and the stops in some lines."""
from __future__ import annotations

import re
from dataclasses import dataclass

from harness import Run

PROMPT = "(dyndbg) "
STOP = re.compile(r"^> (?P<label>.+?)  instr (?P<index>\d+)/(?P<total>\d+) @(?P<offset>\d+)  ")
BP_HIT = re.compile(r"^Breakpoint (?P<number>\d+) at .*, hit (?P<hits>\d+)$")
CATCH_HIT = re.compile(r"^Catchpoint (?P<number>\d+) \((?P<event>[\w-]+)\), hit (?P<hits>\d+)$")


@dataclass
class Segment:
    command: str          # the line echoed after the prompt
    output: list[str]     # what was printed before the next prompt


def segments(transcript: str) -> list[Segment]:
    found: list[Segment] = []
    for line in transcript.splitlines():
        if line.startswith(PROMPT):
            found.append(Segment(line[len(PROMPT):], []))
        elif found:
            found[-1].output.append(line)
    return found


GRAPH_PROMPT = "(dyndbg graph) "


def graph_segments(transcript: str) -> list[tuple[str, list[str]]]:
    """(command, what it printed) at both prompts: the generated code's and
    the one inside a compiled graph."""
    found: list[tuple[str, list[str]]] = []
    for line in transcript.splitlines():
        prompt = next((p for p in (GRAPH_PROMPT, PROMPT) if line.startswith(p)), None)
        if prompt is not None:
            found.append((line[len(prompt):], []))
        elif found:
            found[-1][1].append(line)
    return found


def stops_in(lines: list[str]) -> list[dict]:
    """The stops in some output lines, with the breakpoints and catchpoints reported."""
    stops: list[dict] = []
    bps: list[tuple[int, int]] = []
    catches: list[tuple[int, str, int]] = []
    for line in lines:
        hit = BP_HIT.match(line)
        if hit:
            bps.append((int(hit["number"]), int(hit["hits"])))
            continue
        catch = CATCH_HIT.match(line)
        if catch:
            catches.append((int(catch["number"]), catch["event"], int(catch["hits"])))
            continue
        match = STOP.match(line)
        if match:
            stops.append({"label": match["label"], "index": int(match["index"]),
                          "offset": int(match["offset"]), "line": line,
                          "breakpoints": bps, "catches": catches})
            bps, catches = [], []
    return stops


def no_traceback(run: Run) -> None:
    for name, text in (("stdout", run.stdout), ("stderr", run.stderr),
                       ("transcript", run.transcript)):
        assert "Traceback" not in text, f"a traceback in {name}:\n{text[-3000:]}"
