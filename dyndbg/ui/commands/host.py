"""What the command families, the completer and the settings commands may ask
of the session that holds them (the session is the one implementation). They
talk to this, never to the session's own fields, and do not import it."""
from __future__ import annotations

import collections
import types
from typing import TYPE_CHECKING, Callable, NamedTuple, Protocol, Sequence

if TYPE_CHECKING:
    from dyndbg.engine.debugger import Engine
    from dyndbg.engine.recording.history import Record
    from dyndbg.engine.stop import Stop
    from dyndbg.engine.stop import CompileStop
    from dyndbg.ui.text.boundaries import GraphCall
    from dyndbg.ui.text.style import Highlighter


class PastView(NamedTuple):
    """The view at a recorded instruction, `before_now` instructions before
    the live stop."""

    record: Record
    before_now: int

    def note(self) -> str:
        return f"recorded, {self.before_now} instruction{'s' if self.before_now != 1 else ''} " \
            "before now"


class Reader(Protocol):
    """Where command lines come from (terminal/reader.py, terminal/prompt.py, distributed.py)."""
    interactive: bool

    def read(self, prompt: str) -> str | None: ...


class Family(Protocol):
    """A command family: `do_*` methods (help: their docstrings) under a title."""
    title: str


def commands_of(family: object) -> list[Callable[[str], None]]:
    """A family's commands in the order they are written; an alias (`do_b =
    do_break`) is the same function and is listed once, under its own name."""
    return [getattr(family, name) for name, function in vars(type(family)).items()
            if name.startswith("do_") and getattr(function, "__name__", None) == name]


def usage(command: Callable[[str], None]) -> str:
    """`b(reak)`: the first word of the docstring's first line."""
    return (command.__doc__ or "").splitlines()[0].split(" ")[0]


class Host(Protocol):
    # the stop the program is at (the engine holds it), and the frame selected in it (`up`, `down`)
    @property
    def stop(self) -> Stop | None: ...

    frames: list[types.FrameType]
    selected: int
    graph_call: GraphCall | None   # the compiled graph the stop's instruction calls, if any
    past: PastView | None     # a recorded point in view (`back`): values come from it

    @property
    def compile_stop(self) -> CompileStop | None: ...   # while dynamo compiles (commands/compile_stops.py)

    @property
    def compile_commands(self) -> Family: ...   # the commands at such a stop

    @property
    def frame(self) -> types.FrameType: ...
    def frame_locals(self, frame: types.FrameType | None = None) -> dict: ...
    def frame_stack(self) -> tuple[list[object] | None, str]: ...
    def traceback_lasti(self, frame: types.FrameType) -> int | None: ...
    def namespace(self) -> collections.ChainMap: ...
    def evaluate(self, expression: str) -> object: ...
    def frame_globals(self) -> dict: ...

    # running: the engine's resume modes and tables; resume() ends the prompt loop
    engine: Engine

    def resume(self) -> None: ...
    def step_into_graph_here(self) -> str | None: ...   # s at a graph's call: enter it

    # output
    highlighter: Highlighter

    def write(self, text: str = "") -> None: ...

    # the session's own settings (`sticky`, `set`)
    sticky: bool
    color: bool   # colour is possible at all (a terminal, no NO_COLOR)
    reader: Reader

    def print_sticky(self, stop: Stop) -> None: ...
    def print_stop(self, stop: Stop) -> None: ...
    def show_displays(self) -> None: ...

    # the commands: the families in help order, and lookup as the prompt does it
    @property
    def families(self) -> Sequence[Family]: ...

    def command(self, word: str) -> Callable[[str], None] | None: ...
    def command_names(self) -> list[str]: ...
