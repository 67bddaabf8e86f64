"""Random command lines at stops: dyndbg answers each with output or one
`***` line, never a traceback of its own, never aborts, and the program's
result is unchanged (the generated lines never assign, quit or use `!`)."""
from __future__ import annotations

import string

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import SAMPLES, plain, run_dyndbg

pytestmark = pytest.mark.slow   # many generated command lines, each a run

COMMANDS = ["s", "step", "n", "next", "r", "return", "unt", "until", "c", "b", "break",
            "tbreak", "catch", "cl", "clear", "disable", "enable", "condition", "ignore",
            "w", "where", "u", "up", "d", "down", "l", "list", "ll", "dis", "source",
            "stack", "locals", "globals", "p", "pp", "display", "undisplay", "graph",
            "guards", "cache", "h", "help", "sticky", "set"]
WORDS = ["0", "1", "-1", "7", "99999", "@2", "@3", "@-4", "graph", "resume", "f", "x",
         "__stack__", "__frame__", "__stack__[-1]", "graph_break.py:10", "nofile.py:1",
         "samples/graph_break.py:0", "__compiled_fn_*", "torch_dynamo_resume_in_*",
         "compile", "recompile", "graph-break", "exception", "all", "--raw",
         "--output-code", "x.sin()", "1/0", "None", "[1,2", ")", ",", ", x", ", 1/0",
         "width", "vi", "on", "off", "len(__stack__)", "'é∂'", "\t", "*", "?", "[]"]
SAFE_TEXT = st.text(alphabet=string.printable.replace("\n", "").replace("\r", "").replace("=", "")
                    + "éλ∑\x00\x1b\x7f", max_size=40)
ARGUMENT = st.one_of(st.sampled_from(WORDS), SAFE_TEXT, st.integers(-10**6, 10**6).map(str))


@st.composite
def command_line(draw) -> str:
    kind = draw(st.integers(0, 9))
    if kind <= 6:       # a known command with random or malformed arguments
        words = [draw(st.sampled_from(COMMANDS))] + draw(st.lists(ARGUMENT, max_size=3))
        line = " ".join(words)
    elif kind == 7:     # an expression
        line = draw(st.sampled_from(["x", "x + 1", "__stack__", "len(__stack__)", "1/0",
                                     "undefined", "x.shape", "[i for i in range(3)]",
                                     "{1: 2}[3]", "'a' * 5000", "x[99]"]))
    elif kind == 8:     # garbage, unicode, control characters, very long
        line = draw(st.one_of(SAFE_TEXT, st.just("λ" * 3000), st.just("\x1b[2J\x07")))
    else:
        line = ""       # an empty line repeats the last command
    # Nothing that would change the program: no assignment, no quitting, no `!`.
    banned = ("q", "quit", "exit", "!", "display", "set vi")
    if "=" in line or line.strip().startswith(banned) or "import" in line:
        return "stack"
    return line


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(command_line(), min_size=40, max_size=60))
def test_random_command_lines(tmp_path_factory, lines: list[str]) -> None:
    tmp_path = tmp_path_factory.mktemp("fuzz")
    run = run_dyndbg(SAMPLES / "graph_break.py", lines, tmp_path)
    reference = plain("graph_break.py")
    assert run.returncode == reference.returncode, run.stderr[-2000:]
    assert run.stdout == reference.stdout
    assert "Traceback" not in run.stderr and "Traceback" not in run.transcript
    assert "internal error" not in run.transcript
    # The prompt came back after the lines: either all were read (end of input)
    # or the program ran to its end first.
    prompts = run.transcript.count("(dyndbg) ")
    assert prompts > 1
    assert "end of input" in run.transcript or prompts <= len(lines) + 1
