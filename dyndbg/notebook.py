"""dyndbg in IPython and Jupyter: `%load_ext dyndbg`.

    %%dyndbg [-c COMMAND]... [--record] [--post-mortem] [--trace] [--catch-trace FUNC]
    <the cell, run under dyndbg>

    %dyndbg [options] STATEMENT      one line under dyndbg
    %dyndbg                          post mortem of the last exception, as %debug

The cell runs in the notebook's namespace, as IPython runs a cell (its
syntax transformed, its source kept for tracebacks and `list`), and its
last expression's value is the cell's result. The prompt reads each
command where the cell runs: in a Jupyter kernel from the notebook (an input
request, the box the notebook shows; ui/terminal/reader.py's KernelReader), in
IPython's terminal with dyndbg's own prompt-toolkit prompt, as at a
terminal. Options as the CLI's; `.dyndbgrc` commands run first, as there.
"""
from __future__ import annotations

import ast
import re
import shlex
import sys
from typing import Any, NamedTuple

USAGE = ("usage: %%dyndbg [-c COMMAND]... [--record] [--post-mortem] [--trace] "
         "[--catch-trace FUNC] (a cell), "
         "%dyndbg [options] STATEMENT, or %dyndbg alone: post mortem of the last exception")
_OPTION = re.compile(r"""\s*(-c|--command|--catch-trace)\s+("[^"]*"|'[^']*'|\S+)"""
                     r"""|\s*(--record|--post-mortem|--trace)(?=\s|$)""")


class Options(NamedTuple):
    commands: list[str]
    record: bool
    post_mortem: bool
    trace: bool
    catch_trace: str | None = None     # --catch-trace FUNC


def parse(line: str) -> tuple[Options, str]:
    """The options at the start of a magic's line, and the statement after them."""
    commands: list[str] = []
    catch_trace: str | None = None
    flags: set[str] = set()
    rest = line
    while True:
        found = _OPTION.match(rest)
        if found is None:
            break
        if found.group(1):
            value = shlex.split(found.group(2))[0] if found.group(2)[0] in "\"'" \
                else found.group(2)
            if found.group(1) == "--catch-trace":
                catch_trace = value
            else:
                commands.append(value)
        else:
            flags.add(found.group(3))
        rest = rest[found.end():]
    statement = rest.strip()
    if statement.startswith("-") and not statement.startswith("-("):
        raise ValueError(f"unknown option {statement.split()[0]!r}; {USAGE}")
    return Options(commands, "--record" in flags, "--post-mortem" in flags,
                   "--trace" in flags, catch_trace), statement


def run(shell: Any, source: str, options: Options) -> Any:
    """Run `source` (a cell or a statement) in the shell's namespace under dyndbg;
    the value of its last expression."""
    from dyndbg import api
    from dyndbg.attach import set_options
    with api.debug(commands=options.commands) as session:
        engine = session.engine
        assert engine is not None
        set_options(engine, post_mortem=options.post_mortem, record=options.record,
                    trace=options.trace, catch_trace=options.catch_trace)
        try:
            return _execute(shell, source)
        except api.DyndbgQuit:
            raise
        except BaseException as error:
            if options.post_mortem and not engine.detached:
                if not engine.post_mortem(error.__traceback__, error):
                    engine.frontend.message("dyndbg: the exception did not come through "
                                            "dynamo-generated code; no post-mortem stop")
            raise


def _execute(shell: Any, source: str) -> Any:
    """As IPython runs a cell: transformed, its source cached under the cell's
    file name, the last expression evaluated for its value."""
    transformed = shell.transform_cell(source)
    filename = shell.compile.cache(transformed)
    tree = ast.parse(transformed, filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    namespace = shell.user_ns
    exec(compile(ast.Module(tree.body, type_ignores=[]), filename, "exec"), namespace)
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), filename, "eval"), namespace)


def post_mortem_of_last() -> None:
    """`%dyndbg` alone: the REPL at the generated frame the last exception came
    through, as %debug opens pdb at the last traceback."""
    error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if error is None:
        print("dyndbg: no exception to look at yet (as %debug: after a cell that failed)")
        return
    from dyndbg import api
    api.post_mortem(error)


def load_ipython_extension(shell: Any) -> None:
    """`%load_ext dyndbg`: registers %dyndbg and %%dyndbg."""
    from IPython.core.magic import Magics, line_cell_magic, magics_class

    @magics_class
    class DyndbgMagics(Magics):
        @line_cell_magic
        def dyndbg(self, line: str, cell: str | None = None) -> Any:
            """%%dyndbg [-c COMMAND]... [--record] [--post-mortem] [--trace] [--catch-trace FUNC]: the
            cell under dyndbg. %dyndbg [options] STATEMENT: one line.
            %dyndbg alone: post mortem of the last exception, as %debug."""
            try:
                options, statement = parse(line)
            except ValueError as error:
                print(f"dyndbg: {error}")
                return None
            if cell is None and not statement:
                post_mortem_of_last()
                return None
            if cell is not None and statement:
                print(f"dyndbg: {statement!r} after the options: {USAGE}")
                return None
            return run(self.shell, cell if cell is not None else statement, options)

    shell.register_magics(DyndbgMagics)
