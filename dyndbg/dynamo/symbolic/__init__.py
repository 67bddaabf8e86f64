"""Dynamo's symbolic execution, watched: where a compile stop stops and what it reads.

- hooks: where dynamo is hooked to stop while it compiles
- state: the translator frames, symbolic stack and locals, graph and guards so far
- values: dynamo's objects read without changing them
"""
from dyndbg.dynamo.symbolic.hooks import CompileStopHooks
from dyndbg.dynamo.symbolic.state import SymbolicState, CompilePoint, compile_id
from dyndbg.dynamo.symbolic.values import SymbolicValue, is_variable_tracker

__all__ = ["SymbolicState", "SymbolicValue", "CompileStopHooks", "CompilePoint", "compile_id",
           "is_variable_tracker"]
