"""`python -m dyndbg.dap`: the adapter an editor starts, DAP on stdio.

It answers `initialize` itself; `launch` starts the program in a child
process (`python -m dyndbg --dap-connect ...`) that connects back over a
loopback socket, and `attach` connects to a `--listen` server; from then on
it relays messages both ways. The program's stdout and stderr never touch
the protocol stream: they arrive here through pipes and go on as `output`
events, and its end as `exited` and `terminated`.
"""
from __future__ import annotations

import codecs
import os
import socket
import subprocess
import sys
import threading
from typing import BinaryIO

from dyndbg.dap.capabilities import CAPABILITIES, catch_trace_pattern
from dyndbg.dap.protocol import Channel, Message, ProtocolError

CONNECT_TIMEOUT_S = 120.0   # importing torch in a cold cache can take a while


class LaunchError(Exception):
    """A launch or attach that cannot start: the error response's message."""


def child_command(arguments: dict, port: int) -> list[str]:
    """The child's command line for a `launch` request's arguments."""
    python = arguments.get("python") or sys.executable
    if not isinstance(python, str):
        raise LaunchError("'python' must be a path to an interpreter")
    command = [python, "-m", "dyndbg", "--dap-connect", f"127.0.0.1:{port}"]
    if arguments.get("record"):
        command.append("--record")
    if arguments.get("catchTrace") is not None:
        try:
            command += ["--catch-trace", catch_trace_pattern(arguments["catchTrace"])]
        except ValueError as error:
            raise LaunchError(str(error)) from None
    args = arguments.get("args", [])
    if isinstance(args, str):
        args = args.split()
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise LaunchError("'args' must be a list of strings")
    program, module = arguments.get("program"), arguments.get("module")
    if isinstance(module, str) and module:
        return command + ["-m", module] + args
    if not isinstance(program, str) or not program:
        raise LaunchError("launch needs 'program' (a script) or 'module'")
    cwd = arguments.get("cwd") or os.getcwd()
    path = program if os.path.isabs(program) else os.path.join(str(cwd), program)
    if not os.path.isfile(path):
        raise LaunchError(f"no such program: {path}")
    return command + [path] + args


def child_env(arguments: dict) -> dict[str, str]:
    env = dict(os.environ)
    extra = arguments.get("env") or {}
    if not isinstance(extra, dict):
        raise LaunchError("'env' must be an object of strings")
    for name, value in extra.items():
        if value is None:
            env.pop(str(name), None)
        else:
            env[str(name)] = str(value)
    env.setdefault("PYTHONUNBUFFERED", "1")   # output events as the program prints
    return env


class Adapter:
    def __init__(self, client: Channel) -> None:
        self.client = client
        self.initialize: Message | None = None
        self.program: Channel | None = None
        self.process: subprocess.Popen | None = None
        self._pumps: list[threading.Thread] = []
        self._ended = threading.Event()

    # -- the client's side -------------------------------------------------------------
    def run(self) -> int:
        """Until the program has ended (or, with none, the client leaves)."""
        threading.Thread(target=self._serve_client, name="dyndbg-dap-client",
                         daemon=True).start()
        self._ended.wait()
        return 0

    def _serve_client(self) -> None:
        while True:
            try:
                message = self.client.read()
            except ProtocolError as error:
                self.client.event("output", {"category": "console",
                                             "output": f"dyndbg: bad message ignored: {error}\n"})
                continue
            if message is None:
                break   # the client went away: the program runs on
            if message.get("type") != "request":
                continue
            self.on_request(message)
        if self.program is not None:
            self.program.close()   # the server detaches; the program runs to its end
        else:
            self._ended.set()

    def on_request(self, request: Message) -> None:
        command = request.get("command")
        if self.program is not None:
            self.program.forward(request)
            return
        if command == "initialize":
            self.initialize = request
            self.client.respond(request, CAPABILITIES)
        elif command in ("launch", "attach"):
            arguments = request.get("arguments") or {}
            try:
                if command == "launch":
                    self._launch(arguments if isinstance(arguments, dict) else {})
                else:
                    self._attach(arguments if isinstance(arguments, dict) else {})
            except Exception as error:  # noqa: BLE001 - a bad launch never kills the adapter
                message = str(error) if isinstance(error, LaunchError) else \
                    f"cannot {command}: {type(error).__name__}: {error}"
                self.client.fail(request, message)
                if self.process is not None:
                    self._finish()
                return
            assert self.program is not None
            if self.initialize is not None:
                self.program.forward(self.initialize)
            self.program.forward(request)
        elif command in ("disconnect", "terminate"):
            self.client.respond(request)
            self._ended.set()
        else:
            self.client.fail(request, f"{command!r} before launch or attach")

    # -- starting the program ------------------------------------------------------------
    def _launch(self, arguments: dict) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        try:
            command = child_command(arguments, listener.getsockname()[1])
            try:
                self.process = subprocess.Popen(
                    command, cwd=arguments.get("cwd") or None, env=child_env(arguments),
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            except OSError as error:
                raise LaunchError(f"cannot start {command[0]}: {error}") from None
        except BaseException:
            listener.close()
            raise
        for stream, category in ((self.process.stdout, "stdout"), (self.process.stderr, "stderr")):
            pump = threading.Thread(target=self._pump_output, args=(stream, category),
                                    name=f"dyndbg-dap-{category}", daemon=True)
            pump.start()
            self._pumps.append(pump)
        listener.settimeout(1.0)
        waited = 0.0
        try:
            while True:
                try:
                    connection, _ = listener.accept()
                    break
                except socket.timeout:
                    waited += 1.0
                    if self.process.poll() is not None or waited > CONNECT_TIMEOUT_S:
                        raise LaunchError("the program ended before dyndbg could start "
                                          f"(exit status {self.process.poll()}); its output "
                                          "is above") from None
        finally:
            listener.close()
        self._connected(connection)

    def _attach(self, arguments: dict) -> None:
        connect = arguments.get("connect") or arguments
        host = connect.get("host", "127.0.0.1") if isinstance(connect, dict) else None
        port = connect.get("port") if isinstance(connect, dict) else None
        if not isinstance(host, str) or not isinstance(port, int):
            raise LaunchError("attach needs 'connect': {'host': ..., 'port': N}")
        try:
            connection = socket.create_connection((host, port), timeout=10)
        except OSError as error:
            raise LaunchError(f"cannot connect to {host}:{port}: {error}") from None
        connection.settimeout(None)
        self._connected(connection)

    def _connected(self, connection: socket.socket) -> None:
        self.program = Channel(connection.makefile("rb"), connection.makefile("wb"))
        threading.Thread(target=self._relay, name="dyndbg-dap-relay", daemon=True).start()

    # -- the program's side ---------------------------------------------------------------
    def _relay(self) -> None:
        """The server's messages on to the client, less its answer to the
        `initialize` the adapter already answered."""
        assert self.program is not None
        init_seq = self.initialize.get("seq") if self.initialize else None
        while True:
            try:
                message = self.program.read()
            except (ProtocolError, OSError, ValueError):
                message = None
            if message is None:
                break
            if message.get("type") == "response" and message.get("command") == "initialize" \
                    and message.get("request_seq") == init_seq:
                continue
            self.client.send(message)
        self._finish()

    def _finish(self) -> None:
        """The connection ended: wait for the process and its output, then say
        how it ended."""
        if self.process is not None:
            if self.process.poll() is None and self.program is None:
                self.process.kill()   # it never connected
            status = self.process.wait()
            for pump in self._pumps:
                pump.join()
            self.client.event("exited", {"exitCode": status if status >= 0 else 128 - status})
        self.client.event("terminated")
        self._ended.set()

    def _pump_output(self, stream: BinaryIO, category: str) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            try:
                chunk = os.read(stream.fileno(), 65536)
            except OSError:
                chunk = b""
            text = decoder.decode(chunk, final=not chunk)
            if text:
                self.client.event("output", {"category": category, "output": text})
            if not chunk:
                return


def main() -> int:
    client = Channel(sys.stdin.buffer, sys.stdout.buffer)
    # Nothing else may write to the protocol stream: a stray print goes to stderr.
    sys.stdout = sys.stderr
    status = Adapter(client).run()
    # The client's reader thread may be blocked on stdin: leave without
    # waiting for it (interpreter shutdown would abort on its lock).
    sys.stderr.flush()
    os._exit(status)
