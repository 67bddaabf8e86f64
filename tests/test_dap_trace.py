"""Stops while dynamo compiles, through the Debug Adapter Protocol: `launch`
with "catchTrace" (the CLI's --catch-trace) stops as dynamo starts tracing a
matching function; the stack trace is dynamo's inlining stack at the user's
lines, the scopes its symbolic stack and locals, and next/stepIn/stepOut/
continue step dynamo's trace (tests/dap_client.py checks every message
against DAP's schema).

Lines are found in the sample's source by their text, and the resume
function's name by pattern: both differ between torch releases.
"""
from __future__ import annotations

import re
import time

import pytest

from dap_client import TIMEOUT
from dap_session import adapter_session, Dap
from harness import ROOT, SAMPLES, run_plain

SYMBOLIC = SAMPLES / "symbolic_trace.py"
CATCH = "torch_dynamo_resume_in_f*"
RESUME_FRAME = re.compile(r"torch_dynamo_resume_in_f_at_\d+ \[compile \d+/\d+\]")
COMPILE_TIME = "compile time: "


def line_of(text: str) -> int:
    """The sample's one line holding `text`."""
    found = [n for n, line in enumerate(SYMBOLIC.read_text().splitlines(), 1) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


@pytest.fixture
def dap():
    with adapter_session() as session:
        yield session


def launch_catching(dap: Dap, pattern: str) -> None:
    dap.start("launch", {"program": str(SYMBOLIC), "cwd": str(ROOT), "args": [],
                         "stopOnEntry": False, "catchTrace": pattern})


def scope_values(dap: Dap, frame_id: int) -> dict[str, list[tuple[str, str, str]]]:
    """Each scope's variables: (name, value, type)."""
    scopes = dap.client.ok("scopes", {"frameId": frame_id})["scopes"]
    return {scope["name"]: [(v["name"], v["value"], v.get("type", "")) for v in dap.client.ok(
        "variables", {"variablesReference": scope["variablesReference"]})["variables"]]
        for scope in scopes}


def next_stop_or_end(dap: Dap, after: int) -> dict | None:
    """The body of the next `stopped` event after position `after`, or None
    where the program exits first."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        for event in list(dap.client.events[after:]):
            if event["event"] == "stopped":
                return dap.stopped(after=after)
            if event["event"] == "exited":
                return None
        time.sleep(0.02)
    raise AssertionError("neither a stop nor the program's end" + dap.client.diagnostics())


def test_a_compile_time_stop_steps_dynamo_through_dap(dap):
    plain = run_plain(SYMBOLIC)
    assert plain.returncode == 0, plain
    launch_catching(dap, CATCH)

    # Dynamo starts tracing the resume function after the first graph break.
    stop = dap.stopped(reason="breakpoint")
    assert re.match(re.escape(COMPILE_TIME) + r"\[compile \d+/0\] dynamo starts tracing "
                    r"torch_dynamo_resume_in_f_at_", stop["description"]), stop
    [top] = dap.frames()
    assert RESUME_FRAME.fullmatch(top["name"]), top
    assert top["source"]["path"] == str(SYMBOLIC), top
    assert top["line"] == line_of('print("first graph break")'), top
    assert "first graph break" in dap.client.output("stdout")   # f's first part has run
    assert set(scope_values(dap, top["id"])) >= {"Symbolic stack", "Symbolic locals"}
    # The debug console runs the prompt's compile-time commands.
    assert "torch_dynamo_resume_in_f_at_" in dap.repl("where", top["id"])
    assert "moves the program" in dap.client.error("evaluate", {"expression": "c",
                                                                "context": "repl"})
    # What needs generated code says why, without a traceback.
    for command, arguments in (("disassemble", {"memoryReference": "0x100000",
                                                "instructionCount": 1}),
                               ("stepBack", {"threadId": dap.thread}),
                               ("dyndbg/cache", {})):
        message = dap.client.error(command, arguments)
        assert "compil" in message and "Traceback" not in message, (command, message)

    # next (by line) moves to the line calling scale, past the resume prologue.
    call_line = line_of("b = scale(a, 2)")
    for _ in range(10):
        stop = dap.step("next")
        assert stop["reason"] == "step" and stop["description"].startswith(COMPILE_TIME), stop
        if dap.top()["line"] == call_line:
            break
    assert dap.top()["line"] == call_line, dap.frames()

    # stepIn goes into scale, which dynamo inlines: two levels.
    dap.step("stepIn")
    inner, outer = dap.frames()
    assert inner["name"].startswith("scale [compile ") and "inlined" in inner["name"], inner
    assert inner["line"] == line_of("return t * k"), inner
    assert RESUME_FRAME.fullmatch(outer["name"]) and outer["line"] == call_line, outer
    names = [name for name, _, _ in scope_values(dap, inner["id"])["Symbolic locals"]]
    assert names == ["t", "k"], names

    # stepOut: back in the resume function, scale's product on the symbolic stack.
    dap.step("stepOut")
    [top] = dap.frames()
    assert RESUME_FRAME.fullmatch(top["name"]) and top["line"] == call_line, top
    scopes = scope_values(dap, top["id"])
    assert any(kind == "TensorVariable" and "TensorVariable" in value and "f32[4]" in value
               for _, value, kind in scopes["Symbolic stack"]), scopes["Symbolic stack"]
    assert "a" in [name for name, _, _ in scopes["Symbolic locals"]], scopes
    watched = dap.client.ok("evaluate", {"expression": "a", "context": "watch",
                                         "frameId": top["id"]})
    assert "f32[4]" in watched["result"], watched

    # continue: every later stop is at compile time, then the program ends as without dyndbg.
    for _ in range(10):
        mark = dap.client.mark()
        dap.client.ok("continue", {"threadId": dap.thread})
        stop = next_stop_or_end(dap, mark)
        if stop is None:
            break
        assert stop["description"].startswith(COMPILE_TIME), stop
    dap.wait_end(0)
    assert dap.client.output("stdout") == plain.stdout


def test_a_bad_catch_trace_fails_the_launch(dap):
    dap.initialize()
    message = dap.client.error("launch", {"program": str(SYMBOLIC), "cwd": str(ROOT),
                                          "catchTrace": ["f"]})
    assert "catchTrace" in message, message
