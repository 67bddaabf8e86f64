"""The DAP front end end to end (issue 24, tier 1): `python -m dyndbg.dap` over
stdio, and `python -m dyndbg --listen` over TCP, driven by tests/dap_client.py
as VS Code drives an adapter (its `initialize` arguments, `stackTrace` with
levels 20, `disassemble` as (-200, 400), (-50, 100), (0, 1), `next` by
instruction). Every message both ways is checked against DAP's schema.

What the debugger shows through DAP is compared with what the CLI prints at
the same stop (`python -m dyndbg` with commands on stdin), never with values
written here: instructions are named by what they are, not by index.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, _env, run_dyndbg, run_plain
from dap_client import VSCODE_INITIALIZE, DapClient, ListeningProgram
from transcript import PROMPT, STOP, no_traceback, segments

GRAPH_BREAK = SAMPLES / "graph_break.py"
EXIT_CODE = SAMPLES / "exit_code.py"
RESUME = "torch_dynamo_resume_in_f_at_10 [1/0]"
# A generated frame's name as dyndbg labels it: `f [0/0]`.
GENERATED = re.compile(r".+ \[\d+/\d+\]")
LOW_BITS = (1 << 20) - 1   # an address's byte offset (the contract: (serial + 1) << 20 | offset)
# The offset and opname in a stop's description: `f [0/0]  instr 3/118 @26  LOAD_ATTR ...`.
DESCRIBED = re.compile(r"@(?P<offset>\d+)\s+(?P<opname>[A-Z][A-Z0-9_]*)")

BOOLEAN_CAPABILITIES = [
    "supportsConfigurationDoneRequest", "supportsFunctionBreakpoints",
    "supportsConditionalBreakpoints", "supportsHitConditionalBreakpoints",
    "supportsDisassembleRequest", "supportsSteppingGranularity", "supportsInstructionBreakpoints",
    "supportsExceptionInfoRequest", "supportsLoadedSourcesRequest", "supportsEvaluateForHovers",
    "supportsStepBack", "supportsTerminateRequest"]


# -- a session ------------------------------------------------------------------

class Dap:
    """A DapClient with the steps of an editor's session."""

    def __init__(self, client: DapClient) -> None:
        self.client = client
        self.thread = 1
        self.capabilities: dict = {}

    def initialize(self) -> dict:
        self.capabilities = self.client.ok("initialize", VSCODE_INITIALIZE)
        return self.capabilities

    def start(self, command: str, arguments: dict, function_breakpoints: list[dict] | None = None,
              ) -> dict | None:
        """launch/attach as VS Code does: the request, then (after `initialized`)
        the breakpoints and configurationDone. The setFunctionBreakpoints body."""
        if not self.capabilities:
            self.initialize()
        seq = self.client.send_request(command, arguments)
        self.client.wait_event("initialized")
        answer = None
        if function_breakpoints is not None:
            answer = self.client.ok("setFunctionBreakpoints", {"breakpoints": function_breakpoints})
        self.client.ok("setExceptionBreakpoints", {"filters": ["stepped"]})
        self.client.ok("configurationDone")
        reply = self.client.response(seq)
        assert reply["success"] is True, f"{command} failed: {reply.get('message')}" \
            + self.client.diagnostics()
        return answer

    def launch(self, program: Path, *, stop_on_entry: bool = True, record: bool = False,
               function_breakpoints: list[dict] | None = None) -> dict | None:
        arguments = {"name": "dyndbg", "type": "dyndbg", "request": "launch",
                     "program": str(program), "cwd": str(ROOT), "args": [],
                     "stopOnEntry": stop_on_entry}
        if record:
            arguments["record"] = True
        return self.start("launch", arguments, function_breakpoints)

    def stopped(self, after: int = 0, reason: str | None = None) -> dict:
        body = self.client.wait_event("stopped", after=after)["body"]
        if reason is not None:
            assert body["reason"] == reason, body
        self.thread = body["threadId"]
        return body

    def step(self, command: str, granularity: str | None = None) -> dict:
        """A step request, then the stop it comes to (its `stopped` body)."""
        mark = self.client.mark()
        arguments: dict = {"threadId": self.thread}
        if granularity is not None:
            arguments["granularity"] = granularity
        self.client.ok(command, arguments)
        return self.stopped(after=mark)

    def frames(self) -> list[dict]:
        body = self.client.ok("stackTrace", {"threadId": self.thread, "startFrame": 0, "levels": 20})
        assert body["stackFrames"], body
        return body["stackFrames"]

    def top(self) -> dict:
        return self.frames()[0]

    def disassemble(self, address: str, instruction_offset: int, count: int) -> list[dict]:
        body = self.client.ok("disassemble", {"memoryReference": address, "offset": 0,
                                              "instructionOffset": instruction_offset,
                                              "instructionCount": count, "resolveSymbols": True})
        return body["instructions"]

    def opname(self, address: str) -> str:
        [entry] = self.disassemble(address, 0, 1)
        assert entry["address"] == address and entry.get("presentationHint") != "invalid", entry
        return entry["instruction"].split()[0]

    def value_stack_ref(self, frame_id: int) -> int:
        scopes = self.client.ok("scopes", {"frameId": frame_id})["scopes"]
        found = [s for s in scopes if s["name"].startswith("Value stack")]
        assert len(found) == 1, scopes
        assert found[0].get("presentationHint") == "registers", found[0]
        return found[0]["variablesReference"]

    def value_stack(self, frame_id: int) -> list[tuple[str, str]]:
        """The Value stack scope: (type, value) of each slot, bottom to top."""
        ref = self.value_stack_ref(frame_id)
        slots = self.client.ok("variables", {"variablesReference": ref})["variables"]
        assert [v["name"] for v in slots] == [str(i) for i in range(len(slots))], slots
        return [(v.get("type", ""), v["value"]) for v in slots]

    def repl(self, expression: str, frame_id: int | None = None) -> str:
        arguments: dict = {"expression": expression, "context": "repl"}
        if frame_id is not None:
            arguments["frameId"] = frame_id
        return self.client.ok("evaluate", arguments)["result"]

    def disconnect(self) -> None:
        self.client.ok("disconnect", {"restart": False})

    def wait_end(self, exit_code: int) -> None:
        """exited (with the program's status) then terminated, then the adapter
        ends by itself, with status 0."""
        exited = self.client.wait_event("exited")
        assert exited["body"]["exitCode"] == exit_code, exited
        self.client.wait_event("terminated")
        process = getattr(self.client, "process", None)
        if process is not None:
            self.client.wait_closed()
            try:
                status = process.wait(timeout=60)
            except Exception:
                raise AssertionError("the adapter did not exit after `terminated`"
                                     + self.client.diagnostics())
            assert status == 0, f"the adapter exited with {status}" + self.client.diagnostics()


@pytest.fixture
def dap():
    client = DapClient.start_adapter(cwd=ROOT, env=_env())
    session = Dap(client)
    try:
        yield session
    finally:
        process = client.process   # type: ignore[attr-defined]
        if process.poll() is None:
            process.kill()
        client.close()


# -- what the CLI prints ----------------------------------------------------------

# The user's line on a stop line: `... NULL + graph 2 graph_break.py:7  @torch.compile(...)`.
USER_LINE = re.compile(r" graph_break\.py:(?P<line>\d+)  ")
STACK_SLOT = re.compile(r"^ *(?P<index>\d+)  (?P<type>\S*) *(?P<value>.*)$")
ADDRESS = re.compile(r"0x[0-9a-f]{6,}")
CUT = re.compile(r"… \(\d+ chars\)$")


def parse_stack(lines: list[str]) -> list[tuple[str, str]]:
    """`stack`'s output: (type, value) of each slot, bottom to top."""
    assert lines and lines[0].startswith("value stack, depth "), lines
    depth = int(lines[0].split("depth ")[1].split(",")[0])
    slots = []
    for line in lines[1:1 + depth]:
        match = STACK_SLOT.match(line)
        assert match, f"not a stack line: {line!r}"
        assert int(match["index"]) == len(slots), lines
        slots.append((match["type"], match["value"]))
    return slots


def same_stack(dap_slots: list[tuple[str, str]], cli_slots: list[tuple[str, str]],
               other_process: bool) -> bool:
    """Whether the Value stack scope shows what `stack` printed: the same
    values, and the same type where `stack` prints one (it leaves the column
    empty where the summary names the type, a tensor or NULL; DAP's type column
    may name it). `stack` shows a NULL slot as `<NULL>`; the contract has the
    scope say "NULL" (checked once, in test_launch_stops_on_entry...): both
    are taken as one here. other_process: object addresses and a cut value's
    length differ between runs; the rest must not."""
    def value(text: str, kind: str) -> str:
        if not kind and text in ("NULL", "<NULL>"):
            return "<NULL>"
        return CUT.sub("…", ADDRESS.sub("0x?", text)) if other_process else text

    return len(dap_slots) == len(cli_slots) and all(
        value(dap_value, cli_kind) == value(cli_value, cli_kind) and cli_kind in ("", dap_kind)
        for (dap_kind, dap_value), (cli_kind, cli_value) in zip(dap_slots, cli_slots))


def cli_steps(commands: list[str], tmp_path: Path) -> list[dict]:
    """Runs graph_break.py under the CLI with `stack` at the first stop and
    after each of `commands`: each stop's label, offset, opname and stack."""
    script = ["stack"] + [c for command in commands for c in (command, "stack")]
    run = run_dyndbg(GRAPH_BREAK, script, tmp_path)
    no_traceback(run)

    def stop_of(lines: list[str]) -> dict:
        found = [line for line in lines if STOP.match(line)]
        assert len(found) == 1, f"one stop line expected in {lines}"
        match = STOP.match(found[0])
        assert match
        where = USER_LINE.search(found[0], match.end())
        assert where, found[0]
        return {"label": match["label"], "offset": int(match["offset"]),
                "opname": found[0][match.end():].split()[0], "line": int(where["line"])}

    stops = [stop_of(run.transcript.split(PROMPT, 1)[0].splitlines())]   # the first stop
    echoed = segments(run.transcript)[:len(script)]   # then `end of input, detaching`
    assert [segment.command for segment in echoed] == script, run.transcript[-3000:]
    for segment in echoed:
        if segment.command == "stack":
            stops[-1]["stack"] = parse_stack(segment.output)
        else:
            stops.append(stop_of(segment.output))
    assert len(stops) == len(commands) + 1 and all("stack" in s for s in stops), \
        run.transcript[-3000:]
    return stops


def dap_stop(dap: Dap) -> dict:
    """The same facts read through DAP: the top frame's name, the offset in
    its instruction pointer, the instruction there, the Value stack."""
    top = dap.top()
    ip = top["instructionPointerReference"]
    assert top["source"]["path"] == str(GRAPH_BREAK), top
    return {"label": top["name"], "offset": int(ip, 0) & LOW_BITS, "opname": dap.opname(ip),
            "line": top["line"], "stack": dap.value_stack(top["id"])}


def same_place(got: dict, expected: dict) -> bool:
    return all(got[key] == expected[key] for key in ("label", "offset", "opname", "line"))


# -- the tests ----------------------------------------------------------------------

def test_launch_stops_on_entry_with_the_stack_the_cli_shows(dap, tmp_path):
    caps = dap.initialize()
    for name in BOOLEAN_CAPABILITIES:
        assert caps.get(name) is True, f"{name}: {caps.get(name)!r}"
    filters = {f["filter"]: f.get("default", False) for f in caps["exceptionBreakpointFilters"]}
    assert filters == {"stepped": True, "raised": False, "postMortem": False}, caps
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


def test_a_null_slot_says_NULL(dap):
    """The contract: the Value stack scope shows a NULL slot as "NULL" (where
    `stack` prints `<NULL>`)."""
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
    assert [slots[i][1] for i in nulls] == ["NULL"] * len(nulls), (slots, console)


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
    dap.launch(GRAPH_BREAK)
    dap.stopped(reason="entry")
    frame = dap.top()
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
    assert dap.top()["instructionPointerReference"] == frame["instructionPointerReference"]
    assert not [e for e in dap.client.events[mark:] if e["event"] in ("stopped", "continued")]
    dap.disconnect()
    dap.wait_end(0)


def test_stepping_by_instruction_visits_what_the_cli_visits(dap, tmp_path):
    """stepIn by instruction through DAP = `s` at the prompt: the same frames,
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
    cli = cli_steps(["s"] * (len(visited) - 1), tmp_path)
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
                                "--wait-for-client", str(GRAPH_BREAK)], cwd=ROOT, env=_env())
    client = None
    try:
        assert program.host == "127.0.0.1" and program.port > 0
        if through == "direct":
            client = DapClient.connect(program.port, stderr=lambda: program.stderr)
        else:
            client = DapClient.start_adapter(cwd=ROOT, env=_env())
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
