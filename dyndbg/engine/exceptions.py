"""Exceptions that are control flow between the engine and the program."""
from __future__ import annotations


class DyndbgQuit(BaseException):
    """Raised into the program by `quit`, as pdb raises BdbQuit.

    A BaseException so that the program's `except Exception` cannot swallow it.
    """


class ConditionInterrupted(Exception):
    """A breakpoint condition stopped by Ctrl-C: reported, the breakpoint hit."""


# What a trace callback lets through into the program, as it would arrive
# without dyndbg; anything else raised in a callback is dyndbg's own error.
PASSES_THROUGH = (DyndbgQuit, KeyboardInterrupt)
