"""Keys typed ahead stay in the terminal until something asks for them, as
with readline (pdb). prompt-toolkit reads the terminal in chunks of up to
64 KiB: the lines typed ahead after the one that resumes the program
(`c<Enter>` and then an answer for the program's own input()) went into
prompt-toolkit's buffer, where only dyndbg's next prompt could see them, not
the program, nor the shell once the program ended.

Here a read stops after the first key that can end a prompt, and while keys
are waiting when a prompt starts it sends no cursor-position request: the
terminal's answer would queue behind those keys, and prompt-toolkit reads on
to it before it lets the terminal go. Loaded with prompt-toolkit only."""
from __future__ import annotations

import codecs
import contextlib
import os
import select
import sys
from typing import Iterator, TextIO

from prompt_toolkit.input.vt100 import Vt100Input
from prompt_toolkit.output.color_depth import ColorDepth
from prompt_toolkit.output.vt100 import Vt100_Output
from prompt_toolkit.utils import get_bell_environment_variable, get_term_environment_variable

# Keys that end a prompt: Enter (\r in raw mode; \n where the terminal's cooked
# mode stored it while the program ran), Ctrl-C and Ctrl-D.
PROMPT_ENDS = frozenset(b"\r\n\x03\x04")


def keys_waiting(fd: int) -> bool:
    """Whether the terminal holds unread input; False where it cannot tell."""
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return False


class LineReader:
    """What Vt100Input reads with (its `stdin_reader`): the bytes waiting, up to
    and including the first that can end a prompt, decoded as prompt-toolkit's
    own reader does. A byte at a time, as readline reads."""

    def __init__(self, fd: int, encoding: str) -> None:
        self.fd = fd
        self.closed = False
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="surrogateescape")

    def read(self, count: int = 1024) -> str:
        data = bytearray()
        while len(data) < count and keys_waiting(self.fd):
            try:
                byte = os.read(self.fd, 1)
            except OSError:   # as prompt-toolkit's reader: nothing this time (SIGWINCH)
                break
            if not byte:
                self.closed = True   # the terminal hung up: prompt-toolkit ends the prompt
                break
            data += byte
            if byte[0] in PROMPT_ENDS:
                break
        return self._decoder.decode(bytes(data))


class LineInput(Vt100Input):
    """The terminal, read no further than the end of the line that ends the prompt."""

    def __init__(self, stdin: TextIO) -> None:
        super().__init__(stdin)
        self.stdin_reader = LineReader(self.fileno(), stdin.encoding or "utf-8")  # type: ignore[assignment]  # a LineReader for its PosixStdinReader
        self.typed_ahead = False   # keys were waiting when this prompt started

    @contextlib.contextmanager
    def raw_mode(self) -> Iterator[None]:
        with super().raw_mode():
            # After the switch: a line typed without Enter is readable only in raw mode.
            self.typed_ahead = keys_waiting(self.fileno())
            yield


class LineOutput(Vt100_Output):
    """prompt-toolkit asks the output for the rows below the cursor before it
    sends a cursor-position request; while keys typed ahead wait, this answers
    0 (the prompt's natural height, the toolbar under it) and none is sent."""

    line_input: LineInput | None = None

    def get_rows_below_cursor_position(self) -> int:
        if self.line_input is not None and self.line_input.typed_ahead:
            return 0
        raise NotImplementedError   # Vt100_Output's answer: ask the terminal


def line_terminal_io() -> tuple[LineInput, LineOutput] | tuple[None, None]:
    """(input, output) for the PromptSession on the real terminal, as
    prompt-toolkit's create_input/create_output would make them; (None, None),
    prompt-toolkit's own, where stdin and stdout are not both terminals."""
    try:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            return None, None
        line_input = LineInput(sys.stdin)
        output = LineOutput.from_pty(sys.stdout, term=get_term_environment_variable(),
                                     default_color_depth=ColorDepth.from_env(),
                                     enable_bell=get_bell_environment_variable())
        assert isinstance(output, LineOutput)   # from_pty makes its own class
    except Exception:  # noqa: BLE001 - an odd terminal: prompt-toolkit's own, as before
        return None, None
    output.line_input = line_input
    return line_input, output
