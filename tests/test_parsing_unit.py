"""Fast unit tests of what the prompt parses (dyndbg/ui/text/parsing.py) and of help
derived from the `do_*` docstrings: no torch, no subprocess."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from dyndbg.engine.targets import FunctionTarget, GraphCallTarget, LineTarget, ResumeTarget
from dyndbg.ui.text.parsing import (BreakpointRef, CommandError, InstructionSpec, ListRange, Place,
                               Split, check_alias_body, expand_aliases, leading_word,
                               parse_breakpoint_refs, parse_count, parse_int, parse_list_range,
                               parse_location, parse_numbers, split_commands, split_condition,
                               split_expressions,
                               substitute_alias)


def error_of(function, *args) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(CommandError) as raised:
        function(*args)
    return str(raised.value)


# -- numbers -------------------------------------------------------------------------------------
def test_parse_int() -> None:
    assert parse_int(" -3 ", "count") == -3
    assert error_of(parse_int, "3.0", "step count") == "step count must be a whole number, not '3.0'"
    assert error_of(parse_int, "", "width") == "width must be a whole number, not ''"


def test_parse_numbers_takes_spaces_and_commas() -> None:
    assert parse_numbers("1 2,3, 4") == [1, 2, 3, 4]
    assert parse_numbers(" , ") == []
    assert error_of(parse_numbers, "1 x") == "breakpoint number must be a whole number, not 'x'"
    assert error_of(parse_numbers, "2 y", "display number").startswith("display number ")


def test_parse_count() -> None:
    assert parse_count("", "step count") == 1
    assert parse_count("7", "step count") == 7
    assert error_of(parse_count, "0", "step count") == "step count must be at least 1"
    assert error_of(parse_count, "-2", "step count") == "step count must be at least 1"


# -- lines ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("line, word", [
    ("p(x)", "p"), ("b 12", "b"), ("c=3", "c"), ("x.shape", "x"), ("__stack__[0]", "__stack__"),
    ("!p 1", ""), ("?", ""), ("", ""), ("step2 1", "step2"),
])
def test_leading_word(line: str, word: str) -> None:
    assert leading_word(line) == word


def test_split_expressions() -> None:
    """`graph run`'s INPUTS: split at spaces and commas outside brackets and strings;
    each part is one Python expression."""
    cases = {
        "x y": ["x", "y"],
        " 1  torch.ones(2, 3) x*2 ": ["1", "torch.ones(2, 3)", "x*2"],
        "x, y,2": ["x", "y", "2"],
        "(y + 1) [1, 2] {'k': (1, 2)} f(a)[0].t()": ["(y + 1)", "[1, 2]", "{'k': (1, 2)}",
                                                     "f(a)[0].t()"],
        """'a b' "c, d" '''e ' f''' 'g\\' h'""": ["'a b'", '"c, d"', "'''e ' f'''",
                                                  "'g\\' h'"],
        "": [],
    }
    for text, parts in cases.items():
        assert split_expressions(text) == parts, text
        for part in parts:
            ast.parse(part, mode="eval")
    assert error_of(split_expressions, "x (y") == "unclosed '(' in 'x (y'"
    assert error_of(split_expressions, "x y)") == "unbalanced ')' in 'x y)'"
    assert error_of(split_expressions, "[x)") == "unbalanced ')' in '[x)'"
    assert error_of(split_expressions, "x 'y") == "unterminated string in \"x 'y\""


def test_split_commands() -> None:
    assert split_commands("p 1") == Split("p 1", None)
    assert split_commands("p 1 ;; p 2 ;; p 3") == Split("p 1", "p 2 ;; p 3")
    assert split_commands("p 1;;p 2") == Split("p 1", "p 2")
    # nothing after the last ';;' is no command (an empty one would repeat the last, forever)
    assert split_commands("p 1 ;;") == Split("p 1", None)
    assert split_commands("p 1 ;;   ") == Split("p 1", None)
    # as pdb: Python lines and alias definitions keep their ';;'
    assert split_commands("!x = 1;; y = 2") == Split("!x = 1;; y = 2", None)
    assert split_commands("  !p 1;;p 2") == Split("  !p 1;;p 2", None)
    assert split_commands("alias both p %1;; p %2") == Split("alias both p %1;; p %2", None)
    # ';;' inside a string is still a separator (pdb does the same)
    assert split_commands("p ';;'") == Split("p '", "'")


# -- aliases -------------------------------------------------------------------------------------
def test_substitute_alias() -> None:
    assert substitute_alias("sq", "p %1 * %1", ["7"]) == "p 7 * 7"
    assert substitute_alias("all", "p [%*]", ["1,", "2"]) == "p [1, 2]"
    assert substitute_alias("all", "p [%*]", []) == "p []"
    assert substitute_alias("two", "p %2 - %1", ["1", "5"]) == "p 5 - 1"
    assert substitute_alias("mix", "p %1 + len([%*])", ["a", "b"]) == "p a + len([a b])"
    assert error_of(substitute_alias, "sq", "p %1 * %1", []) == \
        "not enough arguments for alias 'sq' (it takes 1)"
    assert error_of(substitute_alias, "sq", "p %1", ["1", "2"]) == \
        "too many arguments for alias 'sq' (it takes 1)"
    assert error_of(substitute_alias, "ll", "ll --raw", ["x"]) == \
        "too many arguments for alias 'll' (it takes 0)"


def test_check_alias_body() -> None:
    check_alias_body("p %1 %2")
    check_alias_body("p %2 %1")
    check_alias_body("p %3 %*")   # with %*, every word has a place anyway
    check_alias_body("p 1")
    assert error_of(check_alias_body, "p %2") == "parameters must be consecutive: %1, %2, ..."
    assert error_of(check_alias_body, "p %1 %3") == "parameters must be consecutive: %1, %2, ..."


def expand(line: str, aliases: dict[str, str], commands: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    queued: list[str] = []
    result = expand_aliases(line, aliases, lambda name: name in commands,
                            lambda rest: queued.insert(0, rest))
    return result, queued


def test_expand_aliases() -> None:
    assert expand("p 1", {"sq": "p %1"}) == ("p 1", [])
    assert expand("", {"sq": "p %1"}) == ("", [])
    assert expand("sq 3", {"sq": "p %1 * %1"}) == ("p 3 * 3", [])
    # an alias of an alias, each with its own ';;' tail: the inner one runs first
    aliases = {"a": "b x ;; p 'a tail'", "b": "p %1 ;; p 'b tail'"}
    assert expand("a", aliases) == ("p x", ["p 'b tail'", "p 'a tail'"])


def test_expand_aliases_loops() -> None:
    # a name met again that is also a command runs the command
    assert expand("ll", {"ll": "ll --raw"}, commands=("ll",)) == ("ll --raw", [])
    with pytest.raises(CommandError, match=r"^alias loop: ping -> pong -> ping$"):
        expand("ping", {"ping": "pong", "pong": "ping"})
    # a tail queued before the loop was found stays queued (as the session has always done)
    queued: list[str] = []
    with pytest.raises(CommandError):
        expand_aliases("a", {"a": "b ;; p 1", "b": "a"}, lambda name: False, queued.append)
    assert queued == ["p 1"]


# -- breakpoint locations ------------------------------------------------------------------------
@pytest.mark.parametrize("spec, expected", [
    ("12", InstructionSpec(Place.INDEX, 12)),
    ("  0 ", InstructionSpec(Place.INDEX, 0)),
    ("-1", InstructionSpec(Place.INDEX, -1)),       # the session says it is out of range
    ("@34", InstructionSpec(Place.OFFSET, 34)),
    ("@ 34", InstructionSpec(Place.OFFSET, 34)),
    ("@-2", InstructionSpec(Place.OFFSET, -2)),
])
def test_parse_location_instructions(spec: str, expected: InstructionSpec) -> None:
    assert parse_location(spec) == expected


def test_parse_location_lines() -> None:
    target = parse_location("samples/graph_break.py:10")
    assert isinstance(target, LineTarget)
    assert (target.filename, target.line) == ("samples/graph_break.py", 10)
    target = parse_location("C:\\work\\x.py : 7")    # the last colon; spaces around it go
    assert isinstance(target, LineTarget)
    assert (target.filename, target.line) == ("C:\\work\\x.py", 7)
    assert error_of(parse_location, "x.py:0") == "line number must be at least 1"
    # a colon not followed by a number is no FILE:LINE, and no name either
    assert error_of(parse_location, "x.py:abc").startswith("bad breakpoint location 'x.py:abc'")


@pytest.mark.parametrize("spec, expected", [
    ("graph 2", GraphCallTarget("__compiled_fn_*", 2)),
    ("graph *", GraphCallTarget("__compiled_fn_*", None)),
    ("__compiled_fn_3", GraphCallTarget("__compiled_fn_3", 3)),
    ("__compiled_fn_3_58b2a1", GraphCallTarget("__compiled_fn_3_58b2a1", 3)),
    ("__compiled_fn_*", GraphCallTarget("__compiled_fn_*", None)),
    ("resume", ResumeTarget()),
    ("torch_dynamo_resume_in_f*", ResumeTarget("torch_dynamo_resume_in_f*")),
    ("__resume_at_*", ResumeTarget("__resume_at_*")),
    ("<resume in f>", ResumeTarget("<resume in f>")),
    ("f", FunctionTarget("f")),
    ("Class.method", FunctionTarget("Class.method")),
    ("module.f*", FunctionTarget("module.f*")),
    ("<lambda>", FunctionTarget("<lambda>")),
    ("  f  ", FunctionTarget("f")),
])
def test_parse_location_names(spec: str, expected: object) -> None:
    assert parse_location(spec) == expected


@pytest.mark.parametrize("spec, message", [
    ("", "missing breakpoint location"),
    ("   ", "missing breakpoint location"),
    ("@x", "instruction offset must be a whole number, not 'x'"),
    ("@", "instruction offset must be a whole number, not ''"),
    ("graph", "usage: break graph N"),
    ("graph x", "usage: break graph N"),
    ("graph 1 2", "usage: break graph N"),
    ("²", "instruction index must be a whole number, not '²'"),
    ("--5", "instruction index must be a whole number, not '--5'"),
])
def test_parse_location_errors(spec: str, message: str) -> None:
    assert error_of(parse_location, spec) == message


@pytest.mark.parametrize("spec", ["1abc", "a b", "f(x)", "foo:bar", "x;y", "é"])
def test_parse_location_refuses_what_cannot_be_a_name(spec: str) -> None:
    assert error_of(parse_location, spec).startswith(f"bad breakpoint location {spec!r}")


def test_split_condition() -> None:
    assert split_condition("f") == ("f", None)
    assert split_condition("f, x > 0") == ("f", "x > 0")
    assert split_condition("f,") == ("f", None)
    assert split_condition("f, d[1, 2]") == ("f", "d[1, 2]")   # only the first comma splits
    assert error_of(split_condition, "f, (") == "invalid condition '('"
    # gdb's form
    assert split_condition("f if x > 0") == ("f", "x > 0")
    assert split_condition("torch_dynamo_resume_in_* if n > 2") == ("torch_dynamo_resume_in_*",
                                                                  "n > 2")
    assert split_condition("f, a if b else c") == ("f", "a if b else c")   # pdb's form wins
    assert split_condition("iffy") == ("iffy", None)
    assert error_of(split_condition, "f if (") == "invalid condition '('"


@pytest.mark.parametrize("spec", ["torch_dynamo_resume_in_* n > 2", "__compiled_fn_* x",
                                  "__resume_at_1 y"])
def test_a_name_with_spaces_is_refused(spec: str) -> None:
    # once taken as a glob that never resolves
    assert error_of(parse_location, spec) == (
        f"bad breakpoint location {spec!r}: a name has no spaces "
        "(a condition goes after ',' or 'if')")


def test_parse_breakpoint_refs() -> None:
    assert parse_breakpoint_refs("1 2.1, 3") == [BreakpointRef(1, None), BreakpointRef(2, 1),
                                                 BreakpointRef(3, None)]
    assert error_of(parse_breakpoint_refs, "1.x") == \
        "location number must be a whole number, not 'x'"
    assert error_of(parse_breakpoint_refs, "a.1") == \
        "breakpoint number must be a whole number, not 'a'"


# -- list ----------------------------------------------------------------------------------------
def test_parse_list_range() -> None:
    assert parse_list_range("12", 40) == ListRange(7, 17)
    assert parse_list_range("2", 40) == ListRange(-3, 7)      # clamped by the caller
    assert parse_list_range(".", 40) == ListRange(35, 45)     # around the current one
    assert parse_list_range("0, 4", 40) == ListRange(0, 4)
    assert parse_list_range("5, 5", 40) == ListRange(5, 5)
    # as pdb: a second number smaller than the first is a count
    assert parse_list_range("5 2", 40) == ListRange(5, 6)
    assert parse_list_range("5, 1", 40) == ListRange(5, 5)
    assert error_of(parse_list_range, "5, 0", 40) == "count must be at least 1"
    usage = "usage: list [INDEX | . | FIRST, LAST | FIRST, COUNT]"
    assert error_of(parse_list_range, "1 2 3", 40) == usage
    assert error_of(parse_list_range, ",", 40) == usage
    assert error_of(parse_list_range, "x", 40) == "instruction index must be a whole number, not 'x'"
    assert error_of(parse_list_range, ". 3", 40) == \
        "instruction index must be a whole number, not '.'"


# -- help from the docstrings ---------------------------------------------------------------------
def test_help_comes_from_the_families_docstrings() -> None:
    from dyndbg.ui.commands.running import RunningCommands
    from dyndbg.ui.commands.settings import command_help, commands_of, usage

    family = RunningCommands(host=None)  # type: ignore[arg-type]
    names = [c.__name__ for c in commands_of(family)]
    assert names == ["do_step", "do_stepi", "do_next", "do_nextline", "do_stepline", "do_return",
                     "do_until", "do_continue", "do_quit"]
    assert [usage(c) for c in commands_of(family)][:3] == ["s(tep)", "si", "n(ext)"]
    # an alias is the same function, so `help c` is continue's help
    assert family.do_c.__func__ is family.do_continue.__func__  # type: ignore[attr-defined]
    assert command_help(family.do_until.__doc__ or "") == [
        "unt(il) [INDEX]",
        "  Run until an instruction of the selected frame with an index greater",
        "  than its current one (past a loop), or at least INDEX; or until the",
        "  frame returns."]
    # a docstring's own indentation is kept under the usage line (break's table)
    assert command_help("""b [X]
        X is one of:
          INDEX      an instruction
                     of this code

        The end.""") == ["b [X]", "  X is one of:", "    INDEX      an instruction",
                         "               of this code", "", "  The end."]


def test_help_table_aligns_every_row_whatever_the_titles() -> None:
    """`help`'s rows: each family's commands start in one column, however long
    the longest title (the families' own, and those of a stop while dynamo compiles)."""
    from dyndbg.ui.commands.breakpoints import BreakpointCommands
    from dyndbg.ui.commands.edits import CacheCommands
    from dyndbg.ui.commands.compiled import DynamoCommands
    from dyndbg.ui.commands.history import HistoryCommands
    from dyndbg.ui.commands.looking import LookingCommands
    from dyndbg.ui.commands.running import RunningCommands
    from dyndbg.ui.commands.settings import SessionCommands, help_table
    from dyndbg.ui.commands.compile_stops import CompileStopCommands

    families = [RunningCommands, BreakpointCommands, DynamoCommands, CacheCommands,
                LookingCommands, HistoryCommands, SessionCommands]
    for titles in ([cls.title for cls in families], [CompileStopCommands.title, "as anywhere"],
                   ["a", "a much longer title than any family has"]):
        rows = [(title, f"commands of {title}") for title in titles]
        lines = help_table(rows)
        columns = {line.index(f"commands of {title}") for line, title in zip(lines, titles)}
        assert len(columns) == 1, lines
        longest = max(len(title) for title in titles)
        assert columns == {2 + longest + 2}, lines
        assert all(line.startswith(f"  {title} ") for line, title in zip(lines, titles)), lines
    assert help_table([]) == []


def test_a_command_refused_while_dynamo_compiles_names_those_that_work_there() -> None:
    """At a stop while dynamo compiles, a command about generated code says which
    commands work there: each one it names runs there, and each one that runs
    there is named (issue 49: the list was written out by hand)."""
    import inspect
    from dyndbg.ui.commands.breakpoints import BreakpointCommands
    from dyndbg.ui.commands.edits import CacheCommands
    from dyndbg.ui.commands.compiled import DynamoCommands
    from dyndbg.ui.commands.history import HistoryCommands
    from dyndbg.ui.commands.looking import LookingCommands
    from dyndbg.ui.commands.running import RunningCommands
    from dyndbg.ui.commands.settings import SessionCommands, commands_of
    from dyndbg.ui.commands.compile_stops import CompileStopCommands

    families = [cls(host=None) for cls in (  # type: ignore[arg-type]
        RunningCommands, BreakpointCommands, DynamoCommands, CacheCommands,
        LookingCommands, HistoryCommands, SessionCommands)]
    tracing = CompileStopCommands(host=None)  # type: ignore[arg-type]

    def works(name: str) -> bool:      # the command itself, not the refusal standing in for it
        return inspect.ismethod(tracing.command(name, families))

    with pytest.raises(CommandError) as refused:
        tracing.command("up", families)("")  # type: ignore[misc]
    listed = re.fullmatch(r"up: dynamo is compiling; no generated code runs yet "
                          r"\(at this stop: (.*)\)", str(refused.value))
    assert listed is not None, refused.value
    named = {word.replace("(", "").replace(")", "")
             for word in re.split(r", |; as anywhere: ", listed.group(1))}
    assert all(works(name) for name in named), [n for n in named if not works(n)]
    working = {tracing.command(c.__name__[3:], families).__name__[3:]  # type: ignore[union-attr]
               for family in [tracing, *families] for c in commands_of(family)
               if works(c.__name__[3:])}
    assert working - named == set(), working - named
    assert not works("up") and not works("patch") and works("step") and works("help")


def test_every_command_has_a_usage_line() -> None:
    from dyndbg.ui.commands.breakpoints import BreakpointCommands
    from dyndbg.ui.commands.compiled import DynamoCommands
    from dyndbg.ui.commands.looking import LookingCommands
    from dyndbg.ui.commands.running import RunningCommands
    from dyndbg.ui.commands.settings import SessionCommands, commands_of

    for cls in (RunningCommands, BreakpointCommands, DynamoCommands, LookingCommands,
                SessionCommands):
        for command in commands_of(cls(host=None)):  # type: ignore[arg-type]
            doc = command.__doc__ or ""
            first = doc.splitlines()[0] if doc else ""
            name = command.__name__[3:]
            # the usage names the command: `unt(il)` is until once the parentheses go
            assert name in first.replace("(", "").replace(")", ""), (cls.__name__, name, first)


def test_no_module_of_the_ui_imports_the_session_back() -> None:
    """The five-file circle stays broken: only the wiring (attach.py) imports
    session.py; the families, completer and reader talk to host.Host."""
    ui = Path(__file__).resolve().parent.parent / "dyndbg" / "ui"
    for path in sorted(ui.rglob("*.py")):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                imported.add(node.module or "")
                imported.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        assert "dyndbg.ui.session" not in imported, path.name


@pytest.mark.parametrize("line", ["    114 @418          SWAP                 2",
                                  "  * 116 @422          LOAD_CONST           100",
                                  "->  117 @424    B1    BINARY_OP            +",
                                  "->* 117 @424      >> BINARY_OP            +"])
def test_colour_keeps_a_listing_line_as_it_is(line: str) -> None:
    # Painting once dropped the space after the offset, and missed edited lines (`*`).
    from dyndbg.ui.text.style import Highlighter
    painted = Highlighter(True).disassembly_line(line)
    assert "\x1b[" in painted
    assert re.sub(r"\x1b\[[0-9;]*m", "", painted) == line
