"""The prompt inside a pytest run (`pytest --dyndbg`, dyndbg/pytest_plugin.py),
wired here as attach.py wires the CLI's (ui/ never imports the session).

The same Session as the CLI's, with what a test run needs around each stop:
pytest's capture suspended, stdin included (as its --pdb does), the output
written to the stdout of the moment (the terminal while suspended), the
reader chosen then (terminal or piped stdin); and the first stop, at the
first generated instruction, only running `.dyndbgrc` and --dyndbg-commands
before the tests go on.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator

from dyndbg.engine.debugger import Engine
from dyndbg.engine.stop import Stop
from dyndbg.engine.stop import CompileStop, GraphStop
from dyndbg.ui.terminal import rcfile
from dyndbg.ui.terminal.reader import printable
from dyndbg.ui.session import Session


class _CurrentStdout:
    """sys.stdout as it is at each write: pytest's capture, or the terminal
    while a stop has the capture suspended."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()

    def isatty(self) -> bool:
        return sys.stdout.isatty()

    @property
    def encoding(self) -> str:
        return getattr(sys.stdout, "encoding", None) or "utf-8"


class PytestSession(Session):
    def __init__(self, config: Any, commands: list[str]) -> None:
        super().__init__(_CurrentStdout(), commands)     # type: ignore[arg-type]  # a TextIO's part
        self._config = config
        self._first = bool(commands)   # a first stop only to run the commands (start())

    @contextlib.contextmanager
    def _capture_suspended(self) -> Iterator[None]:
        capture = self._config.pluginmanager.getplugin("capturemanager")
        if capture is not None:
            capture.suspend(in_=True)
        try:
            yield
        finally:
            if capture is not None:
                capture.resume()

    def interact(self, stop: Stop) -> None:
        with self._capture_suspended():
            if self._first:
                self._first = False
                self._run_first_commands(stop)
                return
            self.use_output()       # the terminal (or a pipe) now that capture is off
            self.write("")          # off pytest's line of progress dots
            super().interact(stop)

    def interact_compile(self, stop: CompileStop) -> None:
        """A stop while dynamo compiles, as a stop in generated code: with
        pytest's capture suspended, stdin included."""
        with self._capture_suspended():
            self.use_output()
            self.write("")
            super().interact_compile(stop)

    def interact_graph(self, stop: GraphStop) -> None:
        """A stop inside a compiled graph (`s` at its call), as a stop in
        generated code: with pytest's capture suspended, stdin included."""
        with self._capture_suspended():
            self.use_output()
            self.write("")
            super().interact_graph(stop)

    def _run_first_commands(self, stop: Stop) -> None:
        """At the first generated instruction: the commands, echoed; then on."""
        self.enter(stop)
        while self.pending and not self._resumed:
            line = self.pending.pop(0)
            self.write(self.prompt + printable(line))
            self.onecmd(line)
        if not self._resumed:
            self.engine.set_continue()
            self.resume()


def start(config: Any, commands: str | None) -> Engine:
    """Attach an engine with a PytestSession: post mortem at failures through
    generated code, the first stop only if there are commands to run there."""
    from dyndbg.attach import start_engine
    session = PytestSession(config, [commands] if commands else [])
    session.pending[:0] = rcfile.read_commands(session.write)
    session._first = bool(session.pending)
    engine = Engine(session)
    session.engine = engine
    start_engine(engine)
    engine.keep_failed_calls = True
    if not session._first:
        engine.set_continue()
    return engine
