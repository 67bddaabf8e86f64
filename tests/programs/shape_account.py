"""Torch's own account of a program's dynamic shapes, without dyndbg (the
tests of issue 51 check dyndbg's against it, on whichever torch runs them).

    python shape_account.py [--watched] PROGRAM

runs PROGRAM as __main__ with torch's "dynamic" logs on (TORCH_LOGS=dynamic:
create_symbol, `eval ... [guard added]`, set_replacement, `marking ... as
dynamic`, on stderr), and prints on stdout, among the program's own lines:

- `SHAPES {...}` for each compile, read in its bytecode hook from the
  ShapeEnv: each guard's expression and SLoc, each replacement with its SLoc,
  var_to_range, var_to_sources, specialization_stacks;
- `STACK {...}` for each guard torch added, with the user stack its
  structured trace gives it (`guard_added_fast`, what tlparse reads);
- `PARTS {...}` at the end, for each cache entry of the program's compiled
  functions: the code parts of the lambda dynamo checks the shape guards with.

--watched: with the hooks dyndbg.cache installs from its import (dyndbg's
own reading of each compile), whose account must be the same.
"""
from __future__ import annotations

import json
import logging
import runpy
import sys

import torch
import torch._dynamo
import torch._logging
from torch._dynamo import convert_frame
from torch._guards import CompileContext


def _compile_id() -> str:
    return str(CompileContext.current_compile_id())


def hook(code, new_code):  # type: ignore[no-untyped-def]
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "_compile_inner":
        frame = frame.f_back
    env = frame.f_locals["output"].shape_env
    print("SHAPES " + json.dumps({
        "compile": _compile_id(), "function": code.co_name,
        "recompile_limit": torch._dynamo.config.recompile_limit,
        "guards": [[str(g.expr), str(g.sloc), g.sloc.maybe_user_loc] for g in env.guards],
        "replacements": {str(k): [str(v), str(env.replacements_slocs.get(k))]
                         for k, v in env.replacements.items()},
        "ranges": {str(k): [str(v.lower), str(v.upper)] for k, v in env.var_to_range.items()},
        "sources": {str(k): [s.name for s in v] for k, v in env.var_to_sources.items()},
        "specialized": {k.name: [[f.filename, f.lineno] for f in v]
                        for k, v in env.specialization_stacks.items()},
    }), flush=True)


class Structured(logging.Handler):
    """torch's structured trace: each guard's user stack (filenames interned)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.strings: dict[int, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", {})
        if "str" in metadata:
            text, number = metadata["str"]
            self.strings[number] = text
        if "guard_added_fast" in metadata:
            added = metadata["guard_added_fast"]
            stack = [[self.strings.get(f["filename"], str(f["filename"])), f["line"]]
                     for f in added["user_stack"]]
            print("STACK " + json.dumps({"compile": _compile_id(), "expr": added["expr"],
                                         "stack": stack}), flush=True)


def main() -> None:
    if sys.argv[1] == "--watched":
        import dyndbg.cache  # noqa: F401  (installs dyndbg's hooks)
        del sys.argv[1]
    program = sys.argv[1]
    torch._logging.set_logs(dynamic=logging.INFO)
    trace = logging.getLogger("torch.__trace")
    trace.addHandler(Structured())
    convert_frame.register_bytecode_hook(hook)
    sys.argv = sys.argv[1:]
    namespace = runpy.run_path(program, run_name="__main__")
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    for name, value in namespace.items():
        inner = getattr(value, "_torchdynamo_orig_callable", None)
        if inner is None:
            continue
        for entry in _debug_get_cache_entry_list(inner.__code__):
            parts = [[str(p) for p in leaf.verbose_code_parts()]
                     for leaf in entry.guard_manager.root.get_epilogue_lambda_guards()]
            print("PARTS " + json.dumps({"function": name, "compile": str(entry.compile_id),
                                         "parts": parts}), flush=True)


if __name__ == "__main__":
    main()
