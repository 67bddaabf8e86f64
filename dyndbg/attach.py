"""Wiring: a front end and an engine, started together."""
from __future__ import annotations

from typing import TextIO

from dyndbg.engine.debugger import Engine
from dyndbg.ui.session import Session


def attach(out: TextIO, commands: list[str] | None = None, no_color: bool = False) -> Engine:
    """Start debugging: stop at the first dynamo-generated instruction to run."""
    session = Session(out, commands, no_color)
    engine = Engine(session)
    session.engine = engine
    engine.start()
    return engine
