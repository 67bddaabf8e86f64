"""Where command lines come from: a terminal, or a script on stdin."""
from __future__ import annotations

import sys
from typing import Callable, TextIO


def printable(line: str) -> str:
    """The line with control characters and undecodable bytes escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)


class ScriptedReader:
    """Reads commands line by line from a non-terminal stdin.

    The prompt and the command are echoed so the transcript reads like a
    terminal session. At end of input, read() returns None (the session
    detaches and the program runs to completion).
    """

    interactive = False

    def __init__(self, stream: TextIO, write: Callable[[str], None]) -> None:
        self.stream = stream
        self.write = write  # writes one line; never raises

    def read(self, prompt: str) -> str | None:
        try:
            # Bytes, decoded leniently: garbage on stdin is a bad command, not the end.
            raw = getattr(self.stream, "buffer", None)
            line = raw.readline().decode("utf-8", "surrogateescape") if raw is not None \
                else self.stream.readline()
            if not line and raw is not None:
                # The program's own reads of sys.stdin (input()) take a chunk into
                # its text buffer, out of the bytes: lines left there are still to come.
                line = self.stream.readline()
        except (OSError, ValueError) as error:
            self.write(f"{prompt}\n*** cannot read input ({type(error).__name__}); detaching")
            return None
        if not line:
            self.write(prompt)
            return None
        line = line.rstrip("\r\n")
        self.write(prompt + printable(line))
        return line


class TerminalReader:
    """Reads from a terminal with input(): the plain mode (--no-color, NO_COLOR),
    which sends no colour or toolbar escapes of its own."""

    interactive = True

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write

    def read(self, prompt: str) -> str | None:
        try:
            return input(prompt)
        except EOFError:
            self.write("")
            return "quit"


class KernelReader:
    """Reads from a Jupyter front end through its kernel (ipykernel): input()
    is ipykernel's raw_input there, an input request the notebook shows as a
    box (and then, with the answer, in the cell's output), one command per
    request. Plain mode: the output goes to the cell."""

    interactive = True

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write
        self.detach_line: str | None = None   # why read() ended the input, if it did

    def read(self, prompt: str) -> str | None:
        try:
            line = input(prompt)
        except EOFError:
            self.detach_line = "dyndbg: the front end closed the input; detaching, the " \
                "program runs on"
            return None
        except Exception as error:  # noqa: BLE001 - never a traceback of ours
            if type(error).__name__ == "StdinNotImplementedError":
                self.detach_line = ("dyndbg: this kernel's front end takes no input "
                                    "(allow_stdin is off): no stop can read a command; "
                                    "detaching, the program runs on")
            else:
                self.detach_line = (f"dyndbg: cannot read input from the front end "
                                    f"({type(error).__name__}); detaching, the program runs on")
            return None
        return line     # the front end shows the prompt and the answer itself


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (ipykernel) running a cell."""
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def is_terminal(out: TextIO) -> bool:
    stdin = sys.stdin
    try:
        return stdin is not None and stdin.isatty() and out.isatty()
    except (AttributeError, ValueError):
        return False


def line_terminal_io() -> tuple:
    """The terminal read a line at a time (typeahead.py), or prompt-toolkit's own
    where that cannot be (None, None)."""
    try:
        from dyndbg.ui.terminal.typeahead import line_terminal_io as typeahead_io
    except ImportError:   # no termios: not a POSIX system
        return None, None
    return typeahead_io()
