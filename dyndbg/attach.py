"""Wiring: a front end and an engine, started together; the one attached now."""
from __future__ import annotations

from typing import TextIO

from dyndbg.distributed import NoInputReader
from dyndbg.engine.debugger import Engine
from dyndbg.support import untested_here
from dyndbg.ui.terminal import rcfile
from dyndbg.ui.session import Session

_current: Engine | None = None  # the engine attached to this process, if any


def current() -> Engine | None:
    """The attached engine, or None if there is none (or it has detached)."""
    if _current is not None and not _current.detached:
        return _current
    return None


def attach(out: TextIO, commands: list[str] | None = None, no_color: bool = False,
           terminal_io: tuple | None = None, *, read_rc: bool = True,
           read_input: bool = True) -> Engine:
    """Start debugging: stop at the first dynamo-generated instruction to run.

    terminal_io: (input, output) for the prompt-toolkit session, for tests.
    read_rc: run the commands of ~/.dyndbgrc and ./.dyndbgrc at the first
    stop, before `commands` (as pdb's .pdbrc and -c).
    read_input: False for a process that must never read stdin (a torchrun
    rank other than 0): after its commands, every prompt is the end of input.
    """
    session = Session(out, commands, no_color, terminal_io)
    warning = untested_here()
    if warning is not None:
        session.write(warning)
    if read_rc:
        # Read now, in the directory the debugger was started from.
        session.pending[:0] = rcfile.read_commands(session.write)
    if not read_input:
        session.reader = NoInputReader(session.write)
    engine = Engine(session)
    session.engine = engine
    return start_engine(engine)


def set_options(engine: Engine, *, post_mortem: bool = False, record: bool = False,
                trace: bool = False, catch_trace: str | None = None) -> None:
    """--post-mortem, --record, --trace and --catch-trace, as the CLI and the
    notebook magics take them."""
    if post_mortem:
        engine.keep_failed_calls = True
    if record:
        engine.recording = True
    if trace:
        engine.instruction_trace = True
    if catch_trace is not None:
        engine.compile_stops.catch(catch_trace)


def start_engine(engine: Engine) -> Engine:
    """Start an engine whose front end is wired to it; it is the one attached now."""
    global _current
    engine.start()
    _current = engine
    return engine
