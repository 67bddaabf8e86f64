"""dyndbg in Jupyter and IPython (issue 39): a real kernel (ipykernel started
by jupyter_client, as JupyterLab and VS Code's notebooks start it), cells
executed with allow_stdin, each input request answered by the test as a
user would type it; IPython's own terminal in a real pseudo-terminal."""
from __future__ import annotations

import io
import queue
import re
import sys
from pathlib import Path
from typing import Iterator

import pexpect
import pytest

from harness import child_env

DEFINE = '''
import torch
%load_ext dyndbg


@torch.compile(backend="eager")
def f(x, index):
    y = x.sin() * 2
    print("graph break")
    return y[index] + 1
'''


class Kernel:
    def __init__(self, cwd: Path) -> None:
        from jupyter_client.manager import start_new_kernel
        self.manager, self.client = start_new_kernel(kernel_name="python3", env=child_env(),
                                                     cwd=str(cwd), startup_timeout=120)

    def run(self, code: str, answers: list[str] | None = None,
            allow_stdin: bool = True) -> tuple[str, str | None, list[str]]:
        """(the cell's stream output, its result's text, the input prompts asked),
        answering each input request with the next of `answers`."""
        answers = list(answers or [])
        msg_id = self.client.execute(code, allow_stdin=allow_stdin)
        out: list[str] = []
        prompts: list[str] = []
        result = None
        while True:
            try:
                request = self.client.get_stdin_msg(timeout=0.02)
            except queue.Empty:
                pass
            else:
                assert request["msg_type"] == "input_request"
                prompts.append(request["content"]["prompt"])
                assert answers, f"an input request nobody answers; output so far: {''.join(out)}"
                self.client.input(answers.pop(0))
            try:
                message = self.client.get_iopub_msg(timeout=0.02)
            except queue.Empty:
                continue
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind == "execute_result":
                result = content["data"]["text/plain"]
            elif kind == "error":
                out.append(f"<error {content['ename']}: {content['evalue']}>\n")
            elif kind == "status" and content["execution_state"] == "idle":
                break
        assert not answers, f"answers left: {answers}; output: {''.join(out)}"
        return "".join(out), result, prompts

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    started = Kernel(tmp_path_factory.mktemp("notebook"))
    try:
        out, _, _ = started.run(DEFINE)
        assert "Error" not in out, out
        yield started
    finally:
        started.close()


def test_cell_magic_stops_and_reads_commands_from_the_notebook(kernel: Kernel) -> None:
    import torch
    out, result, prompts = kernel.run("%%dyndbg\nz = f(torch.ones(3), torch.tensor([1]))\nz * 3",
                                      ["stack", "c"])
    assert prompts == ["(dyndbg) "] * 2
    assert out.startswith("dyndbg: stopped in dynamo-generated code."), out
    assert re.search(r"^> f \[0/0\]  instr 1/\d+ ", out, re.M), out
    assert "value stack, depth 0, bottom to top: empty" in out
    assert "graph break\n" in out
    expected = (torch.ones(3).sin() * 2)[torch.tensor([1])] + 1
    assert result == repr(expected * 3)
    assert "end of input" not in out


def test_s_at_a_graph_call_stops_in_the_graph_and_asks_the_notebook(kernel: Kernel) -> None:
    """`s` at a graph's call enters it (issue 50): its stops ask the notebook too."""
    import torch
    out, result, prompts = kernel.run("%%dyndbg\nz = f(torch.ones(3), torch.tensor([1]))\nz",
                                      ["b __compiled_fn_*", "c", "s", "s", "locals", "c", "c"])
    assert prompts == ["(dyndbg) "] * 3 + ["(dyndbg graph) "] * 3 + ["(dyndbg) "], out
    assert re.search(r"^\[graph \d+ eager forward\] node 2/4 sin: call_method sin\n"
                     r"  at \w+\.py:7: y = x\.sin\(\) \* 2\n"
                     r"  in  l_x_ = Tensor f32\[3\] cpu \[1, 1, 1\]$", out, re.M), out
    assert re.search(r"^\[graph \d+ eager forward\] node 3/4 y: call_function operator\.mul$",
                     out, re.M), out
    assert re.search(r"^sin = Tensor f32\[3\] cpu \[0\.8415, 0\.8415, 0\.8415\]$", out, re.M), out
    assert result == repr((torch.ones(3).sin() * 2)[torch.tensor([1])] + 1)
    assert "end of input" not in out


def test_debug_block_asks_the_notebook_and_without_stdin_runs_on(kernel: Kernel) -> None:
    cell = ("import dyndbg\nwith dyndbg.debug():\n    w = f(torch.ones(2), torch.tensor([0]))\n"
            "print('ran on:', w.tolist())")
    out, _, prompts = kernel.run(cell, ["stack", "c"])
    assert prompts == ["(dyndbg) "] * 2 and "value stack, depth 0" in out, out
    assert "end of input" not in out
    out, _, prompts = kernel.run(cell, allow_stdin=False)
    assert prompts == []
    lines = [line for line in out.splitlines() if "takes no input" in line]
    assert lines == ["dyndbg: this kernel's front end takes no input (allow_stdin is off): no "
                     "stop can read a command; detaching, the program runs on"], out
    assert "ran on: [" in out


def test_post_mortem_of_the_last_exception_and_a_line_magic(kernel: Kernel) -> None:
    out, _, _ = kernel.run("f(torch.ones(3), torch.tensor([7]))")
    assert "<error IndexError: index 7 is out of bounds" in out, out
    out, _, prompts = kernel.run("%dyndbg", ["bt", "c"])
    assert prompts == ["(dyndbg) "] * 2
    assert "!! IndexError: index 7 is out of bounds for dimension 0 with size 3" in out, out
    assert re.search(r"^> torch_dynamo_resume_in_f_at_\d+ \[\d+/\d+\] ", out, re.M), out
    out, result, _ = kernel.run("%dyndbg -c 'p 6 * 7' -c c f(torch.ones(3), torch.tensor([2]))")
    assert "(dyndbg) p 6 * 7\n42\n(dyndbg) c\n" in out, out
    assert result is not None and result.startswith("tensor([")
    out, _, prompts = kernel.run("%%dyndbg --post-mortem -c c\nf(torch.ones(3), torch.tensor([9]))",
                                 ["stack", "c"])
    assert prompts == ["(dyndbg) "] * 2
    stack = out.split("value stack, ")[1]
    assert re.match(r"depth \d, bottom to top \(as before the failing instruction\):", stack), out
    assert re.search(r"\d +Tensor i64\[1\] cpu \[9\]\n", stack), stack
    assert "<error IndexError: index 9 is out of bounds" in out, out
    out, _, _ = kernel.run("%dyndbg --bogus f(1)")
    assert out.startswith("dyndbg: unknown option '--bogus'; usage: %%dyndbg"), out


# -- IPython's terminal -----------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]|\x1b[=>]")
READY = r"\d+ breakpoints? \| \w+"      # dyndbg's toolbar: its prompt is drawn


def test_ipythons_terminal_keeps_its_own_prompt_around_dyndbgs(tmp_path: Path) -> None:
    """dyndbg's prompt-toolkit prompt inside IPython's: commands, Ctrl-C at it,
    the cell's result, then IPython's next prompt and its own history."""
    raw = io.StringIO()
    home = tmp_path / "home"
    home.mkdir()
    child = pexpect.spawn(sys.executable, ["-m", "IPython", "--no-banner", "--colors=NoColor",
                                           "--no-confirm-exit"], cwd=str(tmp_path),
                          env={**child_env(home, {"NO_COLOR": None}), "TERM": "xterm"},
                          dimensions=(40, 160),
                          encoding="utf-8", codec_errors="replace", timeout=120)
    child.logfile_read = raw

    def expect(pattern: str) -> None:
        while True:
            try:
                index = child.expect([pattern, r"\x1b\[6n"])
            except (pexpect.TIMEOUT, pexpect.EOF) as error:
                pytest.fail(f"waiting for {pattern!r}: {type(error).__name__}; screen:\n"
                            + ANSI.sub("", raw.getvalue())[-3000:])
            if index == 0:
                return
            child.send("\x1b[20;1R")        # a terminal's answer to a cursor request

    try:
        expect(r"In \[1\]:")
        child.send("import torch; g = torch.compile(lambda x: x.cos() + 1, backend='eager')\r")
        expect(r"In \[2\]:")
        child.send("%load_ext dyndbg\r")
        expect(r"In \[3\]:")
        child.send("%dyndbg g(torch.zeros(2)) * 5\r")
        expect(READY)
        child.send("stack\r")
        expect(r"value stack, depth 0, bottom to top: empty")
        expect(READY)
        child.send("\x03")                  # Ctrl-C at dyndbg's prompt: a new prompt
        expect(READY)
        child.send("c\r")
        expect(r"Out\[3\]:[^\n]*?tensor\(\[10\., 10\.\]\)")
        expect(r"In \[4\]:")
        child.send("6 * 7\r")
        expect(r"Out\[4\]:[^\n]*?42")
        expect(r"In \[5\]:")
        child.send("\x1b[A")                # IPython's history: its last input, not dyndbg's
        expect(r"6 \* 7")
        child.send("\x15")                  # clear the line
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.kill(9)
    screen = ANSI.sub("", raw.getvalue())
    assert "Traceback" not in screen, screen[-3000:]
