"""Into a compiled graph through the Debug Adapter Protocol (issue 50): a
function breakpoint on `__compiled_fn_*` stops at the graph's call, stepIn
enters the graph, and each stop before an FX node is a frame whose source is
the user's file at the node's line, above the generated frame that called
it. Checked against torch's own account of the same graph (each node's
innermost user frame in node.meta["stack_trace"], printed by the program
itself after its run) and the program's output without dyndbg.

Runs on the mechanism this Python traces with by default (sys.monitoring
on 3.12+, settrace on 3.11)."""
from __future__ import annotations

import os
import re

import pytest

from dap_session import Dap, adapter_session
from dyndbg.dap.addresses import parse_address
from harness import ROOT, run_plain

PROGRAM = ROOT / "tests" / "programs" / "into_graph.py"
GRAPH_STOP = re.compile(r"\[graph (\d+) eager forward\] node (\d+)/(\d+) (\w+): ")
ACCOUNT = re.compile(r"^node (\w+) (\w+) (\S+)$", re.M)


@pytest.fixture
def dap():
    with adapter_session() as session:
        yield session


def scope_names(dap: Dap, frame_id: int) -> dict[str, list[str]]:
    scopes = dap.client.ok("scopes", {"frameId": frame_id})["scopes"]
    return {s["name"]: [v["name"] for v in dap.client.ok(
        "variables", {"variablesReference": s["variablesReference"]})["variables"]]
        for s in scopes}


def test_step_in_enters_the_graph_at_the_users_lines(dap):
    dap.start("launch", {"program": str(PROGRAM), "cwd": str(ROOT), "args": ["eager"],
                         "stopOnEntry": False},
              function_breakpoints=[{"name": "__compiled_fn_*"}])
    call = dap.stopped(reason="function breakpoint")
    caller = dap.top()
    assert re.fullmatch(r".+ \[\d+/\d+\]", caller["name"]), caller

    seen: list[tuple[str, str, int]] = []     # (node, source path, line) at each graph stop
    windows = set()
    rows: list[dict] = []
    stop = dap.step("stepIn")
    while GRAPH_STOP.match(stop.get("description", "")):
        found = GRAPH_STOP.match(stop["description"])
        node = found[4]
        frames = dap.frames()
        graph, below = frames[0], frames[1]
        assert graph["name"].endswith(f"eager forward] {node}"), frames
        # the instruction pointer: the node's row in the graph's own window
        window, row = parse_address(graph["instructionPointerReference"])
        windows.add(window)
        assert row == int(found[2]) - 1, (graph, stop)
        # the generated frame that called the graph, still at its call
        assert below["name"] == caller["name"] and \
            below["instructionPointerReference"] == caller["instructionPointerReference"], frames
        seen.append((node, (graph.get("source") or {}).get("path", ""), graph["line"]))
        scopes = scope_names(dap, graph["id"])
        assert set(scopes) == {"Node inputs", "Graph values"}, scopes
        assert set(scopes["Node inputs"]) <= set(scopes["Graph values"]), scopes
        for name in scopes["Node inputs"]:   # a watch reads a node's value, nothing run
            value = dap.client.ok("evaluate", {"expression": name, "context": "watch",
                                               "frameId": graph["id"]})
            assert value["result"].startswith("tensor(") or value["type"], value
        if len(seen) == 2:   # the debug console runs the prompt's graph-stop commands
            listing = dap.repl("l")
            assert f"-> {node} " in listing, listing
            # disassembly at the graph's IP, as VS Code asks: its nodes, as `l` lists them
            ip = graph["instructionPointerReference"]
            rows = dap.disassemble(ip, -50, 100)
            assert len(rows) == 100 and rows[50]["address"] == ip, rows
            assert [r["instruction"] for r in rows if r.get("presentationHint") != "invalid"] \
                == [line[3:] for line in listing.splitlines()], (rows, listing)
            assert rows[50]["instruction"].split()[0] == node and \
                {r["symbol"] for r in rows if "symbol" in r} == {"graph 1 eager forward"}, rows
            # paging from the first row back and past the end: padding, in the same window
            before = dap.disassemble(rows[0]["address"], -10, 10)
            assert all(r.get("presentationHint") == "invalid" for r in before), before
            assert {parse_address(r["address"])[0] for r in before + rows} == windows
            # no instruction breakpoint on a node: said (a line breakpoint stops there)
            (refused,) = dap.client.ok("setInstructionBreakpoints", {
                "breakpoints": [{"instructionReference": ip}]})["breakpoints"]
            assert refused["verified"] is False and "compiled graph" in refused["message"]
            dap.client.ok("setInstructionBreakpoints", {"breakpoints": []})
            # the frame that called the graph still disassembles as generated code
            assert dap.opname(below["instructionPointerReference"]).startswith("CALL")
        # granularity "instruction" steps a node, as without one
        stop = dap.step("stepIn" if len(seen) % 2 else "next",
                        "instruction" if len(seen) in (3, 4) else None)
    assert len(seen) >= 4, seen
    # after the graph: the generated instruction after its call
    after = dap.top()
    assert after["name"] == caller["name"] and \
        after["instructionPointerReference"] != caller["instructionPointerReference"], after
    gone = dap.client.request("disassemble", {"memoryReference": rows[50]["address"],
                                              "instructionCount": 1})
    assert gone["success"] is False and "graph 1: its steps are listed while stopped" \
        in gone["message"], gone
    dap.client.ok("continue", {"threadId": dap.thread})
    dap.wait_end(0)

    out = dap.client.output("stdout")
    nodes = ACCOUNT.findall(out)
    # one stop a node but the placeholders, in the graph's order, whatever the granularity
    assert [node for node, _, _ in seen] == [name for name, op, _ in nodes if op != "placeholder"]
    # the disassembly's rows: every node, in order, at its user line (torch's stack trace)
    listed = [r for r in rows if r.get("presentationHint") != "invalid"]
    assert [tuple(r["instruction"].split()[:2]) for r in listed] == \
        [(name, op) for name, op, _ in nodes], listed
    place = None
    for row, (name, _, where) in zip(listed, nodes):
        if "location" in row:
            place = f"{row['location']['path']}:{row['line']}"
            assert place == where, (row, where)
        else:
            assert where in ("-", place), (row, where, place)
    account = {name: where for name, op, where in nodes if op != "placeholder"}
    for node, path, line in seen:
        if node == "output":
            continue
        where = account[node]
        if where == "-":
            assert line == 0, (node, path, line)
        else:
            assert f"{path}:{line}" == where, (node, path, line, where)
    assert os.path.samefile(seen[0][1], PROGRAM)
    assert out == run_plain(PROGRAM, "eager").stdout   # the program's output unchanged


def test_step_out_of_a_graph_stops_after_its_call(dap):
    dap.start("launch", {"program": str(PROGRAM), "cwd": str(ROOT), "args": ["eager"],
                         "stopOnEntry": False},
              function_breakpoints=[{"name": "__compiled_fn_*"}])
    dap.stopped(reason="function breakpoint")
    caller = dap.top()
    stop = dap.step("stepIn")
    assert GRAPH_STOP.match(stop["description"]), stop
    stop = dap.step("stepOut")
    assert not GRAPH_STOP.match(stop.get("description", "")), stop
    after = dap.top()
    assert after["name"] == caller["name"] and \
        after["instructionPointerReference"] != caller["instructionPointerReference"], after
    dap.client.ok("continue", {"threadId": dap.thread})
    dap.wait_end(0)


BACKWARD = ROOT / "tests" / "programs" / "train_backward.py"
BACKWARD_STOP = re.compile(r"\[backward of graph (\d+) aot_eager\] node (\d+)/(\d+) (\w+): ")


def test_the_backward_filter_stops_in_a_compiled_backward(dap):
    caps = dap.initialize()
    assert "backward" in [f["filter"] for f in caps["exceptionBreakpointFilters"]], caps
    dap.start("launch", {"program": str(BACKWARD), "cwd": str(ROOT), "args": ["one"],
                         "stopOnEntry": True})
    dap.stopped(reason="entry")
    dap.client.ok("setExceptionBreakpoints", {"filters": ["stepped", "backward"]})
    mark = dap.client.mark()
    dap.client.ok("continue", {"threadId": dap.thread})
    stop = dap.stopped(after=mark)
    found = BACKWARD_STOP.match(stop["description"])
    assert found, stop
    frames = dap.frames()
    # its disassembly, in a window of its own: the node at the IP
    ip = frames[0]["instructionPointerReference"]
    (row,) = dap.disassemble(ip, 0, 1)
    assert row["instruction"].split()[0] == found[4] and \
        row["symbol"] == f"backward of graph {found[1]} aot_eager", row
    assert parse_address(ip)[1] == int(found[2]) - 1, (ip, found)
    # the backward's node at the user's forward line it is the gradient of
    assert frames[0]["name"].startswith("[backward of graph ") and \
        os.path.samefile(frames[0]["source"]["path"], BACKWARD), frames
    scopes = scope_names(dap, frames[0]["id"])
    assert "tangents_1" in scopes["Graph values"], scopes
    stop = dap.step("next")
    assert BACKWARD_STOP.match(stop["description"]), stop
    dap.client.ok("setExceptionBreakpoints", {"filters": ["stepped"]})   # no more
    dap.client.ok("continue", {"threadId": dap.thread})
    dap.wait_end(0)
    assert dap.client.output("stdout") == run_plain(BACKWARD, "one").stdout


LINES = ROOT / "tests" / "programs" / "graph_lines.py"


def test_a_gutter_breakpoint_on_a_line_inside_a_graph_stops_at_its_first_node(dap):
    """setBreakpoints on a source line dynamo captured into a graph (no
    generated instruction has it), here the second graph of graph_lines.py
    (eager, a graph break between the layers): set at the entry stop, in
    the first graph's code, it is unverified; it binds when the code after
    the break is first seen (a "changed" event), and once the second graph
    is compiled stops before the line's first node in it, reason
    "breakpoint", the graph's frame at that line."""
    source = LINES.read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if text.strip() == "out = self.l2(h) * 2")
    dap.start("launch", {"program": str(LINES), "cwd": str(ROOT), "args": ["eager", "split"],
                         "stopOnEntry": True})
    dap.stopped(reason="entry")
    set_ = dap.client.ok("setBreakpoints", {"source": {"path": str(LINES)},
                                            "breakpoints": [{"line": line}]})
    (pending,) = set_["breakpoints"]
    assert pending["verified"] is False, pending
    mark = dap.client.mark()
    dap.client.ok("continue", {"threadId": dap.thread})
    bound = dap.client.wait_event("breakpoint", lambda b: b["breakpoint"].get("id") == pending["id"])
    assert bound["body"]["breakpoint"]["verified"] is True, bound
    stop = dap.stopped(after=mark, reason="breakpoint")
    found = GRAPH_STOP.match(stop["description"])
    assert found, stop
    graph = dap.frames()[0]
    assert os.path.samefile(graph["source"]["path"], LINES) and graph["line"] == line, graph
    dap.client.ok("setBreakpoints", {"source": {"path": str(LINES)}, "breakpoints": []})
    dap.client.ok("continue", {"threadId": dap.thread})
    dap.wait_end(0)
    out = dap.client.output("stdout")
    first = next(name for name, op, where in ACCOUNT.findall(out)
                 if op not in ("placeholder", "output") and where == f"{LINES}:{line}")
    assert found[4] == first, (found[4], first)
    assert out == run_plain(LINES, "eager", "split").stdout


NAN = ROOT / "tests" / "programs" / "nan_graph.py"
NAN_STOP = re.compile(r"\[graph (\d+) eager forward\] after node (\d+)/(\d+) (\w+): ")


def test_the_nan_filter_stops_after_the_node_that_made_it(dap):
    """The node named is the program's own eager account's first non-finite
    op, at its line; its value in 'Node inputs'; next steps to the node
    after it; the output is a plain run's."""
    caps = dap.initialize()
    assert "nan" in [f["filter"] for f in caps["exceptionBreakpointFilters"]], caps
    plain = run_plain(NAN, "eager").stdout
    first = re.search(r"^step 1 first (\w+) (\d+) ", plain, re.M)
    assert first is not None, plain
    dap.start("launch", {"program": str(NAN), "cwd": str(ROOT), "args": ["eager"],
                         "stopOnEntry": True})
    dap.stopped(reason="entry")
    dap.client.ok("setExceptionBreakpoints", {"filters": ["stepped", "nan"]})
    mark = dap.client.mark()
    dap.client.ok("continue", {"threadId": dap.thread})
    stop = dap.stopped(after=mark)
    found = NAN_STOP.match(stop.get("description", ""))
    assert found is not None, stop
    frames = dap.frames()
    assert os.path.samefile(frames[0]["source"]["path"], NAN) and \
        frames[0]["line"] == int(first[2]), frames[0]
    scopes = dap.client.ok("scopes", {"frameId": frames[0]["id"]})["scopes"]
    inputs = next(s for s in scopes if s["name"] == "Node inputs")
    shown = {v["name"]: v["value"] for v in dap.client.ok(
        "variables", {"variablesReference": inputs["variablesReference"]})["variables"]}
    assert "nan" in shown[found[4]], shown
    stop = dap.step("next")
    after = GRAPH_STOP.match(stop.get("description", ""))
    assert after is not None and int(after[2]) == int(found[2]) + 1, stop
    dap.client.ok("setExceptionBreakpoints", {"filters": ["stepped"]})   # no more
    dap.client.ok("continue", {"threadId": dap.thread})
    dap.wait_end(0)
    assert dap.client.output("stdout") == plain
