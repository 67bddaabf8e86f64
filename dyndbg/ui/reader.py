"""Where command lines come from: a terminal, or a script on stdin."""
from __future__ import annotations

import sys
from typing import TextIO


class ScriptedReader:
    """Reads commands line by line from a non-terminal stdin.

    The prompt and the command are echoed so the transcript reads like a
    terminal session. At end of input, read() returns None (the session
    detaches and the program runs to completion).
    """

    interactive = False

    def __init__(self, stream: TextIO, out: TextIO) -> None:
        self.stream = stream
        self.out = out

    def read(self, prompt: str) -> str | None:
        self.out.write(prompt)
        try:
            line = self.stream.readline()
        except (OSError, ValueError, UnicodeDecodeError) as error:
            self.out.write(f"\n*** cannot read input ({type(error).__name__}); detaching\n")
            return None
        if not line:
            self.out.write("\n")
            self.out.flush()
            return None
        line = line.rstrip("\r\n")
        self.out.write(line + "\n")
        self.out.flush()
        return line


class TerminalReader:
    """Reads from a terminal with input() (readline editing where available)."""

    interactive = True

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def read(self, prompt: str) -> str | None:
        self.out.flush()
        try:
            return input(prompt)
        except EOFError:
            self.out.write("\n")
            return "quit"


def make_reader(out: TextIO) -> ScriptedReader | TerminalReader:
    stdin = sys.stdin
    if stdin is not None and stdin.isatty() and out.isatty():
        return TerminalReader(out)
    return ScriptedReader(stdin, out)
