"""The debugger engine: tracing, the stepping state machine, breakpoints, stops.

No user interface here (like bdb.Bdb): the engine calls `Frontend.interact(stop)`
and the front end answers by setting the engine's resume mode.
"""
