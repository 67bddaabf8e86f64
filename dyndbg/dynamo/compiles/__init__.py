"""Compiles: what dynamo compiled and why, as torch tells it.

- registry: the generated code objects, keyed by identity, with their compile ids
- log: torch's account of each compile, taken as it ends
- context: what a compile knows while it runs (the user's stack, guards' origins)
- why: why dynamo made the code at a stop (every front end's `why`)
- breaks: why dynamo broke a graph; recompiles: why it compiled [i/j] again
- give_ups: recompile_limit; skips: a frame dynamo skipped and runs eagerly
"""
from dyndbg.dynamo.compiles.breaks import BreakReason
from dyndbg.dynamo.compiles.give_ups import GiveUp
from dyndbg.dynamo.compiles.log import CompileLog, current_compile_id
from dyndbg.dynamo.compiles.recompiles import RecompileReason
from dyndbg.dynamo.compiles.registry import GeneratedCode, Registry
from dyndbg.dynamo.compiles.skips import FrameSkip
from dyndbg.dynamo.compiles.context import guard_kind, place_of, program_frame

__all__ = ["BreakReason", "CompileLog", "FrameSkip", "GeneratedCode", "GiveUp", "RecompileReason",
           "Registry", "current_compile_id", "guard_kind", "place_of", "program_frame"]
