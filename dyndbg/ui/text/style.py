"""Colour for the terminal: pygments for Python source, FX graph code and
disassembly. Plain mode (not a terminal, --no-color, NO_COLOR) gets the same
text with no escape codes at all. pygments loads on first use."""
from __future__ import annotations

import os
import re
from typing import TextIO

# The marker: `->` on the current instruction, `*` after it on one a cache edit changed.
_DIS_LINE = re.compile(r"^(?P<marker>(?:->|  )[ *])(?P<index>\s*\d+) (?P<offset>@\d+\s*) "
                       r"(?P<bp>[Bb]\d+\??\s*|\s{4})(?P<target>>>|  ) (?P<op>[A-Z_]+)(?P<rest>.*)$")
_SOURCE_HEADER = re.compile(r"^(?P<head>   \S+:\d+  )(?P<code>.*)$")

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
DIM = "\x1b[2m"
RED = "\x1b[31m"
GREEN = "\x1b[32m"
YELLOW = "\x1b[33m"
BLUE = "\x1b[34m"
MAGENTA = "\x1b[35m"
CYAN = "\x1b[36m"


def wants_color(out: TextIO, disabled: bool = False) -> bool:
    """Colour only on a terminal, and never with --no-color or NO_COLOR set."""
    if disabled or "NO_COLOR" in os.environ:
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


class Highlighter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._formatter = None
        self._lexer = None

    def python(self, code: str) -> str:
        """Python (source lines, FX graph code) highlighted, one line or many."""
        if not self.enabled or not code.strip():
            return code
        try:
            from pygments import highlight
            from pygments.formatters import TerminalFormatter
            from pygments.lexers import PythonLexer
            if self._formatter is None:
                self._formatter, self._lexer = TerminalFormatter(), PythonLexer()
            return highlight(code, self._lexer, self._formatter).rstrip("\n")
        except Exception:  # noqa: BLE001 - colour must never break output
            return code

    def paint(self, text: str, *codes: str) -> str:
        return text if not self.enabled else "".join(codes) + text + RESET

    def disassembly_line(self, line: str) -> str:
        """Opnames, arguments, jump targets, the current marker, breakpoints."""
        if not self.enabled:
            return line
        header = _SOURCE_HEADER.match(line)
        if header and not _DIS_LINE.match(line):
            return self.paint(header["head"], DIM) + self.python(header["code"])
        match = _DIS_LINE.match(line)
        if not match:
            return line
        current = match["marker"].startswith("->")
        return "".join([
            self.paint(match["marker"], BOLD, YELLOW) if current else match["marker"],
            self.paint(match["index"], BOLD) if current else match["index"], " ",
            self.paint(match["offset"], DIM), " ",
            self.paint(match["bp"], BOLD, RED) if match["bp"].strip() else match["bp"],
            self.paint(match["target"], MAGENTA) if match["target"].strip() else match["target"],
            " ", self.paint(match["op"], BOLD, BLUE if not current else YELLOW),
            self.paint(match["rest"], CYAN),
        ])
