"""The words of the breakpoint commands and of the stops they make (pure):
pdb's line for a deleted temporary breakpoint, the note on a pattern naming
the program run as `__main__`, a location's row in `b`'s listing."""
from __future__ import annotations

from typing import Iterable

from dyndbg.engine.breakpoints import Breakpoint, BreakpointTable, Location
from dyndbg.engine.targets import CompileCatchTarget, FunctionTarget, Target, main_module_name


def deleted_at_stop(stopped: Iterable[Breakpoint], table: BreakpointTable) -> list[str]:
    """pdb's line for each temporary breakpoint (`tbreak`, `tbreak --trace`) that
    the stop deleted: `Deleted breakpoint 2 at step_back.py:17`."""
    return [f"Deleted breakpoint {bp.number} at {bp.target.describe()}" for bp in stopped
            if bp.temporary and table.get(bp.number) is None]


def main_module_note(target: Target) -> str | None:
    """The line that says a function pattern names the program run as `__main__`
    by its module name (`prog.Net.forward` for prog.py), which it matches."""
    alias = main_module_name()
    if not isinstance(target, (FunctionTarget, CompileCatchTarget)) or alias is None or \
            not target.pattern.startswith(alias + "."):
        return None
    rest = target.pattern[len(alias) + 1:]
    return f"  {alias} runs as __main__: {target.pattern} matches __main__.{rest}"


def location_line(bp: Breakpoint, location: Location) -> str:
    """`1.2         enabled   torch_dynamo_resume_in_f_at_10 [1/0]  hit 1 time`"""
    state = "enabled" if location.enabled else "disabled"
    text = f"{f'{bp.number}.{location.number}':<12}{state:<9} {location.where}"
    if location.hits:
        text += f"  hit {location.hits} time{'s' if location.hits != 1 else ''}"
    return text
