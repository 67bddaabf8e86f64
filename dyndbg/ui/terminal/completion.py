"""Tab completion that knows where the debugger is stopped: command names, a
command's arguments where its family completes them (`complete_break`: graphs,
resume functions, compiled functions seen so far; else file names), and names,
attributes and keys in the current frame."""
from __future__ import annotations

import builtins
import keyword
import re
from typing import Callable, Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from dyndbg.ui.commands.host import Host
from dyndbg.ui.text.values import summarize

_ATTRIBUTE = re.compile(r"([A-Za-z_][\w.]*)\.(\w*)$")
_KEY = re.compile(r"([A-Za-z_][\w.]*)\[(['\"]?)([^\]'\"]*)$")
_NAME = re.compile(r"([A-Za-z_]\w*)$")


class DebuggerCompleter(Completer):
    def __init__(self, host: Host) -> None:
        self.host = host
        self._paths = PathCompleter(expanduser=True)

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        try:
            yield from self._completions(document, complete_event)
        except Exception:  # noqa: BLE001 - completion must never break the prompt
            return

    def _completions(self, document: Document, event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if " " not in text.lstrip():
            word = text.lstrip().lstrip("!")
            if "." in word or "[" in word:  # Python: attributes and keys
                yield from self._expression(text, event)
                return
            commands = [] if text.lstrip().startswith("!") else self.host.command_names()
            names = set(commands) | set(self._frame_names())
            for completion in _matching(word, sorted(names)):
                yield Completion(completion.text, completion.start_position,
                                 display_meta=self._meta(completion.text))
            return
        command, _, argument = text.lstrip().partition(" ")
        complete = self._argument_completer(command)
        if complete is not None:
            argument = argument.lstrip()
            candidates = complete(argument)
            if candidates is None:  # a file name
                yield from self._paths.get_completions(Document(argument), event)
                return
            yield from _matching(argument, candidates)
            return
        yield from self._expression(text, event)

    def _argument_completer(self, word: str) -> Callable[[str], list[str] | None] | None:
        """The family's `complete_WORD`, as pdb's Cmd.complete looks it up."""
        for family in self.host.families:
            found = getattr(family, f"complete_{word}", None)
            if found is not None:
                return found
        return None

    def _meta(self, name: str) -> str:
        """The value summary shown beside a name in the completion menu."""
        if self.host.compile_stop is not None:
            return ""    # summarizing a VariableTracker may realize it (install guards)
        namespace = self.host.namespace()
        if name in namespace:
            return summarize(namespace[name], 40)
        return ""

    def _frame_names(self) -> list[str]:
        host = self.host
        if host.compile_stop is not None:      # the symbolic locals and the traced module's
            names = set(host.namespace()) | set(host.frame_globals())
        elif host.stop is None:
            return []
        else:
            names = set(host.frame_locals()) | set(host.frame.f_globals)
        names |= set(dir(builtins)) | set(keyword.kwlist) | {"__stack__", "__frame__"}
        return sorted(names)

    def _expression(self, text: str, event: CompleteEvent) -> Iterable[Completion]:
        key = _KEY.search(text)
        if key:
            container = self._evaluate(key.group(1))
            if isinstance(container, dict):
                quote, typed = key.group(2), key.group(3)
                for k in list(container):
                    if quote:  # d['ab  -> the rest of a string key, closed
                        if isinstance(k, str) and k.startswith(typed):
                            yield Completion(f"{k}{quote}]", start_position=-len(typed))
                    elif repr(k).startswith(typed):  # d[  -> any key, as Python
                        yield Completion(f"{k!r}]", start_position=-len(typed))
            return
        attribute = _ATTRIBUTE.search(text)
        if attribute:
            if self.host.compile_stop is not None:
                return   # reading a VariableTracker's attribute may realize it (install guards)
            obj = self._evaluate(attribute.group(1))
            if obj is not None:
                yield from _matching(attribute.group(2), sorted(dir(obj)))
            return
        name = _NAME.search(text)
        if name:
            for completion in _matching(name.group(1), self._frame_names()):
                yield Completion(completion.text, completion.start_position,
                                 display_meta=self._meta(completion.text))

    def _evaluate(self, expression: str) -> object:
        """A dotted name in the stopped frame (attributes are read, nothing called)."""
        parts = expression.split(".")
        namespace = self.host.namespace()
        if parts[0] in namespace:
            obj = namespace[parts[0]]
        elif parts[0] in self.host.frame_globals():
            obj = self.host.frame_globals()[parts[0]]
        else:
            obj = getattr(builtins, parts[0], None)
        for part in parts[1:]:
            obj = getattr(obj, part, None)
        return obj


def _matching(prefix: str, candidates: Iterable[str]) -> Iterable[Completion]:
    for candidate in candidates:
        if candidate.startswith(prefix) and candidate != prefix:
            yield Completion(candidate, start_position=-len(prefix))
