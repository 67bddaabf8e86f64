"""Runs under torchrun: which rank this process is, and the output of a rank.

torchrun starts one process per rank with RANK (and WORLD_SIZE) in the
environment. With `--rank R` only rank R is debugged; without it every rank
is, its debugger output prefixed with `[rank N] `, and only rank 0 reads
commands (the ranks share one stdin, and a terminal can answer one prompt).
Imports nothing heavy: an undebugged rank must run as plain python does.
"""
from __future__ import annotations

import os
from typing import Callable, TextIO


def env_rank() -> int | None:
    """This process's rank from RANK, or None when RANK is not set to a whole number."""
    value = os.environ.get("RANK", "").strip()
    try:
        rank = int(value)
    except ValueError:
        return None
    return rank if rank >= 0 else None


def why_no_rank() -> str:
    """Why env_rank() is None, in a few words."""
    value = os.environ.get("RANK")
    if value is None:
        return "RANK is not set (not started by torchrun?)"
    return f"RANK={value!r} is not a rank number"


def world_size() -> int | None:
    try:
        return int(os.environ.get("WORLD_SIZE", ""))
    except ValueError:
        return None


class RankWriter:
    """A text stream that starts every line with `[rank N] `.

    Each write goes to the underlying stream in one call, so that lines of
    ranks sharing a file or pipe do not mix within a line (python -u, as
    torchrun runs its workers, writes each call straight through).
    interactive=False makes isatty() false: a rank that reads no commands
    gets plain output and no prompt-toolkit session.
    """

    def __init__(self, out: TextIO, rank: int, interactive: bool = True) -> None:
        self._out = out
        self.prefix = f"[rank {rank}] "
        self._interactive = interactive
        self._at_line_start = True

    def write(self, text: str) -> int:
        if not text:
            return 0
        lines = text.split("\n")
        parts = []
        for i, line in enumerate(lines):
            if i > 0:
                parts.append("\n")
                self._at_line_start = True
            complete = i < len(lines) - 1  # an empty line is a line too: prefixed
            if line or complete:
                if self._at_line_start:
                    parts.append(self.prefix)
                    self._at_line_start = False
                parts.append(line)
        self._out.write("".join(parts))
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def isatty(self) -> bool:
        return self._interactive and self._out.isatty()

    def __getattr__(self, name: str) -> object:
        # encoding, fileno, ... as the real stream has them
        return getattr(self._out, name)


class NoInputReader:
    """The reader of a rank other than 0: it never reads stdin. Its -c and rc
    commands run, then every prompt meets the end of input (the session
    detaches and the program runs to completion, as a scripted run does)."""

    interactive = False

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write

    def read(self, prompt: str) -> str | None:
        self.write(prompt)
        self.write("dyndbg: only rank 0 reads commands (stdin); this rank does not")
        return None
