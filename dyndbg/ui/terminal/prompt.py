"""The interactive prompt in a terminal: a prompt-toolkit PromptSession with
persistent history, context-aware completion, Python highlighting of the input,
a bottom toolbar and Emacs or Vi keys. prompt-toolkit loads only here."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from prompt_toolkit.completion import Completer
    from prompt_toolkit.history import History

DEFAULT_HISTORY = "~/.dyndbg_history"


def history_path() -> str | None:
    """~/.dyndbg_history, or $DYNDBG_HISTORY; an empty DYNDBG_HISTORY disables it."""
    path = os.environ.get("DYNDBG_HISTORY", DEFAULT_HISTORY)
    return os.path.expanduser(path) if path else None


def open_history(write: Callable[[str], None]) -> "History":
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    path = history_path()
    if path is None:
        return InMemoryHistory()
    try:
        # Created private: commands can hold values from the program.
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600))
        return FileHistory(path)
    except OSError as error:
        write(f"dyndbg: history not saved ({path}: {error.strerror})")
        return InMemoryHistory()


class PromptReader:
    interactive = True

    def __init__(self, write: Callable[[str], None], completer: "Completer",
                 toolbar: Callable[[], str], input=None, output=None) -> None:
        """toolbar: the bottom line's text, asked for at each redraw."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.lexers import PygmentsLexer
        from pygments.lexers.python import PythonLexer

        self.write = write
        self.prompt_session: PromptSession[str] = PromptSession(
            history=open_history(write), completer=completer,
            lexer=PygmentsLexer(PythonLexer), bottom_toolbar=toolbar,
            complete_while_typing=False, input=input, output=output)

    def read(self, prompt: str) -> str | None:
        """One line; Ctrl-D quits as pdb's EOF does; Ctrl-C raises KeyboardInterrupt
        (the session clears the line and prompts again)."""
        try:
            return self.prompt_session.prompt(prompt)
        except EOFError:
            self.write("")
            return "quit"

    def set_vi(self, on: bool) -> None:
        from prompt_toolkit.enums import EditingMode
        self.prompt_session.editing_mode = EditingMode.VI if on else EditingMode.EMACS
