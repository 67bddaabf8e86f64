"""Configuration: ~/.dyndbgrc and ./.dyndbgrc (as pdb's .pdbrc), --no-rc, aliases,
and `set` options from an rc file. The real CLI, with HOME and the working
directory pointed at temporary directories."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from harness import CALLABLE_FIRST, ROOT, SAMPLES, Run, plain, run_dyndbg
from transcript import PROMPT, no_traceback, segments

GRAPH_BREAK = SAMPLES / "graph_break.py"


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """(home, cwd): two empty directories; dyndbg importable from the cwd."""
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + old if old else ""))
    return home, cwd


def _run(dirs: tuple[Path, Path], tmp_path: Path, commands: list[str],
         options: list[str] | None = None) -> Run:
    home, cwd = dirs
    run = run_dyndbg(GRAPH_BREAK, commands, tmp_path=tmp_path, options=options, cwd=cwd,
                     home=home)
    no_traceback(run)
    return run


def _prompts(run: Run) -> list[str]:
    return [segment.command for segment in segments(run.transcript)]


def _output(run: Run, command: str) -> list[str]:
    """What the first prompt with this command printed."""
    for segment in segments(run.transcript):
        if segment.command == command:
            return segment.output
    raise AssertionError(f"no prompt {command!r} in:\n{run.transcript}")


def _ran_like_plain(run: Run) -> None:
    expected = plain("graph_break.py")
    assert (run.stdout, run.returncode) == (expected.stdout, expected.returncode), run.stderr


def test_home_rc_then_cwd_rc_then_c_option(dirs, tmp_path) -> None:
    home, cwd = dirs
    (home / ".dyndbgrc").write_text(
        "# home: a comment, not a command\n"
        "p 'home rc'\n"
        "\n"
        "   \n"
        "alias pa p %1 + %2\n")
    (cwd / ".dyndbgrc").write_text(
        "    # an indented comment\n"
        "p 'cwd rc'\n"
        "pa 40 2\n"
        "alias both p %1;; p %2\n"
        "both 'x1' 'x2'\n")
    run = _run(dirs, tmp_path, ["p 'stdin'", "c"], options=["-c", "p 'dash c'"])
    # pdb's order: ~/.dyndbgrc, ./.dyndbgrc, -c, then the input; echoed as -c commands are
    assert _prompts(run) == [
        "p 'home rc'", "alias pa p %1 + %2", "p 'cwd rc'", "pa 40 2",
        "alias both p %1;; p %2", "both 'x1' 'x2'", "p 'x2'",
        "p 'dash c'", "p 'stdin'", "c"], run.transcript
    assert "comment" not in run.transcript
    # blank lines are skipped, not 'repeat the last command'
    assert run.transcript.count("'home rc'\n") == 2, run.transcript   # echo + value
    assert _output(run, "pa 40 2") == ["42"]
    assert _output(run, "both 'x1' 'x2'") == ["'x1'"]
    assert _output(run, "p 'x2'") == ["'x2'"]
    # the rc commands ran at the first stop, after it was shown
    head = run.transcript.split(PROMPT, 1)[0]
    assert "> f [0/0]  instr 1/" in head, head
    _ran_like_plain(run)


def test_cwd_rc_that_is_the_home_rc_runs_once(dirs, tmp_path) -> None:
    home, _ = dirs
    (home / ".dyndbgrc").write_text("p 'once'\n")
    run = run_dyndbg(GRAPH_BREAK, ["c"], tmp_path=tmp_path, cwd=home, home=home)
    no_traceback(run)
    assert _prompts(run) == ["p 'once'", "c"], run.transcript


def test_no_rc_skips_both_files(dirs, tmp_path) -> None:
    home, cwd = dirs
    (home / ".dyndbgrc").write_text("p 'home rc'\nset width 20\n")
    (cwd / ".dyndbgrc").write_text("p 'cwd rc'\n")
    run = _run(dirs, tmp_path, ["locals", "c"], options=["--no-rc", "-c", "p 'dash c'"])
    assert _prompts(run) == ["p 'dash c'", "locals", "c"], run.transcript
    assert "rc'" not in run.transcript
    # the default width: the summary is whole
    assert any(line.endswith("Tensor f32[4] cpu [0, 1, 2, 3]")
               for line in _output(run, "locals")), run.transcript
    _ran_like_plain(run)


def test_set_options_from_rc(dirs, tmp_path) -> None:
    home, _ = dirs
    (home / ".dyndbgrc").write_text("set width 20\nset sticky on\nset vi on\n")
    run = _run(dirs, tmp_path, ["locals", "s", "c"])
    assert _prompts(run) == ["set width 20", "set sticky on", "set vi on", "locals", "s", "c"]
    assert _output(run, "set width 20") == ["width 20"]
    assert _output(run, "set sticky on") == ["sticky on"]
    # no prompt-toolkit prompt when stdin is a pipe: the usual one line, and on
    assert _output(run, "set vi on") == ["*** vi keys need the terminal prompt (not in plain mode)"]
    x_line = [line for line in _output(run, "locals") if re.match(r"^  x\s", line)]
    assert len(x_line) == 1, run.transcript
    # 20 characters of the 30 of "Tensor f32[4] cpu [0, 1, 2, 3]"
    assert x_line[0].endswith(" Tensor f32[4] cpu [… (30 chars)"), x_line
    # sticky: the instructions around the current one at the next stop
    step = _output(run, "s")
    assert any(re.match(r"^->\s+2 @\d+ ", line) for line in step), step
    assert "-" * 40 in step, step
    _ran_like_plain(run)


def test_unreadable_rc_is_one_line_and_the_session_goes_on(dirs, tmp_path) -> None:
    home, cwd = dirs
    (home / ".dyndbgrc").write_text("p 'home rc'\n")
    (cwd / ".dyndbgrc").mkdir()   # exists, cannot be read as a file
    run = _run(dirs, tmp_path, ["p 'still here'", "c"])
    mentions = [line for line in run.transcript.splitlines() + run.stderr.splitlines()
                if ".dyndbgrc" in line]
    assert mentions == [f"dyndbg: {cwd / '.dyndbgrc'} not read (Is a directory); skipped"], \
        run.transcript + run.stderr
    assert _prompts(run) == ["p 'home rc'", "p 'still here'", "c"], run.transcript
    assert _output(run, "p 'still here'") == ["'still here'"]
    _ran_like_plain(run)


# the command names the prompt completes, from the live session
NAMES = "p sorted(__import__('dyndbg.attach').attach.current().frontend.command_names())"
ALIAS_COMMANDS = [
    "alias",                              # none yet
    "alias sq p %1 * %1",
    "sq 7",
    "alias both p %1;; p %2",
    "both 'a' 'b';; p 'after'",           # the alias's ';;', then the line's
    "alias all p [%*]",
    "all 1, 2, 3",
    "alias rsq sq %1",                    # an alias of an alias
    "rsq 5",
    "sq",                                 # too few arguments
    "sq 1 2",                             # too many
    "alias bad p %2",                     # %1 skipped
    "alias ping pong",
    "alias pong ping",
    "ping",                               # a loop: one line, not a hang
    "alias ll ll --raw",                  # hides a command, and runs it: no loop
    "ll",
    "alias sq",
    "alias",
    "unalias sq",
    "sq 7",
    "unalias sq",
    "alias alias p 1",
    NAMES,
    "help", "help alias", "help unalias",
    "p 'prompt again'",
    "c",
]


@pytest.fixture(scope="module")
def alias_run(tmp_path_factory) -> Run:
    run = run_dyndbg(GRAPH_BREAK, ALIAS_COMMANDS, tmp_path=tmp_path_factory.mktemp("alias"))
    no_traceback(run)
    return run


def test_alias_parameters_at_the_prompt(alias_run: Run) -> None:
    run = alias_run
    assert _output(run, "alias") == ["No aliases."]
    assert _output(run, "alias sq p %1 * %1") == []        # silent, as pdb
    assert _output(run, "sq 7") == ["49"]
    assert _output(run, "both 'a' 'b';; p 'after'") == ["'a'"]
    prompts = _prompts(run)
    at = prompts.index("both 'a' 'b';; p 'after'")
    assert prompts[at:at + 3] == ["both 'a' 'b';; p 'after'", "p 'b'", "p 'after'"], prompts
    assert _output(run, "all 1, 2, 3") == ["[1, 2, 3]"]
    assert _output(run, "rsq 5") == ["25"]


def test_alias_errors_are_one_line(alias_run: Run) -> None:
    run = alias_run
    assert _output(run, "sq") == ["*** not enough arguments for alias 'sq' (it takes 1)"]
    assert _output(run, "sq 1 2") == ["*** too many arguments for alias 'sq' (it takes 1)"]
    assert _output(run, "alias bad p %2") == ["*** parameters must be consecutive: %1, %2, ..."]
    assert _output(run, "ping") == ["*** alias loop: ping -> pong -> ping"]
    assert _output(run, "alias alias p 1") == \
        ["*** 'alias' cannot be an alias (it could not be undone)"]
    assert _output(run, "p 'prompt again'") == ["'prompt again'"]


def test_alias_hiding_a_command_runs_it(alias_run: Run) -> None:
    listing = _output(alias_run, "ll")
    # --raw: dynamo's globals under their real names
    graph = r"__compiled_fn_\w+ \+ NULL" if CALLABLE_FIRST else r"NULL \+ __compiled_fn_\d+"
    assert any(re.search(rf"LOAD_GLOBAL +{graph}", line) for line in listing), \
        listing[:20]


def test_alias_listing_and_unalias(alias_run: Run) -> None:
    run = alias_run
    assert _output(run, "alias sq") == ["sq = p %1 * %1"]
    listing = [segment.output for segment in segments(run.transcript)
               if segment.command == "alias"][1]
    assert listing == ["all = p [%*]", "both = p %1;; p %2", "ll = ll --raw", "ping = pong",
                       "pong = ping", "rsq = sq %1", "sq = p %1 * %1"], listing
    assert _output(run, "unalias sq") == []
    sq_again = [segment.output for segment in segments(run.transcript)
                if segment.command == "sq 7"][1]
    assert sq_again == ["*** unknown command or invalid Python: 'sq 7' (try 'help')"], sq_again
    assert [segment.output for segment in segments(run.transcript)
            if segment.command == "unalias sq"][1] == ["*** no alias 'sq'"]


def test_aliases_complete_as_command_names(alias_run: Run) -> None:
    names = _output(alias_run, NAMES)
    assert len(names) == 1, names
    assert "'rsq'" in names[0] and "'alias'" in names[0] and "'unalias'" in names[0], names
    assert "'sq'" not in names[0], names   # unaliased


def test_help_lists_alias_and_unalias(alias_run: Run) -> None:
    run = alias_run
    other = [line for line in _output(run, "help") if line.strip().startswith("other")]
    assert other and "alias, unalias" in other[0], other
    assert _output(run, "help alias")[0] == "alias [NAME [COMMAND]]"
    assert _output(run, "help unalias")[0] == "unalias NAME"
