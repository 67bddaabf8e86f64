"""A conversation with the real CLI over pipes, for the invariants of the
stops while dynamo compiles: the test reads what a stop shows (its symbolic
locals) before it chooses the next commands (`p NAME` for each of them).

The debugger's output goes to stderr (`--out /dev/stderr`), the program's
stdout stays its own. Commands are read line by line from a pipe, and the
prompt is echoed only once a line is read, so each batch of commands ends
with a marker (`p '__mark_N__'`): its value printed means everything before
it was answered, and the next batch may be chosen from it."""
from __future__ import annotations

import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import warm_start
from harness import ROOT, TIMEOUT, child_env

PROMPT = re.compile(r"^\((dyndbg compile|dyndbg)\) (.*)$")
# A `***` line naming an exception class (`*** NotImplementedError: `): a
# command that raised instead of answering in words.
RAISED = re.compile(r"^\*\*\* [A-Z][A-Za-z0-9_]*(Error|Exception|Warning|Interrupt|Exit|Iteration)"
                    r"\b|^\*\*\* [A-Z][A-Za-z0-9_]*:")
COMPILE_TAG = re.compile(r"^\[compile ([0-9/_]+)\]")


class Answer(NamedTuple):
    """One command as echoed after its prompt, and the lines it printed."""

    compile_time: bool     # answered at a stop while dynamo compiles
    command: str
    lines: list[str]


class Reply(NamedTuple):
    """What a batch of commands got."""

    before: list[str]         # printed before the first command was read (the first stop)
    answers: list[Answer]     # each command's, the marker's left out
    compile_time: bool        # the stop the batch ended at is one while dynamo compiles

    def last_lines(self) -> list[str]:
        """What the last command printed, else what came before: after a step,
        the stop it ended at."""
        return self.answers[-1].lines if self.answers else self.before


@dataclass
class Dialog:
    """`python -m dyndbg OPTIONS SCRIPT ARGS` on pipes, one batch of commands at a time."""

    script: Path
    options: list[str]
    args: list[str] = field(default_factory=list)      # the program's
    env: dict[str, str | None] = field(default_factory=dict)
    cwd: Path = ROOT

    def __post_init__(self) -> None:
        argv = [sys.executable, "-m", "dyndbg", "--out", "/dev/stderr", *self.options,
                str(self.script), *self.args]
        self.proc = warm_start.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=self.cwd,
                                     env=child_env(None, self.env))
        self.stdout: list[bytes] = []
        self._drain = threading.Thread(target=lambda: self.stdout.append(self.proc.stdout.read()),
                                       daemon=True)
        self._drain.start()
        self._marks = 0
        self.transcript: list[str] = []
        self._timer = threading.Timer(TIMEOUT, self.proc.kill)
        self._timer.start()

    def ask(self, commands: list[str]) -> Reply | None:
        """Send COMMANDS; what they got, or None where the program ended
        before reading them all."""
        self._marks += 1
        mark = f"__mark_{self._marks}__"
        try:
            self.proc.stdin.write("".join(c + "\n" for c in [*commands, f"p '{mark}'"]).encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        before: list[str] = []
        answers: list[Answer] = []
        while True:
            raw = self.proc.stderr.readline()
            if not raw:
                return None
            line = raw.decode(errors="replace").rstrip("\n")
            self.transcript.append(line)
            prompt = PROMPT.match(line)
            if prompt:
                answers.append(Answer(prompt.group(1) == "dyndbg compile", prompt.group(2), []))
            elif answers:
                if answers[-1].command == f"p '{mark}'" and line == f"'{mark}'":
                    return Reply(before, answers[:-1], answers[-1].compile_time)
                answers[-1].lines.append(line)
            else:
                before.append(line)

    def finish(self) -> tuple[int, str, str]:
        """Close stdin (the debugger detaches), wait: (status, the program's stdout, stderr's rest)."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        rest = self.proc.stderr.read().decode(errors="replace")
        self.transcript.extend(rest.splitlines())
        status = self.proc.wait()
        self._timer.cancel()
        self._drain.join()
        return status, b"".join(self.stdout).decode(errors="replace"), rest
