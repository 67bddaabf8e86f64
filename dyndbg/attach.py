"""Wiring: a front end and an engine, started together."""
from __future__ import annotations

from typing import TextIO

from dyndbg.engine.debugger import Engine
from dyndbg.ui.session import Session


def attach(out: TextIO, commands: list[str] | None = None, no_color: bool = False,
           terminal_io: tuple | None = None) -> Engine:
    """Start debugging: stop at the first dynamo-generated instruction to run.

    terminal_io: (input, output) for the prompt-toolkit session, for tests.
    """
    session = Session(out, commands, no_color, terminal_io)
    engine = Engine(session)
    session.engine = engine
    engine.start()
    return engine
