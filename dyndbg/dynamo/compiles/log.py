"""Torch's account of each compile, taken as the compile ends: the one place
that reads it, for the engine's hooks (dynamo/hooks.py) and for the Python
API (dyndbg.cache, which keeps a log of its own from its import on).

At the compile's start, where torch's list of graph-break reasons stands;
in its bytecode hook, the reasons appended since (dynamo/compiles/breaks.py),
the older entries' failing guards torch recorded for it
(dynamo/compiles/recompiles.py), each guard's user stack and the program's
call that made it (dynamo/compiles/context.py), its symbolic shapes
(dynamo/shapes/record.py). All of it only read.
"""
from __future__ import annotations

import types

from dyndbg.dynamo.compiles import breaks as break_reasons, context as compile_context, recompiles as recompile_reasons
from dyndbg.dynamo.compiles.registry import GeneratedCode, Registry
from dyndbg.dynamo.shapes import record as shape_record


def current_compile_id() -> str | None:
    """The compile id of the compile dynamo is making in this thread, if any."""
    try:
        from torch._guards import CompileContext
        cid = CompileContext.current_compile_id()
        return None if cid is None else str(cid)
    except Exception:
        return None


class CompileLog:
    """Adds each compile's generated code to `registry`, with torch's account."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._breaks_mark = break_reasons.mark()  # torch's break reasons when the compile started
        self._failures_seen: dict[int, int] = {}  # id(original) -> torch's failing guards read

    def started(self) -> None:
        """A compile starts (torch's start callback)."""
        self._breaks_mark = break_reasons.mark()

    def compiled(self, code: types.CodeType, new_code: types.CodeType) -> GeneratedCode:
        """The compile of `code` made `new_code` (torch's bytecode hook)."""
        breaks = break_reasons.since(self._breaks_mark)
        self._breaks_mark = break_reasons.mark()
        because = recompile_reasons.since(code, self._failures_seen.get(id(code), 0))
        self._failures_seen[id(code)] = recompile_reasons.count(code)
        output = compile_context.compiler_output()
        return self.registry.add_transformed(code, new_code, current_compile_id(),
                                             breaks=breaks, because=because,
                                             guard_stacks=compile_context.guard_stacks(output),
                                             called_from=compile_context.called_from(),
                                             shapes=shape_record.read(output))
