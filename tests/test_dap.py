"""The DAP front end end to end (issue 24, tier 1): `python -m dyndbg.dap` over
stdio, and `python -m dyndbg --listen` over TCP, driven by tests/dap_client.py
as VS Code drives an adapter (its `initialize` arguments, `stackTrace` with
levels 20, `disassemble` as (-200, 400), (-50, 100), (0, 1), `next` by
instruction). Every message both ways is checked against DAP's schema.

What the debugger shows through DAP is compared with what the CLI prints at
the same stop (`python -m dyndbg` with commands on stdin; tests/dap_session.py),
never with values written here: instructions are named by what they are, not
by index.
"""
from __future__ import annotations

import os
import sys
import time

import pytest

from harness import ROOT, child_env, run_dyndbg, run_plain
from dap_client import DapClient, ListeningProgram
from dap_session import (DESCRIBED, adapter_session, EXIT_CODE, GENERATED, GRAPH_BREAK, LOW_BITS, RESUME, Dap,
                         cli_steps, dap_stop, parse_stack, same_place, same_stack)
from transcript import segments

LOOP = ROOT / "tests" / "programs" / "dap_loop.py"

BOOLEAN_CAPABILITIES = [
    "supportsConfigurationDoneRequest", "supportsFunctionBreakpoints",
    "supportsConditionalBreakpoints", "supportsHitConditionalBreakpoints",
    "supportsDisassembleRequest", "supportsSteppingGranularity", "supportsInstructionBreakpoints",
    "supportsExceptionInfoRequest", "supportsLoadedSourcesRequest", "supportsEvaluateForHovers",
    "supportsStepBack", "supportsTerminateRequest"]


@pytest.fixture
def dap():
    with adapter_session() as session:
        yield session


# -- the tests ----------------------------------------------------------------------

def test_launch_stops_on_entry_with_the_stack_the_cli_shows(dap, tmp_path):
    caps = dap.initialize()
    for name in BOOLEAN_CAPABILITIES:
        assert caps.get(name) is True, f"{name}: {caps.get(name)!r}"
    filters = {f["filter"]: f.get("default", False) for f in caps["exceptionBreakpointFilters"]}
    assert filters == {"stepped": True, "raised": False, "postMortem": False, "backward": False,
                       "nan": False}, caps
    dap.start("launch", {"program": str(GRAPH_BREAK), "cwd": str(ROOT), "stopOnEntry": True})
    stop = dap.stopped(reason="entry")
    assert stop["threadId"] == 1 and stop.get("allThreadsStopped", False) is False, stop
    assert stop["description"].startswith("f [0/0]"), stop
    threads = dap.client.ok("threads")["threads"]
    assert any(t["id"] == 1 for t in threads), threads
    trace = dap.client.ok("stackTrace", {"threadId": 1, "startFrame": 0, "levels": 20})
    frames = trace["stackFrames"]
    assert trace.get("totalFrames", 0) >= len(frames) >= 2, trace
    assert GENERATED.fullmatch(frames[0]["name"]) and "presentationHint" not in frames[0], frames
    # below it, the module calling f and torch's wrapper: ordinary Python, shown subtle
    plain_frames = [f for f in frames if not GENERATED.fullmatch(f["name"])]
    assert plain_frames and all(f.get("presentationHint") == "subtle" for f in plain_frames), frames
    [second] = dap.client.ok("stackTrace", {"threadId": 1, "startFrame": 1, "levels": 1})["stackFrames"]
    assert (second["name"], second["line"]) == (frames[1]["name"], frames[1]["line"]), (second, frames)

    # The CLI at the same stops: entry, then two instructions on (a NULL slot
    # and the graph's forward function on the stack).
    cli = cli_steps(["s", "s"], tmp_path)
    for step, expected in enumerate(cli):
        if step:
            dap.step("stepIn", "instruction")
        got = dap_stop(dap)
        assert same_place(got, expected), (step, got, expected)
        assert same_stack(got["stack"], expected["stack"], True), (step, got, expected)
        # ... and `stack` in the debug console of the same process, exactly.
        frame = dap.top()
        console = dap.repl("stack", frame["id"]).splitlines()
        assert same_stack(got["stack"], parse_stack(console), False), (got["stack"], console)
    assert frame["name"] == "f [0/0]" and len(got["stack"]) >= 2, (frame, got)


def test_the_editor_shows_the_free_variables_among_the_inputs_at_entry(dap):
    """The DAP view of the same inputs: a functools.wraps wrapper's arguments
    and the closure's `func` its guards read."""
    program = ROOT / "tests" / "corpus" / "closure_decorators.py"
    dap.start("launch", {"program": str(program), "cwd": str(ROOT), "stopOnEntry": True})
    dap.stopped(reason="entry")
    frame = dap.top()
    scopes = dap.client.ok("scopes", {"frameId": frame["id"]})["scopes"]
    [inputs] = [s for s in scopes if s["name"] == "Inputs at entry"]
    names = {v["name"] for v in dap.client.ok(
        "variables", {"variablesReference": inputs["variablesReference"]})["variables"]}
    assert names == {"args", "scale", "kwargs", "func"}, names
    dap.disconnect()


def test_a_null_slot_says_NULL_as_stack_does(dap):
    """The Value stack scope shows a NULL slot as `stack` prints it: `<NULL>`."""
    dap.launch(GRAPH_BREAK)
    dap.stopped(reason="entry")
    for _ in range(10):
        frame = dap.top()
        console = parse_stack(dap.repl("stack", frame["id"]).splitlines())
        nulls = [i for i, slot in enumerate(console) if slot == ("", "<NULL>")]
        if nulls:
            break
        dap.step("stepIn", "instruction")
    assert nulls, "no NULL slot in 10 instructions"
    slots = dap.value_stack(frame["id"])
    assert [slots[i][1] for i in nulls] == ["<NULL>"] * len(nulls), (slots, console)


def test_disassembly_around_the_instruction_pointer(dap):
    dap.launch(GRAPH_BREAK)
    dap.stopped(reason="entry")
    stop = dap.step("next", "instruction")   # not the first instruction: some before it too
    top = dap.top()
    ip = top["instructionPointerReference"]
    assert int(ip, 0) > LOW_BITS, ip
    # the stop's description (dyndbg's stop line) names the instruction at the IP
    described = DESCRIBED.search(stop["description"])
    assert described and int(described["offset"]) == int(ip, 0) & LOW_BITS, (stop, ip)
    assert dap.opname(ip) == described["opname"], (stop, ip)
    for before, count in ((-200, 400), (-50, 100), (0, 1)):
        entries = dap.disassemble(ip, before, count)
        assert len(entries) == count, (before, count, len(entries))
        addresses = [e["address"] for e in entries]
        numbers = [int(a, 0) for a in addresses]
        assert numbers == sorted(set(numbers)), (before, count, addresses)
        assert entries[-before]["address"] == ip, (before, entries[-before])
        assert entries[-before].get("presentationHint") != "invalid", entries[-before]
        valid = [e for e in entries if e.get("presentationHint") != "invalid"]
        assert valid[0].get("line") and valid[0]["location"]["path"] == str(GRAPH_BREAK), valid[0]
        # the padding lies outside the code, the real instructions are one block
        hints = ["invalid" if e.get("presentationHint") == "invalid" else "ok" for e in entries]
        assert "".join(h[0] for h in hints).strip("i") == "o" * len(valid), hints
    # The line each entry is on: the one the frame says for the IP.
    around = dap.disassemble(ip, -50, 100)
    line = None
    for entry in around:
        line = entry.get("line", line)
        if entry["address"] == ip:
            assert line == top["line"], (entry, top)


def test_next_by_line_and_by_instruction(dap):
    dap.launch(GRAPH_BREAK)
    dap.stopped(reason="entry")
    before = dap.top()
    following = dap.disassemble(before["instructionPointerReference"], 0, 2)[1]
    stop = dap.step("next", "instruction")
    assert stop["reason"] == "step", stop
    after = dap.top()
    assert after["name"] == before["name"] and \
        after["instructionPointerReference"] == following["address"], (before, following, after)

    stop = dap.step("next")              # F10: the next user line
    assert stop["reason"] == "step", stop
    moved = dap.top()
    assert GENERATED.fullmatch(moved["name"]), moved
    assert moved["line"] != after["line"], (after, moved)
    assert moved["source"]["path"] == str(GRAPH_BREAK), moved
    dap.disconnect()
    dap.wait_end(0)


def test_pending_function_breakpoint_binds_and_stops(dap):
    answer = dap.launch(GRAPH_BREAK, stop_on_entry=False,
                        function_breakpoints=[{"name": "torch_dynamo_resume_in_*"}])
    assert answer is not None
    [pending] = answer["breakpoints"]
    assert pending["verified"] is False and pending.get("message"), pending
    assert isinstance(pending.get("id"), int), pending
    bound = dap.client.wait_event("breakpoint", lambda b: b["breakpoint"].get("id") == pending["id"])
    assert bound["body"]["reason"] == "changed" and bound["body"]["breakpoint"]["verified"] is True, bound
    stop = dap.stopped(reason="function breakpoint")
    assert pending["id"] in stop.get("hitBreakpointIds", []), stop
    assert dap.top()["name"] == RESUME, dap.frames()
    # the binding came before the stop, from the same compile
    names = [e["event"] for e in dap.client.events]
    assert names.index("breakpoint") < names.index("stopped"), names
    dap.client.ok("continue", {"threadId": dap.thread})
    # the second call runs the cached resume function: the breakpoint holds there too
    stop = dap.stopped(reason="function breakpoint")
    dap.disconnect()
    dap.wait_end(0)


def test_step_back_shows_the_stack_as_it_was(dap):
    dap.launch(GRAPH_BREAK, record=True)
    dap.stopped(reason="entry")
    seen = []
    for _ in range(4):
        top = dap.top()
        seen.append((top["instructionPointerReference"], dap.value_stack(top["id"])))
        dap.step("next", "instruction")
    assert any(stack for _, stack in seen), seen
    for ip, stack in reversed(seen):
        stop = dap.step("stepBack", "instruction")
        assert stop["reason"] == "step", stop
        top = dap.top()
        assert top["instructionPointerReference"] == ip, (top, ip)
        assert dap.value_stack(top["id"]) == stack, (ip, stack)
    dap.disconnect()
    dap.wait_end(0)


def test_step_back_without_recording_is_refused(dap):
    dap.launch(GRAPH_BREAK)
    dap.stopped(reason="entry")
    before = dap.top()
    message = dap.client.error("stepBack", {"threadId": dap.thread})
    assert "record" in message, message
    assert dap.top()["instructionPointerReference"] == before["instructionPointerReference"]
    dap.disconnect()
    dap.wait_end(0)


def test_disconnect_lets_the_program_finish(dap):
    plain = run_plain(GRAPH_BREAK)
    dap.launch(GRAPH_BREAK)
    dap.stopped(reason="entry")
    dap.disconnect()
    dap.wait_end(plain.returncode)
    assert plain.returncode == 0 and "call 1: " in plain.stdout
    assert dap.client.output("stdout") == plain.stdout


def test_the_exit_status_is_the_programs(dap):
    plain = run_plain(EXIT_CODE)
    assert plain.returncode == 3
    dap.launch(EXIT_CODE, stop_on_entry=False)
    dap.wait_end(3)
    assert dap.client.output("stdout") == plain.stdout
    assert not any(e["event"] == "stopped" for e in dap.client.events), dap.client.events


def test_bad_requests_get_an_error_and_the_session_goes_on(dap):
    plain = run_plain(GRAPH_BREAK)
    dap.initialize()
    # a launch that cannot start: an error, and the adapter takes the next one
    for arguments in ({"program": str(GRAPH_BREAK), "env": {"A": "b\u0000"}},
                      {"program": str(GRAPH_BREAK), "cwd": 5}, {"program": "no/such.py"}):
        message = dap.client.error("launch", {"name": "x", "type": "dyndbg",
                                              "request": "launch", **arguments})
        assert message.strip() and "\n" not in message.strip(), message
    dap.launch(GRAPH_BREAK)
    dap.stopped(reason="entry")
    frame = dap.top()
    # dyndbg's views take the console's words after the command, nothing that moves
    text = dap.client.ok("dyndbg/cache", {"args": ";; q"})["text"]
    assert "*** 'q' moves the program" in text, text
    stale = dap.value_stack_ref(frame["id"])
    dap.client.ok("variables", {"variablesReference": stale})
    dap.client.error("fooBar", {"x": 1})
    dap.client.error("disassemble", {"memoryReference": "garbage", "instructionCount": 10})
    dap.client.error("disassemble", {"memoryReference": frame["instructionPointerReference"],
                                     "offset": 0}, schema_invalid=True)
    assert dap.top() == frame

    dap.step("next", "instruction")
    dap.client.error("variables", {"variablesReference": stale})
    # the session goes on: requests work, the program is unchanged
    dap.step("next", "instruction")
    top = dap.top()
    assert dap.value_stack(top["id"]) is not None
    dap.disconnect()
    dap.wait_end(0)
    assert dap.client.output("stdout") == plain.stdout


def test_a_request_before_launch_leaves_the_answers_matched(dap):
    """A request the adapter answers itself before `launch` (here `threads`,
    before any program) must not shift what later responses answer: each
    response's request_seq is its own request's seq (the client fails on a
    second or mismatched answer)."""
    dap.initialize()
    dap.client.request("threads")          # answered, as an error or not
    dap.launch(GRAPH_BREAK)
    dap.stopped(reason="entry")
    assert GENERATED.fullmatch(dap.top()["name"])
    dap.disconnect()
    dap.wait_end(0)


def test_pause_stops_a_running_program(dap, tmp_path):
    """`pause` while generated code runs in a loop: an output event says where
    it will stop, then a stop with reason "pause" in that code; after
    `disconnect` the program ends as it would have."""
    stop_file = tmp_path / "stop"
    dap.initialize()
    dap.start("launch", {"program": str(LOOP), "args": [str(stop_file)], "cwd": str(ROOT),
                         "stopOnEntry": False})
    dap.client.wait_event("output", lambda body: "looping" in body.get("output", ""))
    mark = dap.client.mark()
    dap.client.ok("pause", {"threadId": 1})
    stop = dap.stopped(after=mark, reason="pause")
    said = [e for e in dap.client.events[mark:]
            if e["event"] == "output" and e["body"].get("category", "console") == "console"]
    assert said, dap.client.events[mark:]
    assert dap.top()["name"] == "halve [0/0]", (stop, dap.frames())
    stop_file.touch()
    dap.disconnect()
    dap.wait_end(0)
    assert dap.client.output("stdout") == "looping\ndone torch.Size([3])\n"


def test_debug_console_inspects_and_refuses_to_move(dap, tmp_path):
    cli = run_dyndbg(GRAPH_BREAK, ["guards"], tmp_path)
    [guards] = [s.output for s in segments(cli.transcript) if s.command == "guards"]
    dap.launch(GRAPH_BREAK)
    dap.stopped(reason="entry")
    frame = dap.top()
    text = dap.repl("guards", frame["id"]).splitlines()
    assert text[0] == guards[0] and len(text) == len(guards), (text, guards)
    mark = dap.client.mark()
    for command in ("c", "n", "s", "q", "b f"):
        message = dap.client.error("evaluate", {"expression": command, "context": "repl",
                                                "frameId": frame["id"]})
        assert "\n" not in message.strip(), message
    # ... after `;;` and through an alias too: one line says so, the rest runs
    assert dap.repl("alias go q", frame["id"]) == ""
    for line, refused, ran in (("stack ;; q", "q", ["value stack"]), ("go", "q", []),
                               ("p 11 ;; b f ;; p 22", "b", ["11", "22"])):
        text = dap.repl(line, frame["id"]).splitlines()
        errors = [t for t in text if t.startswith("*** ")]
        assert len(errors) == 1 and errors[0].startswith(f"*** '{refused}'"), text
        assert all(any(t.startswith(r) for t in text) for r in ran), text
    assert dap.top()["instructionPointerReference"] == frame["instructionPointerReference"]
    assert not [e for e in dap.client.events[mark:] if e["event"] in ("stopped", "continued")]
    dap.disconnect()
    dap.wait_end(0)


def test_stepping_by_instruction_visits_what_the_cli_visits(dap, tmp_path):
    """stepIn by instruction through DAP = `si` at the prompt: the same frames,
    offsets, instructions and value stacks, into the resume function."""
    dap.launch(GRAPH_BREAK)
    dap.stopped(reason="entry")
    visited = [dap_stop(dap)]
    while len(visited) < 400:
        dap.step("stepIn", "instruction")
        visited.append(dap_stop(dap))
        if [v["label"] for v in visited].count(RESUME) >= 8:
            break
    assert RESUME in [v["label"] for v in visited], [v["label"] for v in visited][-5:]
    cli = cli_steps(["si"] * (len(visited) - 1), tmp_path)   # (`s` enters graphs; DAP not yet)
    for step, (got, expected) in enumerate(zip(visited, cli)):
        assert same_place(got, expected), (step, got, expected)
        assert same_stack(got["stack"], expected["stack"], True), \
            (step, got, expected)


@pytest.mark.parametrize("through", ["direct", "adapter"])
def test_attach_over_tcp(through):
    """`python -m dyndbg --listen 127.0.0.1:0 --wait-for-client`: a client
    connects (directly, as VS Code's server descriptor does, or through the
    stdio adapter's attach with `connect`), sets a breakpoint, runs to it and
    leaves; the program ends as it would alone."""
    plain = run_plain(GRAPH_BREAK)
    program = ListeningProgram([sys.executable, "-m", "dyndbg", "--listen", "127.0.0.1:0",
                                "--wait-for-client", str(GRAPH_BREAK)], cwd=ROOT, env=child_env())
    client = None
    try:
        assert program.host == "127.0.0.1" and program.port > 0
        if through == "direct":
            client = DapClient.connect(program.port, stderr=lambda: program.stderr)
        else:
            client = DapClient.start_adapter(cwd=ROOT, env=child_env())
        dap = Dap(client)
        answer = dap.start("attach", {"name": "dyndbg", "type": "dyndbg", "request": "attach",
                                      "connect": {"host": "127.0.0.1", "port": program.port}},
                           function_breakpoints=[{"name": "torch_dynamo_resume_in_*"}])
        assert answer is not None and len(answer["breakpoints"]) == 1, answer
        dap.stopped(reason="function breakpoint")
        assert dap.top()["name"] == RESUME
        dap.disconnect()
        assert program.wait() == plain.returncode, program.stderr[-3000:]
        assert program.stdout == plain.stdout
        client.close()
    finally:
        program.kill()
        process = getattr(client, "process", None)
        if process is not None and process.poll() is None:
            process.kill()


LEFT_WHILE_STOPPED = '''
import torch, dyndbg
from dyndbg import attach

@torch.compile(backend="eager")
def f(x):
    return x + 1

dyndbg.listen(0)
dyndbg.wait_for_client()
print(f(torch.zeros(2)).tolist(), flush=True)   # stops at entry; the client leaves there
print("attached:", attach.current() is not None, flush=True)
print(f(torch.ones(2)).tolist())
'''


def test_a_client_that_leaves_while_stopped_detaches_the_debugger(tmp_path):
    """An editor that closes the connection at a stop (no disconnect): the
    program runs on without the debugger, as after disconnect."""
    script = tmp_path / "left.py"
    script.write_text(LEFT_WHILE_STOPPED)
    program = ListeningProgram([sys.executable, str(script)], cwd=ROOT, env=child_env())
    client = None
    try:
        client = DapClient.connect(program.port, stderr=lambda: program.stderr)
        dap = Dap(client)
        dap.start("attach", {"name": "dyndbg", "type": "dyndbg", "request": "attach",
                             "stopOnEntry": True})
        assert dap.stopped(reason="entry")["description"].startswith("f [0/0]")
        client.close()
        assert program.wait() == 0, program.stderr[-3000:]
        assert program.stdout == "[1.0, 1.0]\nattached: False\n[2.0, 2.0]\n", program.stderr[-3000:]
    finally:
        program.kill()


OUTLIVES_ADAPTER = '''
import os, sys, time, torch

@torch.compile(backend="eager")
def f(x):
    return x + 1

x = torch.zeros(2)
print("started", flush=True)
with open(sys.argv[2] + ".pid", "w") as out:
    out.write(str(os.getpid()))
deadline = time.monotonic() + 120
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    x = f(x)
print("done", flush=True)           # the adapter, and the pipe it read, are gone
with open(sys.argv[2], "w") as out:
    out.write(f"finished {x.shape}")
'''


def test_a_program_left_by_disconnect_outlives_its_adapter(dap, tmp_path):
    """disconnect detaches: the program runs on to its end even when the
    editor then kills the adapter (as VS Code does at the end of a session),
    though the pipes that carried its output are gone."""
    script, go, result = tmp_path / "outlives.py", tmp_path / "go", tmp_path / "result"
    script.write_text(OUTLIVES_ADAPTER)
    dap.start("launch", {"name": "x", "type": "dyndbg", "request": "launch",
                         "program": str(script), "args": [str(go), str(result)],
                         "cwd": str(tmp_path), "stopOnEntry": True})
    dap.stopped(reason="entry")
    dap.disconnect()
    adapter = dap.client.process   # type: ignore[attr-defined]
    adapter.kill()
    adapter.wait()
    # The program is not our child: its files and /proc tell what it does.
    # It sees the adapter leave (its output then goes to /dev/null); a print
    # in the moment before that would still meet the broken pipe.
    output = f"/proc/{(tmp_path / 'result.pid').read_text()}/fd/1"
    assert _waited_for(lambda: os.readlink(output) == os.devnull), os.readlink(output)
    go.touch()
    # the file exists before the program's write reaches it: wait for its text
    assert _waited_for(lambda: result.exists() and result.read_text()), \
        "the program did not finish"
    assert result.read_text() == "finished torch.Size([2])"


def _waited_for(condition, timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
