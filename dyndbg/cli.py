"""Command line: `python -m dyndbg [-c COMMAND]... (SCRIPT | -m MODULE) [ARGS...]`.

pdb-compatible. --version and --help never import torch. The target runs as
__main__ with sys.argv and sys.path[0] set as Python sets them; the process
exits with the target's own status and, for an uncaught exception, the same
traceback as without dyndbg.
"""
from __future__ import annotations

import argparse
import builtins
import os
import runpy
import signal
import sys
import traceback
import types

from dyndbg import __version__
from dyndbg.ownframes import is_own_frame

USAGE = ("python -m dyndbg [-c COMMAND]... [--out FILE] [--no-color] [--post-mortem] "
         "[--record] [--trace] [--catch-trace FUNC] [--no-rc] [--rank R] "
         "[--listen [HOST:]PORT [--wait-for-client]] (SCRIPT | -m MODULE) [ARGS...]")
DESCRIPTION = """\
Run a Python script and stop in the bytecode that TorchDynamo (torch.compile)
generates: the transformed code of compiled functions and the resume functions
after graph breaks. By default dyndbg stops at the first generated instruction.
Commands are pdb's, at instruction level: type 'help' at the (dyndbg) prompt.
When stdin is not a terminal, commands are read from it line by line; at end
of input the program runs to completion. The commands in ~/.dyndbgrc and
./.dyndbgrc run at the first stop, before -c commands.

Under torchrun (RANK set), every rank is debugged, its output prefixed with
[rank N], and only rank 0 reads commands; with --rank R only rank R is.

From a program: dyndbg.breakpoint() in a compiled function, dyndbg.set_trace()
(or PYTHONBREAKPOINT=dyndbg.set_trace), `with dyndbg.debug():`,
dyndbg.post_mortem()."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dyndbg", usage=USAGE,
                                     description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-c", "--command", action="append", default=[], metavar="COMMAND",
                        help="run COMMAND at the first stop (repeatable), as pdb's -c")
    parser.add_argument("-m", dest="module", metavar="MODULE",
                        help="run a library module as a script, as python -m")
    parser.add_argument("--out", metavar="FILE",
                        help="write the debugger's own output to FILE instead of stdout")
    parser.add_argument("--no-color", action="store_true",
                        help="no colours, toolbar or escape codes (also: NO_COLOR set)")
    parser.add_argument("--post-mortem", action="store_true",
                        help="after an uncaught exception raised through dynamo-generated "
                             "code, stop at the failing instruction, as pdb's post mortem "
                             "(generated code runs traced, to keep the stack the failing "
                             "call saw)")
    parser.add_argument("--record", action="store_true",
                        help="record every generated instruction that runs, with its "
                             "stack and locals, from the start, as `record on`: `back` "
                             "steps back through it")
    parser.add_argument("--trace", action="store_true",
                        help="print every generated instruction before it runs, and every "
                             "generated frame's start and return, as `trace on` (with "
                             "-c c: the last line printed names the instruction that "
                             "crashed the process)")
    parser.add_argument("--catch-trace", metavar="FUNC",
                        help="stop while dynamo compiles, when it starts tracing a function "
                             "FUNC names (a glob; '*' every one), as `catch trace FUNC` set "
                             "before the program's first compile")
    parser.add_argument("--no-rc", action="store_true",
                        help="do not run the commands of ~/.dyndbgrc and ./.dyndbgrc")
    parser.add_argument("--rank", type=int, metavar="R",
                        help="under torchrun: debug rank R only; the other ranks run "
                             "without the debugger")
    parser.add_argument("--listen", metavar="[HOST:]PORT",
                        help="serve the Debug Adapter Protocol on HOST:PORT (127.0.0.1 unless "
                             "a host is given) for an editor to attach to, instead of the "
                             "prompt; anyone who can reach the port can run code in the "
                             "program")
    parser.add_argument("--wait-for-client", action="store_true",
                        help="with --listen: start the program once an editor has attached "
                             "and set its breakpoints")
    # The stdio adapter's child (dyndbg/dap/adapter.py): connect back to it.
    parser.add_argument("--dap-connect", metavar="HOST:PORT", help=argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version=f"dyndbg {__version__}")
    parser.add_argument("target", nargs="?", metavar="SCRIPT", help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return parser


def _fail(message: str, status: int = 2) -> int:
    sys.stderr.write(f"dyndbg: {message}\n")
    return status


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the script (or -m MODULE) belongs to the target.
    options, target_argv = _split_argv(argv)
    args = _parser().parse_args(options)
    if args.module is None and args.target is None:
        _parser().print_usage(sys.stderr)
        return _fail("a script or -m MODULE is required")
    if args.rank is not None and args.rank < 0:
        return _fail(f"--rank must be 0 or more, not {args.rank}")
    if args.wait_for_client and args.listen is None:
        return _fail("--wait-for-client goes with --listen")
    for option in ("listen", "dap_connect"):
        value = getattr(args, option)
        if value is not None and _host_port(value) is None:
            return _fail(f"--{option.replace('_', '-')} {value!r}: expected [HOST:]PORT")
    if args.module is not None:
        return _run(args, module=args.module, target_argv=[args.module] + target_argv)
    path = args.target
    if not os.path.exists(path):
        return _fail(f"can't open file {path!r}: no such file")
    if os.path.isdir(path):
        return _fail(f"{path!r} is a directory, not a script")
    try:
        with open(path, "rb") as handle:
            source = handle.read()
        code = compile(source, os.path.abspath(path), "exec")
    except SyntaxError as error:
        # The same report python gives, without dyndbg's frames.
        traceback.print_exception(type(error), error, None)
        return 1
    except (OSError, ValueError) as error:
        return _fail(f"can't read {path!r}: {error}")
    return _run(args, code=code, script=path, target_argv=[path] + target_argv)


def _split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """dyndbg's own options, then the target and its arguments."""
    takes_value = {"-c", "--command", "--out", "--rank", "--listen", "--dap-connect",
                   "--catch-trace"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return argv[:i + 2], argv[i + 2:]
        if arg in takes_value:
            i += 2
            continue
        if arg.startswith("-") and arg != "-":
            i += 1
            continue
        return argv[:i + 1], argv[i + 1:]
    return argv, []


def _run(args: argparse.Namespace, target_argv: list[str], code: types.CodeType | None = None,
         script: str | None = None, module: str | None = None) -> int:
    """Run the target; an editor attached through --listen hears how it ended."""
    try:
        status = _run_target(args, target_argv, code, script, module)
    except SystemExit as exit:
        exit_code = exit.code
        _tell_editor(args, exit_code if isinstance(exit_code, int) else (0 if exit_code is None else 1))
        raise
    _tell_editor(args, status)
    return status


def _tell_editor(args: argparse.Namespace, status: int) -> None:
    if args.listen is not None:
        from dyndbg.dap import server
        server.program_ended(status)


def _run_target(args: argparse.Namespace, target_argv: list[str], code: types.CodeType | None,
                script: str | None, module: str | None) -> int:
    debug, prefix_rank = _rank_plan(args)
    if debug:
        from dyndbg.engine.debugger import DyndbgQuit
        quitting: type[BaseException] = DyndbgQuit
        failed = _attach(args, prefix_rank)
        if failed is not None:
            return failed
    else:
        # Not the rank being debugged: run as plain python, dyndbg's engine
        # (and torch, which it imports) not even loaded.
        quitting = _NeverRaised

    sys.argv[:] = target_argv
    try:
        if module is not None:
            sys.path[0] = os.getcwd()
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            assert code is not None and script is not None
            sys.path[0] = os.path.dirname(os.path.realpath(script))
            main_module = types.ModuleType("__main__")
            main_module.__dict__.update({"__file__": os.path.abspath(script),
                                         "__builtins__": builtins, "__cached__": None})
            sys.modules["__main__"] = main_module
            exec(code, main_module.__dict__)
    except SystemExit:
        raise
    except quitting:
        return 0
    except BaseException as error:  # noqa: BLE001 - report it as python would
        _report_uncaught(error)
        if debug and not isinstance(error, KeyboardInterrupt):
            _post_mortem(error)   # with --post-mortem (or an editor's filter for it)
        if isinstance(error, KeyboardInterrupt):
            # As python does: die by SIGINT, so the parent sees the signal.
            sys.stdout.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        return 1
    return 0


class _NeverRaised(BaseException):
    """Stands for DyndbgQuit where no debugger is attached."""


def _rank_plan(args: argparse.Namespace) -> tuple[bool, int | None]:
    """Under torchrun: (debug this process?, the rank to prefix its output with)."""
    from dyndbg import distributed
    rank = distributed.env_rank()
    if args.rank is None:
        return True, rank  # every rank debugs; outside torchrun rank is None: no prefix
    if rank is None:
        sys.stderr.write(f"dyndbg: --rank {args.rank}: {distributed.why_no_rank()}; "
                         "debugging this process\n")
        return True, None
    world = distributed.world_size()
    if rank == 0 and world is not None and args.rank >= world:
        sys.stderr.write(f"dyndbg: --rank {args.rank} but WORLD_SIZE is {world}: "
                         "no rank is debugged\n")
    return rank == args.rank, None


def _host_port(text: str) -> tuple[str, int] | None:
    """`5678` or `HOST:5678` (loopback unless a host is given)."""
    host, _, port = text.rpartition(":")
    if not port.isdecimal() or int(port) > 65535:
        return None
    return host or "127.0.0.1", int(port)


def _attach_editor(args: argparse.Namespace) -> int | None:
    """The Debug Adapter Protocol front end instead of the prompt."""
    from dyndbg.dap import server
    connect = _host_port(args.dap_connect) if args.dap_connect else None
    listen = _host_port(args.listen) if args.listen else None
    try:
        server.start(connect, listen, lambda text: print(text, file=sys.stderr, flush=True),
                     args.wait_for_client)
    except OSError as error:
        return _fail(f"cannot serve the debug adapter protocol: {error}")
    return None


def _attach(args: argparse.Namespace, prefix_rank: int | None) -> int | None:
    """Attach the debugger to this process; an exit status if it cannot start."""
    if args.listen is not None or args.dap_connect is not None:
        failed = _attach_editor(args)
        if failed is not None:
            return failed
        _apply_options(args)
        return None
    from dyndbg.attach import attach
    from dyndbg.distributed import RankWriter

    out = sys.stdout
    if args.out:
        # Every rank writes the one file: appended to, so none truncates another's lines.
        mode = "w" if prefix_rank is None else "a"
        try:
            out = open(args.out, mode, encoding="utf-8", buffering=1)
        except OSError as error:
            return _fail(f"can't write {args.out!r}: {error}")
    reads_input = prefix_rank is None or prefix_rank == 0
    if prefix_rank is not None:
        out = RankWriter(out, prefix_rank, interactive=reads_input)
    attach(out, args.command, args.no_color, read_rc=not args.no_rc, read_input=reads_input)
    _apply_options(args)
    return None


def _apply_options(args: argparse.Namespace) -> None:
    from dyndbg.attach import current, set_options
    engine = current()
    if engine is None:
        return   # an editor came and went before the program started
    set_options(engine, post_mortem=args.post_mortem, record=args.record, trace=args.trace,
                catch_trace=args.catch_trace)


def _post_mortem(error: BaseException) -> None:
    """The REPL at the generated frame the exception came through, as pdb's."""
    from dyndbg.attach import current

    engine = current()
    if engine is None or not engine.keep_failed_calls:
        return  # detached (end of input), or no post mortem asked for
    sys.stderr.flush()
    # `q` ends a post-mortem session like `c` (the session never raises DyndbgQuit).
    if not engine.post_mortem(error.__traceback__, error):
        engine.frontend.message("dyndbg: the exception did not come through "
                                "dynamo-generated code; no post-mortem stop")


def _report_uncaught(error: BaseException) -> None:
    """Print the traceback python would print: without dyndbg's and runpy's frames."""
    tb = error.__traceback__
    while tb is not None and is_own_frame(tb.tb_frame):
        tb = tb.tb_next
    error.__traceback__ = tb
    sys.excepthook(type(error), error, tb)
