"""What a request family (stop_requests.py, code_requests.py,
breakpoint_requests.py, compile_stop_requests.py, graph_stop_requests.py)
may ask of the hub that holds them, requests.py's Requests, the one
implementation: the families talk to this and never import requests.py,
as ui/'s command families talk to ui/commands/host.py; and what the hub asks of the front end in the program
(server.py), which it never imports."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    from dyndbg.dap.protocol import Channel
    from dyndbg.dap.bytecode_source import BytecodeListing
    from dyndbg.dynamo.compiles import GeneratedCode
    from dyndbg.engine.codeinfo import Instr
    from dyndbg.engine.debugger import Engine
    from dyndbg.engine.stop import Stop
    from dyndbg.engine.stop import CompileStop, GraphStop
    from dyndbg.ui.session import CommandOutput, Session


class Output(Protocol):
    """The front end in the program, as far as a family writes to the client."""

    def output(self, text: str, category: str = "console") -> None: ...


class Frontend(Output, Protocol):
    """The front end in the program (server.DapFrontend), as the hub drives it."""

    channel: Channel | None        # the client's connection, while there is one
    configured: threading.Event    # the client is done configuring (or gone)
    stopped: bool                  # a stop is being served to the client


class Code(Protocol):
    """The code family (code_requests.CodeRequests), as the others use it."""

    bytecode_view: bool     # frames point at the bytecode view

    def entry_of(self, serial: int) -> GeneratedCode | None: ...
    def listing(self, entry: GeneratedCode) -> BytecodeListing: ...
    def file_source(self, filename: str) -> dict: ...
    def frame_dict(self, frame_id: int, name: str, entry: GeneratedCode, instr: Instr,
                   filename: str) -> dict: ...
    def r_disassemble(self, arguments: dict) -> dict: ...


class Hub(Protocol):
    engine: Engine
    session: Session        # the prompt's own session, for inspection

    @property
    def stop(self) -> Stop | None: ...   # the engine's, while the client is stopped at it

    @property
    def compile_stop(self) -> CompileStop | None: ...   # stopped while dynamo compiles

    @property
    def graph_stop(self) -> GraphStop | None: ...   # stopped inside a compiled graph

    stop_thread: int        # the DAP id of the stopped thread
    # Run after the response to a request is sent (the spec's order).
    after_response: dict[str, Callable[[], None]]

    @property
    def frontend(self) -> Output: ...
    @property
    def code(self) -> Code: ...

    def checked_stop(self) -> Stop: ...
    def console_command(self, command: str, typed: bool = False) -> CommandOutput: ...
    def event(self, name: str, body: dict | None = None) -> None: ...
