"""`record on` and stepping back (issue 15), end to end on real torch.compile
programs under the real CLI: values as they were (an in-place update inside
a graph), a failing instruction's operands after `c`, back across a resume
function's start, the ring buffer's bound, `history save`, bad input."""
from __future__ import annotations

import json
import re
from pathlib import Path

from harness import ROOT, Run, run_dyndbg

SAMPLE = ROOT / "samples" / "step_back.py"
PROGRAMS = ROOT / "tests" / "programs"
RECORD = ["--record", "--post-mortem"]
SCREEN = re.compile(r"^\[recorded, (\d+) instructions? before now\]$")
LOCATION = re.compile(r"^> (?P<label>.+?\]) +instr (?P<index>\d+)/\d+ @\d+  (?P<op>\w+)")


def recorded(commands: list[str], tmp_path: Path, options: list[str] = RECORD) -> Run:
    run = run_dyndbg(SAMPLE, commands, tmp_path, options=options)
    assert "Traceback (most recent call last)" not in run.transcript
    return run


def screens(transcript: str) -> list[dict]:
    """Each past point shown: how far back, where, and the lines under it."""
    found: list[dict] = []
    lines = transcript.splitlines()
    for i, line in enumerate(lines):
        match = SCREEN.match(line)
        where = LOCATION.match(lines[i + 1]) if match and i + 1 < len(lines) else None
        if where:       # a stop display (`locals` and `l` have the header alone)
            body = []
            for rest in lines[i + 2:]:
                if rest.startswith("(dyndbg)"):
                    break
                body.append(rest)
            found.append({"before": int(match[1]), "label": where["label"],
                          "op": where["op"], "index": int(where["index"]), "body": body})
    return found


def test_failing_instruction_operands_after_continue(tmp_path: Path) -> None:
    run = recorded(["c", "back", "stack", "p n, d", "locals", "back 100000", "forward 16",
                    "l ."], tmp_path)
    assert "ZeroDivisionError" in run.stderr
    past = screens(run.transcript)
    assert past[0]["op"] == "BINARY_OP" and past[0]["before"] == 1
    assert past[0]["label"].startswith("torch_dynamo_resume_in_scale")
    assert re.search(r"stack\[3\]: Tensor f32\[3\] cpu \[2, 2, 2\] \| 31415 \| 0$",
                     past[0]["body"][0]), past[0]["body"]
    out = run.transcript
    assert "value stack, depth 3, bottom to top (recorded, 1 instruction before now):" in out
    assert "(31415, 0)" in out
    assert re.search(r"^  n +int +31415$", out, re.M)
    assert "(dyndbg) locals\n[recorded, 1 instruction before now]\n" in out
    # `l` at a recorded point: said, and its instruction marked.
    shown = screens(out)[-1]
    listing = out.split("(dyndbg) l .\n", 1)[1]
    assert listing.startswith(f"[recorded, {shown['before']} instructions before now]\n")
    assert re.search(rf"^->\s+{shown['index']} @\d+ +{shown['op']}", listing, re.M), listing
    # The post-mortem stop itself shows the operands, from the history.
    assert re.search(r"stack\[3\] \(as before the failing instruction\): .*\| 31415 \| 0", out)


def test_an_object_is_recorded_as_a_summary(tmp_path: Path) -> None:
    """An object other than a tensor or a container (here a local of the resume
    function, passed across the graph break): a summary, said as such; the live
    object is the program's own again at the present."""
    run = run_dyndbg(PROGRAMS / "object_local.py",
                     ["b resume", "c", "s", "back", "p settings", "p settings.factor", "present",
                      "p settings.factor", "c"], tmp_path, options=["--record"])
    assert run.stdout == "[6.0, 6.0, 6.0]\n", run.stdout + run.stderr[-2000:]
    out = run.transcript
    assert "Traceback" not in out, out
    past = screens(out)
    assert len(past) == 1 and past[0]["label"].startswith("torch_dynamo_resume_in_scale_at_"), past
    assert re.search(r"^\(dyndbg\) p settings\n<__main__\.Settings object at 0x\w+>  \(only a summary "
                     r"of this Settings was recorded\)$", out, re.M), out
    assert re.search(r"^\(dyndbg\) p settings\.factor\n\*\*\* AttributeError: .*\(only a summary was "
                     r"recorded of settings = <__main__\.Settings object at 0x\w+>\)$", out, re.M), out
    live = out.split("(dyndbg) present\n", 1)[1]
    assert live.startswith("back at the present\n") and "\n(dyndbg) p settings.factor\n3.0\n" in live, live


def test_nn_containers_are_summarised_with_their_children(tmp_path: Path) -> None:
    """Sequential, ModuleList and ModuleDict have an empty extra_repr: the
    summary counts their children, so a full one never reads as an empty one."""
    run = run_dyndbg(PROGRAMS / "nn_containers.py",
                     ["s", "back", "p layers", "p blocks", "p nothing", "c"], tmp_path,
                     options=["--record"])
    assert run.stdout == "torch.Size([2, 3])\n", run.stdout + run.stderr[-2000:]
    out = run.transcript
    assert "Traceback" not in out, out
    assert re.search(r"^\(dyndbg\) p layers\nSequential\(… 2 children\)  \(only a summary ", out,
                     re.M), out
    assert re.search(r"^\(dyndbg\) p blocks\nModuleList\(… 1 child\)  \(only a summary ", out,
                     re.M), out
    assert re.search(r"^\(dyndbg\) p nothing\nSequential\(\)  \(only a summary ", out, re.M), out


def test_record_on_at_a_stop_records_the_instruction_it_is_at(tmp_path: Path) -> None:
    """`record on` at a stop records the instruction the stop is at, not run yet
    (as --record does before stopping there): `back` reaches it, at a step's
    stop and at a breakpoint's; off and on again at one stop records it once."""
    run = recorded(["record on", "record off", "record on", "n 2", "back 5", "info record",
                    "record off", "b step_back.py:17", "c", "record on", "n", "back"],
                   tmp_path, options=[])
    out = run.transcript
    first = LOCATION.match(out.splitlines()[1])
    assert first, out[:500]
    hit = LOCATION.match(out.split("Breakpoint 1 at step_back.py:17, hit 1\n", 1)[1])
    assert hit, out
    past = screens(out)
    assert (past[0]["label"], past[0]["index"], past[0]["before"]) == \
        (first["label"], int(first["index"]), 2), past[0]
    assert "(dyndbg) back 5\nat the oldest recorded instruction\n" in out
    assert "record on: 3 instructions (#0 to #2)" in out
    assert (past[1]["label"], past[1]["index"], past[1]["before"]) == \
        (hit["label"], int(hit["index"]), 1), past[1]


def test_in_place_update_shows_old_then_new_values(tmp_path: Path) -> None:
    """x.add_(1) inside graph 1: before the graph's call x was [1, 1, 1] (a
    copy kept then), after it [2, 2, 2]; the live x is [2, 2, 2] throughout."""
    commands = ["c", "p x.tolist()", "back 100000", "display x.tolist()"]
    commands += ["forward"] * 40
    run = recorded(commands, tmp_path)
    out = run.transcript
    assert "at the oldest recorded instruction" in out
    assert out.count("[2.0, 2.0, 2.0]") >= 1                 # the live x, post mortem
    values = [(s["label"], s["op"], s["body"]) for s in screens(out)]
    shown = []
    for label, op, body in values:
        display = [line for line in body if line.startswith("1: x.tolist() = ")]
        if label.startswith("scale [0/0]") and display:
            shown.append((op, body, display[0].split(" = ", 1)[1]))
    assert shown[0][2] == "[1.0, 1.0, 1.0]"
    changed = next(i for i, (_, _, value) in enumerate(shown) if value == "[2.0, 2.0, 2.0]")
    # The instruction before the change was the call of graph 1.
    op, body, _ = shown[changed - 1]
    assert op in ("CALL", "CALL_FUNCTION_EX"), shown[changed - 1]
    assert any("next: calls forward" in line for line in body), body
    assert all(value == "[1.0, 1.0, 1.0]" for _, _, value in shown[:changed])


def test_back_across_the_resume_function_start(tmp_path: Path) -> None:
    commands = ["c", "back 2", "where", "history 4", "back 20", "history 4", "forward 20"]
    commands += ["back"] * 30
    run = recorded(commands, tmp_path)
    out = run.transcript
    recent, around = [part.split("(dyndbg)", 1)[0].splitlines()
                      for part in out.split("(dyndbg) history 4\n")[1:]]
    # `history 4`: the last four, or four around an older point in view (marked).
    for listing, labels in ((recent, ["-4", "-3", "-2", "-1"]),
                            (around, ["-24", "-23", "-22", "-21"])):
        assert [line[3:10].strip() for line in listing] == labels, listing
        assert [line[:2] for line in listing] == ["  ", "  ", "->", "  "], listing
    where = out.split("(dyndbg) where\n", 1)[1].split("(dyndbg)", 1)[0].splitlines()
    assert where[0].startswith("[recorded, 2 instructions before now")
    assert re.match(r"   0 scale \[0/0\]  instr \d+ ", where[1]), where
    assert re.match(r">  1 torch_dynamo_resume_in_scale_at_\d+ ", where[2]), where
    walk = out.split("(dyndbg) forward 20\n", 1)[1]     # back at -2, then `back`s
    labels = [(s["label"], s["before"], s["body"]) for s in screens(walk)]
    first_outside = next(i for i, (label, _, _) in enumerate(labels)
                         if label.startswith("scale [0/0]"))
    assert all(label.startswith("torch_dynamo_resume_in_scale")
               for label, _, _ in labels[:first_outside])
    # The caller, just before the resume function started: its call of it.
    assert any("next: calls torch_dynamo_resume_in_scale_at_" in line
               for line in labels[first_outside][2]), labels[first_outside]
    befores = [before for _, before, _ in labels]
    assert befores == list(range(befores[0], befores[0] + len(befores)))


def test_ring_buffer_drops_the_oldest(tmp_path: Path) -> None:
    run = recorded(["set record-size 40", "c", "info record", "back 1000", "history 100",
                    "set record-size 10", "record"], tmp_path)
    out = run.transcript
    held = re.search(r"record on: 40 instructions \(#(\d+) to #(\d+)\)", out)
    assert held and int(held[2]) - int(held[1]) == 39, out
    dropped = int(re.search(r"(\d+) older instructions dropped to keep the bounds", out)[1])
    assert dropped > 40
    assert f"at the oldest recorded instruction ({dropped} older ones dropped" in out
    listing = out.split("(dyndbg) history 100\n", 1)[1].split("(dyndbg)", 1)[0].splitlines()
    assert len(listing) == 40 and listing[0].startswith("->")   # the view: the oldest
    assert "record on: 10 instructions" in out


def test_breakpoint_set_while_recording_stops_in_the_same_code(tmp_path: Path) -> None:
    """A breakpoint set at a stop while recording, later in the code being
    recorded, stops there: the compiled core's record of that code (and on
    sys.monitoring the entry its filter found last) is dropped with the change."""
    run = recorded(["b step_back.py:17", "c", "b step_back.py:18", "c", "where", "c"],
                   tmp_path, options=["--record"])
    out = run.transcript
    first, second = out.split("(dyndbg) b step_back.py:18\n", 1)
    assert "Breakpoint 1 at step_back.py:17, hit 1" in first, first
    stop = second.split("(dyndbg) where\n", 1)[0]
    assert "Breakpoint 2 at step_back.py:18, hit 1" in stop, stop
    assert "!! ZeroDivisionError" not in stop, stop       # not run past it to the failure
    assert "ZeroDivisionError" in run.stderr     # then, continued, it fails as without dyndbg


def test_history_save_writes_json_lines(tmp_path: Path) -> None:
    saved = tmp_path / "history.jsonl"
    run = recorded(["c", f"history save {saved}", "history save"], tmp_path)
    lines = [json.loads(line) for line in saved.read_text().splitlines()]
    assert f"saved {len(lines)} recorded instructions to {saved}" in run.transcript
    assert "*** usage: history save FILE" in run.transcript
    assert [r["seq"] for r in lines] == list(range(lines[0]["seq"], lines[0]["seq"] + len(lines)))
    last = lines[-1]
    assert last["opname"] == "BINARY_OP" and last["argrepr"] == "/"
    assert [v["value"] for v in last["stack"][1:]] == ["31415", "0"]
    assert last["locals"]["n"] == {"type": "int", "value": "31415"}
    assert last["function"].startswith("torch_dynamo_resume_in_scale")
    first = lines[0]
    assert first["function"] == "scale" and first["compile_id"] == "0/0"
    assert first["locals"]["x"]["value"].startswith("Tensor f32[3] cpu [1, 1, 1]")
    caller = next(r for r in lines if r["seq"] == last["caller_seq"])
    assert caller["function"] == "scale" and caller["opname"].startswith("CALL")


def test_execution_commands_return_to_the_present(tmp_path: Path) -> None:
    run = recorded(["back", "s 5", "back 3", "up", "s", "back", "present", "present",
                    "record off", "record", "c"], tmp_path, options=["--record"])
    out = run.transcript
    assert "dyndbg: back at the present to step (from a recorded point)" in out
    assert "back at the present\n" in out
    assert "*** already at the present" in out
    assert "*** no instruction recorded before now" in out
    assert "*** at a recorded point frames are not selected ('where' lists them); 'present' " \
        "returns to the live frames" in out
    assert "record off: " in out


def test_bad_history_input_gets_one_line(tmp_path: Path) -> None:
    run = run_dyndbg(SAMPLE, ["back", "record maybe", "back x", "history -1", "forward 0",
                              "set record-memory lots", "set record-size 0", "record on",
                              "back", "set record-memory 2GB", "c"], tmp_path)
    out = run.transcript
    assert "*** nothing recorded ('record on' records from here on; --record from the start)" \
        in out
    assert "*** usage: record [on|off]" in out
    assert "*** count must be a whole number, not 'x'" in out
    assert "*** count must be at least 1" in out
    assert "*** record-memory must be a size such as 512MB or 2GB, not 'lots'" in out
    assert "*** record-size must be at least 1" in out
    assert "record-memory 2 GB" in out
    assert "Traceback" not in out
