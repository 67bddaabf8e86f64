"""The terminal front end: prompt-toolkit keys, completion, history, colours,
the toolbar, plain mode, sticky mode and `set width`.

Everything runs for real, in subprocesses (dyndbg's trace hooks must not leak
into pytest): a driver script that attaches dyndbg in-process with
prompt-toolkit's own test harness (create_pipe_input + DummyOutput) and runs a
real torch.compile(backend="eager") function with a graph break; the real CLI
in a pseudo-terminal (pexpect); the real CLI with commands on a pipe.

Keys for the pipe harness are sent by a feeder thread in the driver, one group
per prompt, each group only once that prompt is running, with a short pause
between keys: Tab completion and history loading run as background tasks in
prompt-toolkit, so "b __comp\\t\\r" sent as one burst is accepted before the
completion lands (exactly as a paste would be in a real terminal).
"""
from __future__ import annotations

import io
import json
import math
import os
import re
import signal
import stat
import subprocess
import sys
import termios
import time
from pathlib import Path

import pexpect
import pytest

import warm_start
from harness import ROOT, SAMPLES, default_sigint

GRAPH_BREAK = SAMPLES / "graph_break.py"
PROMPT = "(dyndbg) "
TIMEOUT = 120
RESULT_MARK = "@@RESULT@@ "
GRAPH_FN = r"__compiled_fn_\d+_[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12}"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")
CTRL_C, CTRL_D, UP = "\x03", "\x04", "\x1b[A"

# -- the in-process driver (prompt-toolkit's pipe input) -----------------------------------

DRIVER = r'''
"""dyndbg attached in-process, prompt-toolkit reading keys from a pipe."""
import io, json, os, sys, threading, time

import torch
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from dyndbg.attach import attach
from dyndbg.engine.debugger import DyndbgQuit

FEED = json.loads(sys.argv[1])   # one list of key chunks per prompt
engine = None
prompts = [0]
probes = []


def probe(*texts):
    """Called from the (dyndbg) prompt: the completer of the live session at this stop."""
    from dyndbg.ui.terminal.completion import DebuggerCompleter
    completer = DebuggerCompleter(engine.frontend)
    for text in texts:
        found = completer.get_completions(Document(text), CompleteEvent(completion_requested=True))
        probes.append({"text": text, "label": engine.frontend.stop.entry.label(),
                       "completions": [[c.text, c.start_position] for c in found]})


@torch.compile(backend="eager")
def f(x, weights, d):
    a = x.sin() + weights + d["alpha"]   # graph 1
    print("graph break here")            # graph break
    b = a * 2 + x.cos() + d["beta"]      # graph 2, in the resume function
    return b.sum()


def feeder(inp, reader):
    for number, chunks in enumerate(FEED):
        deadline = time.monotonic() + 60
        while prompts[0] <= number or not reader.prompt_session.app.is_running:
            if time.monotonic() > deadline:
                print(f"FEEDER: prompt {number + 1} never came", flush=True)
                return
            time.sleep(0.02)
        for chunk in chunks:
            time.sleep(0.3)   # let a completion or the history load land first
            inp.send_text(chunk)
    # More prompts than planned: say so, and end the session (Ctrl-D quits).
    while True:
        if prompts[0] > len(FEED) and reader.prompt_session.app.is_running:
            print(f"FEEDER: unplanned prompt {prompts[0]}", flush=True)
            inp.send_text("\x04")
            return
        time.sleep(0.05)


out = io.StringIO()
status = "completed"
with create_pipe_input() as inp:
    engine = attach(out, [], False, terminal_io=(inp, DummyOutput()))
    reader = engine.frontend.reader
    real_read = reader.read

    def counting_read(prompt):   # counts prompts; the reading itself is untouched
        prompts[0] += 1
        return real_read(prompt)

    reader.read = counting_read
    threading.Thread(target=feeder, args=(inp, reader), daemon=True).start()
    try:
        for _ in range(2):
            result = f(torch.arange(4.0), torch.ones(4), {"alpha": 1, "beta": 2})
        print("PROGRAM DONE", round(float(result), 4), flush=True)
    except DyndbgQuit:
        status = "quit"
    finally:
        engine.detach()
print("@@RESULT@@ " + json.dumps({"status": status, "prompts": prompts[0],
                                  "transcript": out.getvalue(), "probes": probes}), flush=True)
'''


def child_env(home: Path, **extra: str | None) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("NO_COLOR", "PYTHONBREAKPOINT", "DYNDBG_HISTORY", "DYNDBG_NO_CALLBACK"):
        env.pop(name, None)
    home.mkdir(parents=True, exist_ok=True)
    env.update(PYTHONUNBUFFERED="1", HOME=str(home), PYTHONPATH=str(ROOT))
    for name, value in extra.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run_driver(tmp_path: Path, feed: list[list[str]], **env: str | None) -> dict:
    """Run the driver with one group of keys per prompt; its result, stdout and stderr."""
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    try:
        proc = warm_start.run([sys.executable, str(driver), json.dumps(feed)],
                              capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT,
                              env=child_env(tmp_path / "home", **env))
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"the driver hung (keys {feed!r}); output so far:\n{error.stdout!r}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_MARK)]
    assert lines, (f"driver gave no result (rc {proc.returncode})\nstdout:\n{proc.stdout[-3000:]}"
                   f"\nstderr:\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1][len(RESULT_MARK):])
    result.update(stdout=proc.stdout, stderr=proc.stderr, returncode=proc.returncode)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "FEEDER:" not in proc.stdout, proc.stdout[-3000:]
    return result


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _history_commands(path: Path) -> list[str]:
    """prompt-toolkit's FileHistory format: '+' before each line of an entry."""
    return [line[1:] for line in path.read_text().splitlines() if line.startswith("+")]


# -- 1. keys through prompt-toolkit: Tab, Ctrl-C, Ctrl-D ------------------------------------

@pytest.fixture(scope="module")
def keys_session(tmp_path_factory) -> dict:
    """DYNDBG_HISTORY unset: the history goes to $HOME/.dyndbg_history."""
    tmp_path = tmp_path_factory.mktemp("keys")
    feed = [
        ["b __comp", "\t", "\r"],     # one candidate: Tab completes it
        ["p x.sigm", "\t", "\r"],     # sigmoid, sigmoid_: Tab inserts the common part
        ["st", "\t", "\t", "\r"],     # several, no common part: 2nd Tab picks the first
        ["junk", CTRL_C],             # Ctrl-C clears the line; the prompt comes back
        ["p 40+2\r"],
        ["c\r"],                      # to the breakpoint at the graph call
        [CTRL_D],                     # Ctrl-D at an empty prompt quits
    ]
    result = run_driver(tmp_path, feed)
    result["home"] = tmp_path / "home"
    result["planned"] = len(feed)
    return result


def test_tab_completes_single_candidate(keys_session: dict) -> None:
    transcript = keys_session["transcript"]
    match = re.search(rf"^Breakpoint 1 at (graph \d+|{GRAPH_FN}) \(resolved: in f \[0/0\]\)$",
                      transcript, re.M)
    assert match, ("'b __comp' + Tab should complete to the one graph name dynamo compiled "
                   f"and set a resolved breakpoint there:\n{transcript}")
    assert "Breakpoint 1 at __comp " not in transcript
    hit = re.search(rf"^Breakpoint 1 at (graph \d+|{GRAPH_FN}), hit 1$", transcript, re.M)
    assert hit, f"'c' should stop at the completed breakpoint:\n{transcript}"
    assert re.search(r"^graph \d+ \(" + GRAPH_FN + r"\) called from f \[0/0\] with \d+ inputs:",
                     transcript, re.M), transcript


def test_tab_inserts_common_part_and_second_tab_selects(keys_session: dict) -> None:
    transcript = keys_session["transcript"]
    # p x.sigm<Tab>: sigmoid and sigmoid_ share "oid", which Tab inserts.
    assert "<built-in method sigmoid of Tensor object" in transcript, transcript
    # st<Tab><Tab><Enter>: the first candidate (stack) is chosen and run.
    assert "value stack, depth 0, bottom to top: empty" in transcript, transcript
    assert "name 'st' is not defined" not in transcript, transcript


def test_ctrl_c_clears_line_and_prompts_again(keys_session: dict) -> None:
    transcript = keys_session["transcript"]
    assert "junk" not in transcript, f"Ctrl-C should discard the typed line:\n{transcript}"
    assert "Traceback" not in transcript and "KeyboardInterrupt" not in transcript
    lines = transcript.splitlines()
    assert "42" in lines, f"the prompt after Ctrl-C should read the next line:\n{transcript}"
    # every planned prompt was shown (the Ctrl-C one included), none more
    assert keys_session["prompts"] == keys_session["planned"], keys_session


def test_ctrl_d_quits(keys_session: dict) -> None:
    transcript = keys_session["transcript"]
    assert keys_session["status"] == "quit", keys_session["stdout"][-2000:]
    assert transcript.rstrip().endswith("dyndbg: quitting"), transcript[-2000:]
    assert "PROGRAM DONE" not in keys_session["stdout"]
    assert "graph break here" not in keys_session["stdout"]   # quit before the print


def test_default_history_file_in_home(keys_session: dict) -> None:
    history = keys_session["home"] / ".dyndbg_history"
    assert history.exists(), "without DYNDBG_HISTORY the history goes to ~/.dyndbg_history"
    assert _mode(history) == 0o600, oct(_mode(history))
    commands = _history_commands(history)
    # the completed line, not what was typed before Tab
    assert any(re.fullmatch(rf"b {GRAPH_FN}", c) for c in commands), commands
    assert "p 40+2" in commands and "c" in commands, commands
    assert "junk" not in commands, commands


# -- 2. completion candidates at a real stop ----------------------------------------------

PROBE_FIRST = ["brea", "__st", "wei", "x.si", "p x.si", "d[", "p d[", "p d['a", "b ", "b res",
               "b samples/graph_b", "p nosuchname.si"]
PROBE_RESUME = ["b ", "p a.sh", "___st"]


@pytest.fixture(scope="module")
def completion_session(tmp_path_factory) -> dict:
    """The completer at the first stop (f [0/0]) and in the resume function. Run with
    DYNDBG_HISTORY="" and an empty HOME: no history file may appear anywhere."""
    tmp_path = tmp_path_factory.mktemp("completion")
    call = "__import__('__main__').probe({})\r"
    feed = [
        [call.format(", ".join(repr(t) for t in PROBE_FIRST))],
        ["b resume\r"],
        ["c\r"],
        [call.format(", ".join(repr(t) for t in PROBE_RESUME))],
        ["c\r"],
        ["c\r"],                     # the resume breakpoint again, in the second call
    ]
    result = run_driver(tmp_path, feed, DYNDBG_HISTORY="")
    result["home"] = tmp_path / "home"
    result["tmp"] = tmp_path
    by_stop: dict[str, dict[str, list[str]]] = {"first": {}, "resume": {}}
    for item in result["probes"]:
        where = "first" if item["label"] == "f [0/0]" else "resume"
        by_stop[where][item["text"]] = [text for text, _ in item["completions"]]
    result["by_stop"] = by_stop
    assert set(by_stop["first"]) == set(PROBE_FIRST), result["transcript"]
    assert set(by_stop["resume"]) == set(PROBE_RESUME), result["transcript"]
    return result


def test_complete_command_name(completion_session: dict) -> None:
    assert "break" in completion_session["by_stop"]["first"]["brea"]


def test_completion_candidates_are_unique(completion_session: dict) -> None:
    found = completion_session["by_stop"]["first"]["brea"]
    assert len(found) == len(set(found)), (
        f"'brea' completes to {found}: the command `break` and the Python keyword `break` "
        "both appear, so Tab shows a menu with the same word twice")


def test_complete_local_and_special_names(completion_session: dict) -> None:
    first = completion_session["by_stop"]["first"]
    assert first["__st"] == ["__stack__"], first["__st"]
    assert "weights" in first["wei"], first["wei"]            # a local of f
    resume = completion_session["by_stop"]["resume"]
    assert "___stack0" in resume["___st"], resume["___st"]    # a resume function parameter


def test_complete_attribute_after_command(completion_session: dict) -> None:
    first = completion_session["by_stop"]["first"]
    assert "sin" in first["p x.si"] and "sinh" in first["p x.si"], first["p x.si"]
    assert all(name.startswith("si") for name in first["p x.si"])
    assert first["p nosuchname.si"] == [], first["p nosuchname.si"]
    # in the resume function, `a` is the tensor graph 1 returned
    assert "shape" in completion_session["by_stop"]["resume"]["p a.sh"]


def test_complete_attribute_of_bare_python_line(completion_session: dict) -> None:
    found = completion_session["by_stop"]["first"]["x.si"]
    assert "sin" in found, (
        f"'x.si' (a Python line at the prompt, x a tensor local) completes to {found}: a line "
        "without a space is only matched against command and variable names, so attributes "
        "complete after 'p ' but not in bare Python")


def test_complete_dict_key_after_command(completion_session: dict) -> None:
    first = completion_session["by_stop"]["first"]
    assert sorted(first["p d["]) == ["'alpha']", "'beta']"], first["p d["]
    assert first["p d['a"] == ["alpha']"], first["p d['a"]


def test_complete_dict_key_of_bare_python_line(completion_session: dict) -> None:
    found = completion_session["by_stop"]["first"]["d["]
    assert sorted(found) == ["'alpha']", "'beta']"], (
        f"'d[' (a Python line at the prompt, d a dict local) completes to {found}; "
        "'p d[' completes the keys")


def test_complete_break_targets(completion_session: dict) -> None:
    first = completion_session["by_stop"]["first"]["b "]
    assert "resume" in first and "f" in first, first
    assert any(re.fullmatch(r"graph \d+", t) for t in first), first
    assert any(re.fullmatch(GRAPH_FN, t) for t in first), first
    # only code compiled so far: the resume function does not exist yet
    assert not any(t.startswith("torch_dynamo_resume_in_f") for t in first), first
    assert completion_session["by_stop"]["first"]["b res"] == ["resume"]
    later = completion_session["by_stop"]["resume"]["b "]
    assert any(t.startswith("torch_dynamo_resume_in_f_at_") for t in later), later
    graphs = [t for t in later if re.fullmatch(r"graph \d+", t)]
    assert len(graphs) == 2, later


def test_complete_file_name_after_break(completion_session: dict) -> None:
    assert completion_session["by_stop"]["first"]["b samples/graph_b"] == ["reak.py"]


def test_completion_session_ran_to_the_end(completion_session: dict) -> None:
    assert completion_session["status"] == "completed"
    # f's result, the same as without the debugger
    expected = round(sum(2 * (math.sin(i) + 2) + math.cos(i) + 2 for i in range(4)), 4)
    assert f"PROGRAM DONE {expected}" in completion_session["stdout"], \
        completion_session["stdout"][-2000:]
    assert re.search(r"^Breakpoint 1 at resume, hit 2$", completion_session["transcript"], re.M)


def test_empty_dyndbg_history_writes_no_file(completion_session: dict) -> None:
    home = completion_session["home"]
    assert list(home.iterdir()) == [], list(home.iterdir())
    leftovers = [p.name for p in completion_session["tmp"].iterdir()]
    assert sorted(leftovers) == ["driver.py", "home"], leftovers
    assert not (ROOT / ".dyndbg_history").exists()


# -- 3. history written and read back ------------------------------------------------------

def test_history_written_private_and_recalled_with_up(tmp_path: Path) -> None:
    history = tmp_path / "history"
    first = run_driver(tmp_path, [["p 6*7\r"], ["p 'typed' + 'once'\r"], [CTRL_D]],
                       DYNDBG_HISTORY=str(history))
    assert "42" in first["transcript"].splitlines(), first["transcript"]
    assert history.exists(), "DYNDBG_HISTORY names the file to write"
    assert _mode(history) == 0o600, f"history mode {oct(_mode(history))}, expected 0o600"
    assert _history_commands(history) == ["p 6*7", "p 'typed' + 'once'"], history.read_text()

    # A new session: Up brings back the last command of the previous one; Up twice the one before.
    second = run_driver(tmp_path, [[UP, "\r"], [UP, UP, "\r"], [CTRL_D]],
                        DYNDBG_HISTORY=str(history))
    lines = second["transcript"].splitlines()
    assert "'typedonce'" in lines, f"Up + Enter should rerun the last command:\n{second['transcript']}"
    assert "42" in lines, f"Up Up + Enter should rerun the one before:\n{second['transcript']}"
    assert lines.index("'typedonce'") < lines.index("42")
    # appended again, except a repeat of the newest entry (prompt-toolkit skips those)
    assert _history_commands(history) == ["p 6*7", "p 'typed' + 'once'", "p 6*7"], \
        history.read_text()
    assert _mode(history) == 0o600


# -- 4. a real pseudo-terminal ---------------------------------------------------------------

class Terminal:
    """The real CLI in a pty; answers the cursor position requests a terminal answers."""

    READY = r"\d+ breakpoints? \| \w+"   # the end of the toolbar: the prompt is drawn

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.raw = io.StringIO()
        # On a time-out the test aborts the program: faulthandler then writes
        # where each of its threads was (a rare hang's only witness).
        env = {**env, "PYTHONFAULTHANDLER": "1"}
        self.child = pexpect.spawn(sys.executable, ["-m", "dyndbg", *args], cwd=str(ROOT),
                                   env=env, dimensions=(40, 160), encoding="utf-8",
                                   codec_errors="replace", timeout=30,
                                   preexec_fn=default_sigint)
        self.child.logfile_read = self.raw

    def expect(self, pattern: str) -> re.Match:
        while True:
            try:
                index = self.child.expect([pattern, r"\x1b\[6n"])
            except (pexpect.TIMEOUT, pexpect.EOF) as error:
                threads = self._threads_of_a_hang() if isinstance(error, pexpect.TIMEOUT) else ""
                pytest.fail(f"waiting for {pattern!r}: {type(error).__name__}; screen so far:\n"
                            f"{self.text()[-3000:]}{threads}")
            if index == 0:
                return self.child.match
            self.child.send("\x1b[20;1R")

    def _threads_of_a_hang(self) -> str:
        """Where the program's threads were: SIGABRT makes faulthandler write them."""
        start = len(self.raw.getvalue())
        try:    # which signals it ignored, blocked, caught and had pending
            with open(f"/proc/{self.child.pid}/status") as status:
                signals = "".join(line for line in status if line.startswith(
                    ("SigQ", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")))
        except OSError:
            signals = ""
        try:    # whether the terminal turned Ctrl-C into SIGINT (the master reads the pty's modes)
            lflag = termios.tcgetattr(self.child.child_fd)[3]
            signals += f"ISIG {'on' if lflag & termios.ISIG else 'off'}, " \
                       f"ICANON {'on' if lflag & termios.ICANON else 'off'}\n"
        except termios.error:
            pass
        try:
            self.child.kill(signal.SIGABRT)
            self.child.expect(pexpect.EOF, timeout=10)
        except (OSError, pexpect.TIMEOUT, pexpect.EOF):
            pass
        return "\n--- the program's signal masks and threads, aborted at the time-out ---\n" + \
            signals + ANSI.sub("", self.raw.getvalue()[start:]).replace("\r", "")[-6000:]

    def keys(self, *chunks: str) -> None:
        for chunk in chunks:   # paced as typing: Tab completion runs as a background task
            self.child.send(chunk)
            time.sleep(0.4)

    def finish(self) -> int:
        try:
            self.child.expect(pexpect.EOF, timeout=30)
        except pexpect.TIMEOUT:
            self.child.terminate(force=True)
            pytest.fail(f"dyndbg did not exit; screen:\n{self.text()[-3000:]}")
        self.child.close()
        return self.child.exitstatus

    def text(self) -> str:
        return ANSI.sub("", self.raw.getvalue()).replace("\r", "")


def test_pty_session_completion_colour_toolbar_stack(tmp_path: Path) -> None:
    history = tmp_path / "history"
    term = Terminal([str(GRAPH_BREAK.relative_to(ROOT))],
                    child_env(tmp_path / "home", TERM="xterm-256color", DYNDBG_HISTORY=str(history)))
    term.expect(Terminal.READY)
    term.keys("b __comp", "\t", "\r")
    term.expect(r"Breakpoint 1 at [^\r\n]*\(resolved")
    term.expect(Terminal.READY)
    term.keys("c\r")
    term.expect(r"hit 1")
    call = int(term.expect(r"instr (\d+)/").group(1))   # graph 2's call: its index varies
    term.expect(Terminal.READY)
    term.keys("si\r")   # one instruction: over the graph's call (s would enter the graph)
    term.expect(rf"instr {call + 1}/")
    term.expect(Terminal.READY)
    term.keys("stack\r")
    term.expect(r"value stack, depth")
    term.expect(Terminal.READY)
    term.keys("q\r")
    term.expect("quitting")
    status = term.finish()
    raw, text = term.raw.getvalue(), term.text()

    assert status == 0, (status, text[-2000:])
    # the completion was applied on screen and used
    assert re.search(rf"\(dyndbg\) b {GRAPH_FN}\n", text), text[-4000:]
    assert re.search(rf"Breakpoint 1 at (graph \d+|{GRAPH_FN}) \(resolved: in f \[0/0\]\)", text)
    # colours: the source on the location line is highlighted, the toolbar is reverse video
    location = re.search(r"> f \[0/0\]  instr 1/\d+ [^\n]*", raw)
    assert location, raw[:3000]
    assert re.search(r"\x1b\[(3\d|9\d|38;5;\d+)m", location.group(0)), \
        f"no colour on the location line: {location.group(0)!r}"
    assert "\x1b[0;7m" in raw or "\x1b[7m" in raw, "no reverse-video toolbar"
    # the toolbar: function, instruction, stack depth, breakpoint count, mode
    assert re.search(r"f \[0/0\] \| instr 1/\d+ \| stack 0 \| 0 breakpoints \| step", text), text
    assert re.search(r"f \[0/0\] \| instr 1/\d+ \| stack 0 \| 1 breakpoint \| step", text), text
    assert re.search(rf"f \[0/0\] \| instr {call + 1}/\d+ \| stack 1 \| 1 breakpoint \| step",
                     text), text
    # the stop after `si` and the value stack
    assert re.search(r"graph \d+ returned 1 output:", text), text
    assert re.search(r"value stack, depth 1, bottom to top:\n    0  tuple +\(tensor\(\[1\.0000, "
                     r"1\.8415, 1\.9093, 1\.1411\]\),\)", text), text[-3000:]
    assert "dyndbg: quitting" in text
    assert "call 0:" not in text and "graph break here" not in text
    assert "Traceback" not in text
    assert "doesn't support cursor position requests" not in text
    # and the history holds what ran
    assert _mode(history) == 0o600
    commands = _history_commands(history)
    assert commands[1:] == ["c", "si", "stack", "q"], commands
    assert re.fullmatch(rf"b {GRAPH_FN}", commands[0]), commands


def test_pty_stop_inside_a_graph(tmp_path: Path) -> None:
    """`s` at a graph's call in a real terminal (issue 50, settrace): the graph
    stop's prompt and toolbar, a node step and `locals`, then on to the end."""
    term = Terminal([str(GRAPH_BREAK.relative_to(ROOT))],
                    child_env(tmp_path / "home", TERM="xterm-256color", DYNDBG_HISTORY="",
                              DYNDBG_TRACER="settrace"))
    term.expect(Terminal.READY)
    term.keys("b graph 2\r")
    term.expect(r"Breakpoint 1 at graph 2")
    term.expect(Terminal.READY)
    term.keys("c\r")
    term.expect(r"hit 1")
    term.expect(Terminal.READY)
    term.keys("s\r")
    term.expect(r"\[graph 2 eager forward\] node 3/5 sin: call_method sin")
    term.expect(r"graph 2 eager forward \| node 3/5 sin \| 1 breakpoint \| graph")
    term.keys("s\r")
    term.expect(r"\[graph 2 eager forward\] node 4/5 a: call_function operator\.add")
    term.expect(Terminal.READY)
    term.keys("locals\r")
    term.expect(r"\nsin +=? Tensor f32\[4\] cpu \[0, 0\.8415, 0\.9093, 0\.1411\]")
    term.expect(Terminal.READY)
    term.keys("c\r")
    term.expect(r"hit 2")            # the graph's call again, in f's second call
    term.expect(Terminal.READY)
    term.keys("c\r")
    term.expect(r"call 1: ")
    status = term.finish()
    text = term.text()
    assert status == 0, (status, text[-2000:])
    assert "(dyndbg graph) " in text, text[-3000:]
    assert "Traceback" not in text


def test_pty_no_color_uses_plain_input(tmp_path: Path) -> None:
    """NO_COLOR=1 on a terminal: input(), no prompt-toolkit, no escape codes of dyndbg's."""
    history = tmp_path / "history"
    term = Terminal([str(GRAPH_BREAK.relative_to(ROOT))],
                    child_env(tmp_path / "home", TERM="xterm-256color", NO_COLOR="1",
                         DYNDBG_HISTORY=str(history)))
    term.expect(re.escape(PROMPT))
    for command, answer in [("b graph 2", r"Breakpoint 1 at graph 2 \(resolved"),
                            ("c", r"hit 1"), ("stack", r"value stack, depth 4"),
                            ("source", r"->\s+\d+  "),
                            ("ll", r"LOAD_GLOBAL")]:
        term.keys(command + "\r")
        term.expect(answer)
        term.expect(re.escape(PROMPT))
    term.keys(CTRL_D)
    term.expect("quitting")
    status = term.finish()
    raw = term.raw.getvalue()
    assert status == 0, raw[-2000:]
    stop_lines = [line for line in raw.splitlines() if line.startswith(("> ", "  stack", "    "))]
    assert stop_lines, raw[-2000:]
    for line in stop_lines:
        assert "\x1b[3" not in line and "\x1b[9" not in line, f"colour in plain mode: {line!r}"
    assert "\x1b" not in raw, f"escape codes with NO_COLOR=1: {raw[:3000]!r}"
    assert "| instr" not in raw, "a toolbar in plain mode"
    assert not history.exists(), "plain mode has no prompt-toolkit history"


TYPED_AHEAD = ROOT / "tests" / "programs" / "typed_ahead.py"


@pytest.mark.parametrize("mode", ["prompt-toolkit", "plain"])
def test_pty_keys_typed_while_the_program_runs(tmp_path: Path, mode: str) -> None:
    """Keys typed before a prompt shows wait in the terminal, as for pdb: typed
    while torch imports they run at the first stop, typed after `c` at the next
    one, and a line typed past the command that resumes the program is the
    program's own input()'s (prompt-toolkit read it along with the `c`)."""
    env = child_env(tmp_path / "home", TERM="xterm-256color", DYNDBG_HISTORY="",
               NO_COLOR="1" if mode == "plain" else None)
    ready = Terminal.READY if mode == "prompt-toolkit" else re.escape(PROMPT)
    term = Terminal([str(TYPED_AHEAD.relative_to(ROOT))], env)
    term.child.send("p 'typed' + 'ahead'\r")     # as Python starts: long before the first stop
    term.expect(r"'typedahead'")
    term.expect(ready)
    term.keys("b f\r")
    term.expect(r"Breakpoint 1 at f \(resolved")
    term.expect(ready)
    term.keys("c\r")
    term.expect("pause 1")                       # the program sleeps before its next call
    term.child.send("p 'while' + 'running'\r")
    term.expect(r"'whilerunning'")
    term.expect(ready)
    term.keys("c\r")
    term.expect("pause 2")
    term.child.send("c\rhello\r")                # at the next stop `c`, then the program's answer
    term.expect(r"answer: 'hello'")
    term.expect(ready)
    term.keys("c\r")
    term.expect(r"done \[4\.0, 4\.0, 4\.0\]")
    status = term.finish()
    text = term.text()
    assert status == 0, text[-3000:]
    # Each was typed while the program ran: the terminal echoed it before the stop.
    assert text.index("p 'typed' + 'ahead'") < text.index("dyndbg: stopped"), text[:3000]
    assert text.index("p 'while' + 'running'") < text.index("Breakpoint 1 at f, hit 1"), text
    assert text.index("hello") < text.index("Breakpoint 1 at f, hit 2"), text
    assert "Breakpoint 1 at f, hit 3" in text, text[-3000:]
    assert "is not defined" not in text and "Traceback" not in text, text[-3000:]


def test_pty_ctrl_c_at_the_prompt_and_while_running(tmp_path: Path) -> None:
    """With the terminal read a line at a time, Ctrl-C is still a key at the prompt
    (the line is cleared) and a signal while the program runs (a stop)."""
    env = child_env(tmp_path / "home", TERM="xterm-256color", DYNDBG_HISTORY="")
    term = Terminal(["tests/programs/interrupt_between.py"], env)
    term.expect(Terminal.READY)
    term.keys("junk", CTRL_C)
    term.expect(Terminal.READY)
    term.keys("p 'after' + 'ctrl-c'\r")
    term.expect(r"'afterctrl-c'")
    term.expect(Terminal.READY)
    term.keys("c\r")
    term.expect("looping")
    term.keys(CTRL_C)
    term.expect(r"Stopped at the first generated code since Ctrl-C")
    term.expect(Terminal.READY)
    term.keys("q\r")
    term.expect("quitting")
    assert term.finish() == 0
    text = term.text()
    assert "junk" not in text[text.index("'afterctrl-c'"):], text[-3000:]   # never run
    assert "***" not in text, text[-3000:]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]


def test_piped_commands_after_the_program_reads_stdin(tmp_path: Path) -> None:
    """stdin a pipe: the program's input() takes input ahead into sys.stdin's text
    buffer; the commands after its line still run, in order."""
    commands = ["b f", "c", "c", "c", "hello", "p 'after' + 'answer'", "c"]
    proc = warm_start.run([sys.executable, "-m", "dyndbg", str(TYPED_AHEAD), "0"],
                          input="".join(c + "\n" for c in commands), capture_output=True,
                          text=True, cwd=ROOT, env=child_env(tmp_path / "home"), timeout=TIMEOUT)
    out = proc.stdout
    assert "Traceback" not in out + proc.stderr, proc.stderr[-3000:]
    assert "end of input" not in out, out[-3000:]
    lines = out.splitlines()
    answered = [i for i, line in enumerate(lines) if line.endswith("answer: 'hello'")]
    assert answered, out[-3000:]
    after = answered[0]
    assert "Breakpoint 1 at f, hit 3" in lines[after:], out[-3000:]
    asked = lines.index(PROMPT + "p 'after' + 'answer'")
    assert asked > after and lines[asked + 1] == "'afteranswer'", out[-3000:]
    assert lines[-1] == "done [4.0, 4.0, 4.0]" and proc.returncode == 0, out[-3000:]


# -- 5, 6. plain mode (stdin a pipe), sticky, set width -------------------------------------

PLAIN_COMMANDS = [
    "b graph 2", "c",        # at graph 2's call
    "stack",                 # full width
    "si",                    # over the call (s would enter it): its output tuple on the stack
    "set width 30",
    "stack",                 # short now
    "locals",
    "sticky",                # on: window now
    "s",                     # window at the stop
    "s",
    "sticky",                # off
    "s",
    "source", "ll", "graph", "set color on", "source",
    "q",
]


def _segment(segs: list[tuple[str, list[str]]], index: int) -> list[str]:
    """The output of PLAIN_COMMANDS[index], checked to be that command's."""
    assert segs[index][0] == PLAIN_COMMANDS[index], (index, [c for c, _ in segs])
    return segs[index][1]


def run_plain(tmp_path: Path, options: list[str], commands: list[str]) -> subprocess.CompletedProcess:
    env = child_env(tmp_path / "home", TERM="xterm-256color")
    try:
        return warm_start.run([sys.executable, "-m", "dyndbg", *options, str(GRAPH_BREAK)],
                              input="".join(c + "\n" for c in commands), capture_output=True,
                              text=True, cwd=ROOT, env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"dyndbg hung: {error.stdout!r}")


def segments(transcript: str) -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for line in transcript.splitlines():
        if line.startswith(PROMPT):
            found.append((line[len(PROMPT):], []))
        elif found:
            found[-1][1].append(line)
    return found


@pytest.fixture(scope="module")
def plain_session(tmp_path_factory) -> subprocess.CompletedProcess:
    proc = run_plain(tmp_path_factory.mktemp("plain"), [], PLAIN_COMMANDS)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert [c for c, _ in segments(proc.stdout)] == PLAIN_COMMANDS, proc.stdout[-3000:]
    return proc


def test_plain_scripted_run_has_no_escape_codes(plain_session: subprocess.CompletedProcess) -> None:
    assert "\x1b" not in plain_session.stdout, repr(plain_session.stdout[:3000])
    assert "\x1b" not in plain_session.stderr, repr(plain_session.stderr[:3000])
    assert "dyndbg: quitting" in plain_session.stdout


def test_plain_scripted_run_no_color_option(tmp_path: Path) -> None:
    proc = run_plain(tmp_path, ["--no-color"], ["b graph 2", "c", "sticky", "s", "source", "ll",
                                                 "graph", "set", "q"])
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert "\x1b" not in proc.stdout + proc.stderr, repr(proc.stdout[:3000])
    assert "->" in proc.stdout and "Breakpoint 1 at graph 2, hit 1" in proc.stdout
    assert "color off" in proc.stdout
    assert "dyndbg: quitting" in proc.stdout


def _stop_index(lines: list[str]) -> int:
    for line in lines:
        match = re.match(r"^> f \[0/0\]  instr (\d+)/", line)
        if match:
            return int(match.group(1))
    raise AssertionError(f"no stop line in {lines}")


def _window(lines: list[str]) -> list[str]:
    return [line for line in lines if re.match(r"^(->|  ) +\d+ @\d+ ", line)]


def test_sticky_on_shows_window_stack_and_locals(plain_session: subprocess.CompletedProcess) -> None:
    segs = segments(plain_session.stdout)
    on, step1, step2 = _segment(segs, 7), _segment(segs, 8), _segment(segs, 9)
    assert on[0] == "sticky mode on", on
    assert [line for line in _window(on) if line.startswith("->")], on   # shown at once
    for lines in (step1, step2):
        window = _window(lines)
        current = [line for line in window if line.startswith("->")]
        assert len(current) == 1, lines
        index = _stop_index(lines)
        assert re.match(rf"^->\s+{index} @\d+ ", current[0]), (index, current)
        assert len(window) >= 10, window              # instructions either side
        assert any(line.startswith("value stack, depth") for line in lines), lines
        assert any(re.match(r"^  x\s", line) for line in lines), lines      # locals
        assert any(re.match(r"^  y\s", line) for line in lines), lines
        assert "-" * 40 in lines, lines
    assert _stop_index(step2) == _stop_index(step1) + 1


def test_sticky_again_turns_it_off(plain_session: subprocess.CompletedProcess) -> None:
    segs = segments(plain_session.stdout)
    off, step = _segment(segs, 10), _segment(segs, 11)
    assert off == ["sticky mode off"], off
    assert _window(step) == [], step
    assert not any(line.startswith("value stack, depth") for line in step), step
    assert "-" * 40 not in step
    assert re.match(r"^> f \[0/0\]  instr \d+/", step[0]), step


def test_set_width_shortens_summaries(plain_session: subprocess.CompletedProcess) -> None:
    segs = segments(plain_session.stdout)
    at_call, stepped = _stop_index(_segment(segs, 1)), _segment(segs, 3)
    before = _segment(segs, 2)
    assert any(line.endswith("Tensor f32[4] cpu [0, 1, 2, 3]") for line in before), before
    # One step past graph 2's call: the graph's outputs, a tuple, on top of the stack.
    assert _stop_index(stepped) == at_call + 1, stepped
    assert _segment(segs, 4) == ["width 30"]
    after = _segment(segs, 5)
    value_lines = [line for line in after if re.match(r"^\s+\d+  ", line)]
    assert value_lines and re.match(r"^\s+\d+  tuple ", value_lines[-1]), after
    for line in value_lines:
        summary = line[len("    0  tuple          "):]
        shown = re.sub(r" \(\d+ chars\)$", "", summary)
        assert len(shown) <= 30, f"width 30 but {len(shown)} characters shown: {line!r}"
    assert any("…" in line for line in value_lines), value_lines
    locals_lines = _segment(segs, 6)
    assert any("… (" in line for line in locals_lines), locals_lines


def test_plain_set_color_on_stays_plain(plain_session: subprocess.CompletedProcess) -> None:
    segs = segments(plain_session.stdout)
    source = [lines for command, lines in segs if command == "source"]
    assert len(source) == 2 and source[0] == source[1], source
    assert not any("\x1b" in line for line in source[1])


def test_pty_stop_while_dynamo_compiles(tmp_path: Path) -> None:
    """A compile stop in a real terminal: its prompt, its toolbar, a step and the
    symbolic stack, then the program runs on to its own output."""
    term = Terminal(["--catch-trace", "f", "samples/symbolic_trace.py"],
                    child_env(tmp_path / "home", TERM="xterm-256color"))
    term.expect(r"dynamo starts tracing f \(catchpoint 1\)")
    ready = r"symbolic stack \d+ \| compile time"     # the end of its toolbar: drawn
    term.expect(ready)
    for _ in range(2):
        term.keys("s\r")
        term.expect(r"\[compile 0/0\] symbolic_trace\.py:\d+ in f")
        term.expect(ready)
    term.keys("stack\r")
    term.expect(r"symbolic stack, \d+ entr(y|ies) \(bottom to top\):")
    term.expect(ready)
    term.keys("c\r")
    term.expect(r"restart \(\w+\): dynamo drops this attempt")
    term.expect(ready)
    term.keys("c\r")
    term.expect(r"graph break in f")
    term.expect(ready)
    term.keys("c\r")
    term.expect(Terminal.READY)     # the first stop in generated code, after the compile
    term.keys("c\r")
    term.expect(r"f: \[0\.7539, ")
    status = term.finish()
    text = term.text()
    assert status == 0, (status, text[-2000:])
    assert "(dyndbg compile) " in text
    assert re.search(r"compile 0/0 \| f line \d+ \| depth 0 \| symbolic stack [1-9] \| "
                     r"compile time", text), text[-3000:]
    # x, loaded for x.sin(): the input, not realized yet
    assert "] LazyVariableTracker  Tensor f32[4], unrealized" in text, text[-3000:]
    assert "Traceback" not in text
