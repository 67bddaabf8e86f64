"""A small Debug Adapter Protocol client for the tests (tier 1 of issue 24).

It talks to `python -m dyndbg.dap` over stdio (`DapClient.start_adapter`) or
to a program served by `python -m dyndbg --listen` over TCP
(`DapClient.connect`, with `ListeningProgram` to start one), and checks EVERY
message, in both directions, against DAP's schema (dap_wire.py). A
violation fails the test with the schema's message and the offending JSON;
so do a peer `seq` that does not count 1, 2, 3... as the spec says, and a
second or stray response.
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

import warm_start
from dap_wire import FrameParser, Message, SchemaViolation, shown, encode, schema_errors, validate

# Importing torch takes 5-15 s on an idle machine; this one is shared by several
# people on 2 cores, so every wait is generous.
TIMEOUT = 240.0


# -- the client --------------------------------------------------------------

def _brief(message: Message) -> str:
    text = json.dumps(message)
    return text if len(text) <= 300 else text[:300] + "..."


class DapClient:
    """One DAP connection. Messages are read by a thread; `request` waits for
    the answer to its own seq, `wait_event` for an event not yet taken."""

    def __init__(self, write: Callable[[bytes], None], read: Callable[[], bytes],
                 close: Callable[[], None], stderr: Callable[[], str], what: str) -> None:
        self._write = write
        self._close = close
        self._stderr = stderr
        self.what = what
        self._seq = 0
        self._cond = threading.Condition()
        self._responses: dict[int, Message] = {}
        self.events: list[Message] = []          # every event, in order
        self.requests_in: list[Message] = []     # reverse requests from the adapter
        self._taken: set[int] = set()            # indexes in events that wait_event returned
        self._log: deque[str] = deque(maxlen=60)
        self._problems: list[str] = []           # schema, seq or framing failures seen by the reader
        self._their_seq = 0
        self.closed = False
        self._reader = threading.Thread(target=self._read_loop, args=(read,), daemon=True,
                                        name="dap-client-reader")
        self._reader.start()

    # starting
    @classmethod
    def start_adapter(cls, python: str = sys.executable, cwd: Path | str | None = None,
                      env: dict[str, str] | None = None) -> "DapClient":
        """`python -m dyndbg.dap` on stdio."""
        proc = warm_start.Popen([python, "-m", "dyndbg.dap"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env)
        err = _Drain(proc.stderr)
        assert proc.stdin is not None and proc.stdout is not None

        def write(data: bytes) -> None:
            proc.stdin.write(data)    # type: ignore[union-attr]
            proc.stdin.flush()        # type: ignore[union-attr]

        def read() -> bytes:
            return os.read(proc.stdout.fileno(), 65536)  # type: ignore[union-attr]

        def close() -> None:
            # stdin first: the adapter ends, and the reader meets the end of
            # its stdout (closed only then: the reader may still be in it)
            try:
                proc.stdin.close()    # type: ignore[union-attr]
            except OSError:
                pass
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()       # type: ignore[union-attr]

        client = cls(write, read, close, lambda: err.text, "the adapter (python -m dyndbg.dap)")
        client.process = proc   # type: ignore[attr-defined]
        return client

    @classmethod
    def connect(cls, port: int, host: str = "127.0.0.1",
                stderr: Callable[[], str] = lambda: "", timeout: float = 30.0) -> "DapClient":
        """A TCP connection to a DAP server (`python -m dyndbg --listen`)."""
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.settimeout(None)

        def close() -> None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

        return cls(sock.sendall, lambda: sock.recv(65536), close, stderr,
                   f"the server on {host}:{port}")

    # reading
    def _read_loop(self, read: Callable[[], bytes]) -> None:
        parser = FrameParser()
        try:
            while True:
                try:
                    data = read()
                except (OSError, ValueError):   # ValueError: closed by close()
                    data = b""
                if not data:
                    if parser.pending:
                        self._problem(f"the stream ended inside a message: {parser.pending[:300]!r}")
                    break
                for message in parser.feed(data):
                    self._received(message)
        except Exception as error:   # framing: kept, and failed on at the next wait
            self._problem(f"{type(error).__name__}: {error}")
        finally:
            with self._cond:
                self.closed = True
                self._cond.notify_all()

    def _problem(self, text: str) -> None:
        with self._cond:
            self._problems.append(text)
            self._cond.notify_all()

    def _received(self, message: Message) -> None:
        self._log.append("<- " + _brief(message))
        try:
            validate(message, "a received")
        except SchemaViolation as error:
            self._problem(str(error))
        seq = message.get("seq")
        if isinstance(seq, int) and seq != self._their_seq + 1:
            self._problem(f"the peer's seq went from {self._their_seq} to {seq} (the spec: "
                          f"1 for its first message, then 1 more each):\n{shown(message)}")
        if isinstance(seq, int):
            self._their_seq = seq
        with self._cond:
            kind = message.get("type")
            if kind == "response" and isinstance(message.get("request_seq"), int):
                answered = message["request_seq"]
                if answered in self._responses or not 0 < answered <= self._seq:
                    self._problems.append(
                        f"a {'second' if answered in self._responses else 'stray'} response to "
                        f"request {answered} (requests sent: 1..{self._seq}):\n{shown(message)}")
                self._responses.setdefault(answered, message)
            elif kind == "event":
                self.events.append(message)
            elif kind == "request":
                self.requests_in.append(message)
            self._cond.notify_all()

    def _check(self) -> None:
        """Fails on what the reader found wrong (each problem once)."""
        with self._cond:   # an RLock: callers may hold it
            problems, self._problems = self._problems, []
        if problems:
            raise AssertionError("\n\n".join(problems) + self.diagnostics())

    # sending
    def send_request(self, command: str, arguments: Any = None, *,
                     schema_invalid: bool = False) -> int:
        """Sends a request and returns its seq without waiting. schema_invalid:
        the test means to send a malformed request; then it must NOT match the
        schema (checked), and the answer is still checked."""
        self._check()
        self._seq += 1
        message: Message = {"seq": self._seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        if schema_invalid:
            name, problems = schema_errors(message)
            assert problems, f"meant to be malformed, but it matches {name}:\n{shown(message)}"
        else:
            validate(message, "a sent")
        self._log.append("-> " + _brief(message))
        self._write(encode(message))
        return self._seq

    def response(self, seq: int, timeout: float = TIMEOUT) -> Message:
        """The answer to request `seq`."""
        with self._cond:
            found = self._cond.wait_for(
                lambda: seq in self._responses or self.closed or bool(self._problems), timeout)
            self._check()
            if seq not in self._responses:
                raise AssertionError(
                    f"no response to request {seq} ({'the connection closed' if found else f'{timeout} s'})"
                    + self.diagnostics())
            return self._responses[seq]

    def request(self, command: str, arguments: Any = None, timeout: float = TIMEOUT,
                **options: Any) -> Message:
        """Sends a request and waits for its response (success or not)."""
        answer = self.response(self.send_request(command, arguments, **options), timeout)
        assert answer.get("command") == command, \
            f"the response to {command!r} says command {answer.get('command')!r}" + self.diagnostics()
        return answer

    def ok(self, command: str, arguments: Any = None, timeout: float = TIMEOUT) -> dict:
        """A request that must succeed: its body ({} if none)."""
        answer = self.request(command, arguments, timeout)
        assert answer["success"] is True, \
            f"{command} {json.dumps(arguments)} failed: {answer.get('message')!r}" + self.diagnostics()
        return answer.get("body") or {}

    def error(self, command: str, arguments: Any = None, timeout: float = TIMEOUT,
              **options: Any) -> str:
        """A request that must fail with a message: the message."""
        answer = self.request(command, arguments, timeout, **options)
        assert answer["success"] is False, \
            f"{command} {json.dumps(arguments)} succeeded, an error was expected:\n{shown(answer)}" \
            + self.diagnostics()
        message = answer.get("message") or ""
        assert message.strip(), f"{command}: an error response without a message:\n{shown(answer)}"
        return message

    # events
    def mark(self) -> int:
        """A position in `events`: wait_event(after=mark) looks only at later events."""
        with self._cond:
            return len(self.events)

    def wait_event(self, name: str, predicate: Callable[[dict], bool] | None = None,
                   timeout: float = TIMEOUT, after: int = 0) -> Message:
        """The first event named `name` (its body matching predicate) that no
        earlier wait_event returned, received at or after position `after`."""
        def find() -> int | None:
            for index in range(after, len(self.events)):
                event = self.events[index]
                if index not in self._taken and event.get("event") == name \
                        and (predicate is None or predicate(event.get("body") or {})):
                    return index
            return None

        with self._cond:
            self._cond.wait_for(lambda: find() is not None or self.closed or bool(self._problems),
                                timeout)
            self._check()
            index = find()
            if index is None:
                raise AssertionError(
                    f"no {name!r} event ({'the connection closed' if self.closed else f'{timeout} s'})"
                    + self.diagnostics())
            self._taken.add(index)
            return self.events[index]

    def output(self, category: str = "stdout") -> str:
        """The text of the output events of one category so far."""
        with self._cond:
            return "".join((e.get("body") or {}).get("output", "") for e in self.events
                           if e.get("event") == "output"
                           and (e.get("body") or {}).get("category", "console") == category)

    def wait_closed(self, timeout: float = TIMEOUT) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self.closed, timeout)
            assert self.closed, f"{self.what} did not close the connection in {timeout} s" \
                + self.diagnostics()
        self._check()

    # ending
    def diagnostics(self) -> str:
        stderr = self._stderr()
        return ("\n--- last messages (-> sent, <- received):\n" + "\n".join(self._log)
                + f"\n--- stderr of {self.what} (last 4000 chars):\n" + stderr[-4000:])

    def close(self) -> None:
        """Closes the connection (and waits for an adapter process to end);
        then fails on any message seen that broke the schema."""
        self._close()
        self._reader.join(timeout=30)
        self._check()


class _Drain:
    """Reads a pipe to its end in a thread, so the other side never blocks on it."""

    def __init__(self, stream: Any) -> None:
        self._chunks: list[bytes] = []
        self._stream = stream
        self._thread = threading.Thread(target=self._run, daemon=True, name="dap-client-drain")
        self._cond = threading.Condition()
        self._thread.start()

    def _run(self) -> None:
        while True:
            data = self._stream.readline()
            if not data:
                break
            with self._cond:
                self._chunks.append(data)
                self._cond.notify_all()
        with self._cond:
            self._chunks.append(b"")
            self._cond.notify_all()

    @property
    def text(self) -> str:
        with self._cond:
            return b"".join(self._chunks).decode(errors="replace")

    def wait_for(self, pattern: "re.Pattern[str]", timeout: float) -> "re.Match[str] | None":
        """The first match of pattern in what was read, waiting for it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                match = pattern.search(b"".join(self._chunks).decode(errors="replace"))
                if match or (self._chunks and self._chunks[-1] == b""):
                    return match
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)


LISTENING = re.compile(r"dyndbg: listening on (?P<host>[\d.]+):(?P<port>\d+)")


class ListeningProgram:
    """`python -m dyndbg --listen 127.0.0.1:0 [options] script args...`: the
    program serving DAP itself; its stdout and stderr are read in threads."""

    def __init__(self, argv: list[str], cwd: Path | str | None = None,
                 env: dict[str, str] | None = None, timeout: float = TIMEOUT) -> None:
        self.proc = warm_start.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd, env=env)
        self._out = _Drain(self.proc.stdout)
        self._err = _Drain(self.proc.stderr)
        match = self._err.wait_for(LISTENING, timeout)
        if match is None:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"no 'dyndbg: listening on HOST:PORT' on stderr of {argv}:\n"
                                 f"{self.stderr[-4000:]}\nstdout:\n{self.stdout[-2000:]}")
        self.host, self.port = match["host"], int(match["port"])

    @property
    def stdout(self) -> str:
        return self._out.text

    @property
    def stderr(self) -> str:
        return self._err.text

    def wait(self, timeout: float = TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the program did not end in {timeout} s:\n{self.stderr[-4000:]}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# What VS Code sends (its debugSession.ts), replayed by the tests.
VSCODE_INITIALIZE = {
    "clientID": "vscode", "clientName": "Visual Studio Code", "adapterID": "dyndbg",
    "locale": "en", "linesStartAt1": True, "columnsStartAt1": True, "pathFormat": "path",
    "supportsVariableType": True, "supportsVariablePaging": True,
    "supportsRunInTerminalRequest": True, "supportsMemoryReferences": True,
    "supportsProgressReporting": True, "supportsInvalidatedEvent": True,
    "supportsMemoryEvent": True, "supportsArgsCanBeInterpretedByShell": True,
    "supportsStartDebuggingRequest": True, "supportsANSIStyling": True,
}
