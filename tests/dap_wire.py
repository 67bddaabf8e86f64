"""DAP's wire, as the tests check it: the base protocol's framing
(`Content-Length: N` then N bytes of UTF-8 JSON) and the official schema
(debugProtocol.json, shipped in the debugpy wheel, a test dependency) that
every message must match: `<Command>Request`, `<Command>Response`
(`ErrorResponse` when `success` is false), `<Name>Event`, or the generic
Request/Response/Event for what the schema does not define (dyndbg's
`dyndbg/...` commands and events, unknown commands). No exception list.

Written here, not taken from dyndbg/dap/, so that the tests do not share the
server's reading of the protocol. Pure: no torch, no subprocess
(tests/test_dap_client_unit.py).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

Message = dict


# -- framing (pure) ----------------------------------------------------------

class FramingError(AssertionError):
    """Bytes that are not DAP's base protocol."""


def encode(message: Message) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class FrameParser:
    """Splits a byte stream into messages: a header block (`Content-Length: N`,
    other headers allowed, each line ended by CRLF) and a blank line, then N
    bytes of UTF-8 JSON. Fed any chunks; keeps what is incomplete."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[Message]:
        self._buffer += data
        messages: list[Message] = []
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > 4096 and b"\r\n\r\n" not in self._buffer[:4096]:
                    raise FramingError(f"no header end in {self._buffer[:200]!r}")
                return messages
            length = self._content_length(self._buffer[:end])
            start = end + 4
            if len(self._buffer) - start < length:
                return messages
            body = self._buffer[start:start + length]
            self._buffer = self._buffer[start + length:]
            try:
                message = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as error:
                raise FramingError(f"a body that is not UTF-8 JSON ({error}): {body[:300]!r}") from None
            if not isinstance(message, dict):
                raise FramingError(f"a message that is not a JSON object: {body[:300]!r}")
            messages.append(message)

    @property
    def pending(self) -> bytes:
        """Bytes received that do not make a whole message yet."""
        return self._buffer

    @staticmethod
    def _content_length(header: bytes) -> int:
        length = None
        for line in header.split(b"\r\n"):
            name, colon, value = line.partition(b":")
            if not colon:
                raise FramingError(f"a header line without a colon: {line[:200]!r} in {header[:300]!r}")
            if name.strip().lower() == b"content-length":
                if not value.strip().isdigit():
                    raise FramingError(f"bad Content-Length {value.strip()[:50]!r}")
                length = int(value.strip())
        if length is None:
            raise FramingError(f"no Content-Length in the header {header[:300]!r}")
        return length


# -- the schema --------------------------------------------------------------

class SchemaViolation(AssertionError):
    """A message that does not match debugProtocol.json."""


def schema_path() -> Path:
    import debugpy   # a test dependency (pyproject's test extras); only its data file is used
    return (Path(debugpy.__file__).parent / "_vendored" / "pydevd" / "_pydevd_bundle"
            / "_debug_adapter" / "debugProtocol.json")


_DEFINITIONS: list[dict] = []
_VALIDATORS: dict[str, Any] = {}


def definitions() -> dict:
    if not _DEFINITIONS:
        _DEFINITIONS.append(json.loads(schema_path().read_text())["definitions"])
    return _DEFINITIONS[0]


def schema_name(message: Message, known: Iterable[str] | None = None) -> str:
    """The definition a message must match: `stackTrace` requests are
    StackTraceRequest, their answers StackTraceResponse (ErrorResponse when
    success is false), `stopped` events StoppedEvent; what the schema does not
    define (custom `dyndbg/...` ones, unknown commands) the generic Request,
    Response or Event. A message of no known type is checked as a
    ProtocolMessage (which it then fails: see validate)."""
    names = set(definitions() if known is None else known)
    kind = message.get("type")
    if kind == "response" and message.get("success") is False:
        return "ErrorResponse"
    suffix = {"request": "Request", "response": "Response", "event": "Event"}.get(kind)  # type: ignore[arg-type]
    if suffix is None:
        return "ProtocolMessage"
    name = message.get("event" if kind == "event" else "command")
    if isinstance(name, str) and name:
        specific = name[0].upper() + name[1:] + suffix
        if specific in names:
            return specific
    return suffix


def schema_errors(message: Message) -> tuple[str, list[str]]:
    """(the definition checked, what is wrong: empty when the message is valid)."""
    from jsonschema import Draft4Validator
    name = schema_name(message)
    if name not in _VALIDATORS:
        _VALIDATORS[name] = Draft4Validator({"$ref": f"#/definitions/{name}",
                                             "definitions": definitions()})
    problems = [f"{'/'.join(map(str, error.absolute_path)) or '(message)'}: {error.message}"
                for error in _VALIDATORS[name].iter_errors(message)]
    if message.get("type") not in ("request", "response", "event"):
        problems.append(f"type {message.get('type')!r} is none of request, response, event")
    return name, problems


def validate(message: Message, direction: str) -> None:
    """Raises SchemaViolation unless the message matches its definition."""
    name, problems = schema_errors(message)
    if problems:
        raise SchemaViolation(f"{direction} message does not match {name} of debugProtocol.json:\n  "
                              + "\n  ".join(problems) + "\n" + shown(message))


def shown(message: Message, limit: int = 4000) -> str:
    text = json.dumps(message, indent=1)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"
