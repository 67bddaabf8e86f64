"""tests/dap_wire.py, the pure part of the tests' DAP client: the framing of a
byte stream and the schema each message is checked against. No torch, no
subprocess."""
from __future__ import annotations

import json

import pytest

from dap_client import VSCODE_INITIALIZE
from dap_wire import (FrameParser, FramingError, SchemaViolation, encode, schema_errors, schema_name,
                      validate)


def frame(body: str, headers: str = "") -> bytes:
    data = body.encode("utf-8")
    return f"{headers}Content-Length: {len(data)}\r\n\r\n".encode() + data


def test_frames_split_anywhere_give_the_same_messages():
    messages = [{"seq": 1, "type": "event", "event": "output", "body": {"output": "é ∑ 😀\r\n\r\n"}},
                {"seq": 2, "type": "response", "request_seq": 1, "success": True, "command": "threads"}]
    stream = b"".join(encode(m) for m in messages)
    for cut in range(1, len(stream)):
        parser = FrameParser()
        got = parser.feed(stream[:cut]) + parser.feed(stream[cut:])
        assert got == messages, cut
        assert parser.pending == b""
    parser = FrameParser()
    assert [m for byte in range(len(stream)) for m in parser.feed(stream[byte:byte + 1])] == messages


def test_content_length_counts_bytes_not_characters():
    body = json.dumps({"seq": 1, "type": "event", "event": "x", "body": "ü" * 3}, ensure_ascii=False)
    assert len(body.encode()) > len(body)
    assert FrameParser().feed(frame(body) + frame(body)) == [json.loads(body)] * 2


def test_other_headers_and_header_case_are_accepted():
    body = '{"seq": 1, "type": "event", "event": "x"}'
    data = b"content-length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" \
        % len(body) + body.encode()
    assert FrameParser().feed(data) == [json.loads(body)]


def test_an_incomplete_message_waits():
    parser = FrameParser()
    data = frame('{"seq": 1, "type": "event", "event": "x"}')
    assert parser.feed(data[:-1]) == []
    assert parser.pending == data[:-1]
    assert parser.feed(data[-1:]) == [{"seq": 1, "type": "event", "event": "x"}]


@pytest.mark.parametrize("data", [
    b"Content-Length: 2\r\n\r\n[]",                  # not an object
    b"Content-Length: 3\r\n\r\n{x}",                 # not JSON
    b"Content-Length: 2\r\n\r\n\xff\xfe",            # not UTF-8
    b"Content-Length: two\r\n\r\n{}",
    b"Content-Type: x\r\n\r\n{}",                    # no length
    b"Content-Length 2\r\n\r\n{}",                   # no colon
    b"x" * 5000,                                     # never a header end
])
def test_framing_errors_are_failures(data):
    with pytest.raises(FramingError):
        FrameParser().feed(data)


def test_encode_is_what_the_parser_reads():
    message = {"seq": 3, "type": "request", "command": "evaluate",
               "arguments": {"expression": "p '∑'", "context": "repl"}}
    data = encode(message)
    assert data.startswith(b"Content-Length: %d\r\n\r\n" % (len(data) - data.index(b"\r\n\r\n") - 4))
    assert FrameParser().feed(data) == [message]


@pytest.mark.parametrize("message, name", [
    ({"type": "request", "command": "stackTrace"}, "StackTraceRequest"),
    ({"type": "request", "command": "configurationDone"}, "ConfigurationDoneRequest"),
    ({"type": "request", "command": "dyndbg/guards"}, "Request"),
    ({"type": "request", "command": "fooBar"}, "Request"),
    ({"type": "response", "command": "disassemble", "success": True}, "DisassembleResponse"),
    ({"type": "response", "command": "disassemble", "success": False}, "ErrorResponse"),
    ({"type": "response", "command": "dyndbg/cache", "success": True}, "Response"),
    ({"type": "response", "command": "fooBar", "success": False}, "ErrorResponse"),
    ({"type": "event", "event": "stopped"}, "StoppedEvent"),
    ({"type": "event", "event": "loadedSource"}, "LoadedSourceEvent"),
    ({"type": "event", "event": "dyndbg/compile"}, "Event"),
    ({"type": "event"}, "Event"),
    ({"type": "gossip"}, "ProtocolMessage"),
])
def test_schema_names(message, name):
    assert schema_name(message) == name


def test_schema_name_needs_the_definition_to_exist():
    assert schema_name({"type": "request", "command": "stackTrace"}, known=["Request"]) == "Request"


def test_a_good_disassemble_response_passes_and_a_numeric_address_fails():
    good = {"seq": 5, "type": "response", "request_seq": 4, "success": True, "command": "disassemble",
            "body": {"instructions": [{"address": "0x100002", "instruction": "LOAD_FAST x"},
                                      {"address": "0x100004", "instruction": "",
                                       "presentationHint": "invalid"}]}}
    validate(good, "test")
    bad = json.loads(json.dumps(good))
    bad["body"]["instructions"][0]["address"] = 16
    with pytest.raises(SchemaViolation, match="16 is not of type 'string'"):
        validate(bad, "test")


def test_the_requests_the_tests_send_match_the_schema():
    validate({"seq": 1, "type": "request", "command": "initialize", "arguments": VSCODE_INITIALIZE}, "t")
    validate({"seq": 2, "type": "request", "command": "disassemble",
              "arguments": {"memoryReference": "0x100000", "offset": 0, "instructionOffset": -200,
                            "instructionCount": 400, "resolveSymbols": True}}, "t")
    validate({"seq": 3, "type": "request", "command": "next",
              "arguments": {"threadId": 1, "granularity": "instruction"}}, "t")
    # a malformed disassemble (the bad-request test sends it on purpose)
    assert schema_errors({"seq": 4, "type": "request", "command": "disassemble",
                          "arguments": {"memoryReference": "garbage"}})[1]


@pytest.mark.parametrize("message, fragment", [
    ({"seq": 1, "type": "event", "event": "stopped", "body": {"threadId": 1}}, "'reason' is a required"),
    ({"seq": 1, "type": "event", "event": "stopped", "body": {"reason": "step", "threadId": "1"}},
     "'1' is not of type 'integer'"),
    ({"seq": 1, "type": "response", "request_seq": 1, "success": False, "command": "next",
      "message": "no"}, "'body' is a required"),     # ErrorResponse has a body, {} at least
    ({"seq": 1, "type": "response", "request_seq": 1, "success": True, "command": "stackTrace",
      "body": {}}, "'stackFrames' is a required"),
    ({"seq": 1, "type": "response", "request_seq": 1, "success": True, "command": "dyndbg/guards",
      "body": {"text": "x"}}, None),                   # a custom response: the generic Response
    ({"seq": 1, "type": "event", "event": "dyndbg/compile", "body": {"label": "f [0/0]"}}, None),
    ({"type": "event", "event": "dyndbg/compile"}, "'seq' is a required"),
    ({"seq": 1, "type": "gossip"}, "none of request, response, event"),
])
def test_validation(message, fragment):
    if fragment is None:
        validate(message, "test")
    else:
        with pytest.raises(SchemaViolation, match=fragment):
            validate(message, "test")
