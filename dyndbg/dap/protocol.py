"""DAP's base protocol: `Content-Length: N\\r\\n\\r\\n` then N bytes of UTF-8
JSON, each message numbered by `seq`. Written here rather than taken from a
library: no Python DAP library is both public and maintained, and this is
the whole of it."""
from __future__ import annotations

import json
import threading
from typing import BinaryIO

Message = dict

# A header block or body larger than this is not DAP: stop reading it.
_MAX_HEADER = 8192
_MAX_BODY = 64 << 20


class ProtocolError(Exception):
    """A message that cannot be read (bad framing, not JSON)."""


class RequestError(Exception):
    """A request that cannot be served: its error response's message."""


def read_message(stream: BinaryIO) -> Message | None:
    """The next message, or None at the end of the stream."""
    length: int | None = None
    read = 0
    while True:
        line = stream.readline(_MAX_HEADER)
        if not line:
            return None
        read += len(line)
        if read > _MAX_HEADER:
            raise ProtocolError("header too long")
        text = line.decode("ascii", "replace").strip()
        if not text:
            if length is None:
                continue     # stray blank lines between messages
            break
        name, _, value = text.partition(":")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise ProtocolError(f"bad Content-Length {value.strip()!r}") from None
            if not 0 <= length <= _MAX_BODY:
                raise ProtocolError(f"bad Content-Length {length}")
    body = stream.read(length)
    if body is None or len(body) < length:
        return None
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ProtocolError(f"not a JSON message: {error}") from None
    if not isinstance(message, dict):
        raise ProtocolError("a message must be a JSON object")
    return message


def encode(message: Message) -> bytes:
    body = json.dumps(message, default=str).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Channel:
    """One side of a DAP connection: reads messages, and writes them from
    any thread, numbered in the order they are written."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = threading.Lock()
        self._seq = 0
        self.closed = False

    def read(self) -> Message | None:
        return read_message(self._reader)

    def send(self, message: Message) -> None:
        """Write `message` with the next seq; a closed peer is not an error."""
        self._write(message, renumber=True)

    def forward(self, message: Message) -> None:
        """Write a client's request as it came, its seq kept, so that the
        answers relayed back carry the client's own request_seq."""
        self._write(message, renumber=False)

    def _write(self, message: Message, renumber: bool) -> None:
        with self._lock:
            if self.closed:
                return
            if renumber:
                self._seq += 1
                message["seq"] = self._seq
            try:
                self._writer.write(encode(message))
                self._writer.flush()
            except (OSError, ValueError):
                self.closed = True

    def respond(self, request: Message, body: dict | None = None) -> None:
        response: Message = {"type": "response", "request_seq": request.get("seq", 0),
                             "success": True, "command": str(request.get("command", ""))}
        if body is not None:
            response["body"] = body
        self.send(response)

    def fail(self, request: Message, text: str) -> None:
        """An error response: `message` is what clients show."""
        self.send({"type": "response", "request_seq": request.get("seq", 0), "success": False,
                   "command": str(request.get("command", "")), "message": text,
                   "body": {"error": {"id": 1, "format": text.replace("{", "(")
                            .replace("}", ")"), "showUser": False}}})

    def event(self, name: str, body: dict | None = None) -> None:
        message: Message = {"type": "event", "event": name}
        if body is not None:
            message["body"] = body
        self.send(message)

    def close(self) -> None:
        with self._lock:
            self.closed = True
        for stream in (self._writer, self._reader):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
