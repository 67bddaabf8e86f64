"""dyndbg/dap/protocol.py, pure: the framing the adapter and the server read
and write (the tests' own client has its own, tests/dap_wire.py)."""
from __future__ import annotations

import io

import pytest

from dyndbg.dap.protocol import Channel, ProtocolError, encode, read_message


def _stream(data: bytes) -> io.BufferedReader:
    return io.BufferedReader(io.BytesIO(data))


def test_messages_are_read_in_turn_then_none_at_the_end() -> None:
    first, second = {"seq": 1, "type": "request", "command": "threads"}, {"seq": 2, "x": "∑"}
    stream = _stream(b"\r\n" + encode(first) + encode(second))   # a stray blank line first
    assert read_message(stream) == first
    assert read_message(stream) == second
    assert read_message(stream) is None


def test_a_message_cut_short_is_the_end() -> None:
    assert read_message(_stream(encode({"seq": 1})[:-1])) is None


@pytest.mark.parametrize("data", [
    b"Content-Length: 2\r\n\r\n[]",                   # not an object
    b"Content-Length: 3\r\n\r\n{x}",                  # not JSON
    b"Content-Length: 2\r\n\r\n\xff\xfe",             # not UTF-8
    b"Content-Length: two\r\n\r\n{}",
    b"Content-Length: -1\r\n\r\n{}",
    b"Content-Length: 999999999999\r\n\r\n{}",        # never allocated
    b"x" * 20000,                                     # never a header end
])
def test_garbage_is_a_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        read_message(_stream(data))


def test_send_numbers_messages_and_forward_keeps_the_clients_seq() -> None:
    out = io.BytesIO()
    channel = Channel(_stream(b""), out)
    channel.send({"type": "event", "event": "x"})
    channel.forward({"seq": 41, "type": "request", "command": "next"})
    channel.respond({"seq": 7, "command": "threads"}, {"threads": []})
    written = _stream(out.getvalue())
    seqs = [(m["seq"], m.get("request_seq")) for m in iter(lambda: read_message(written), None)]
    assert seqs == [(1, None), (41, None), (2, 7)]
