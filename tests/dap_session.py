"""An editor's DAP session for tests/test_dap.py (what VS Code sends, through
tests/dap_client.py), and what the CLI prints at the same stops, to compare.

Instructions are named by what they are (frame, offset, opname, line), read
from the run itself, never by index.
"""
from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Iterator

from harness import ROOT, SAMPLES, child_env, run_dyndbg
from dap_client import VSCODE_INITIALIZE, DapClient
from transcript import PROMPT, STOP, no_traceback, segments

GRAPH_BREAK = SAMPLES / "graph_break.py"
EXIT_CODE = SAMPLES / "exit_code.py"
RESUME = "torch_dynamo_resume_in_f_at_10 [1/0]"
# A generated frame's name as dyndbg labels it: `f [0/0]`.
GENERATED = re.compile(r".+ \[\d+/\d+\]")
LOW_BITS = (1 << 20) - 1   # an address's byte offset (the contract: (serial + 1) << 20 | offset)
# The offset and opname in a stop's description: `f [0/0]  instr 3/118 @26  LOAD_ATTR ...`.
DESCRIBED = re.compile(r"@(?P<offset>\d+)\s+(?P<opname>[A-Z][A-Z0-9_]*)")


# -- a session ------------------------------------------------------------------

@contextlib.contextmanager
def adapter_session() -> Iterator[Dap]:
    """An editor's session with `python -m dyndbg.dap` over stdio; the adapter
    is killed if still running at the end."""
    client = DapClient.start_adapter(cwd=ROOT, env=child_env())
    try:
        yield Dap(client)
    finally:
        process = client.process   # type: ignore[attr-defined]
        if process.poll() is None:
            process.kill()
        client.close()


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
    may name it); a NULL slot is `<NULL>` in both. other_process: object
    addresses and a cut value's length differ between runs; the rest must not."""
    def value(text: str, kind: str) -> str:
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
