"""The prompt's commands, in families of `do_*` methods whose docstrings are
their help (pdb's habit); each family talks to the session through
host.Host, never to the session itself.

- running: step, next, nextline, stepline, return, until, continue, quit
- looking: stack, locals, globals, p, pp, display, where, up, down, list, source
- breakpoints: break, tbreak, catch, condition, ignore, clear, disable, enable, info
- compiled: what dynamo made: graph, guards, why, cache (graph_listing and
  graph_checks hold `graph`'s sub-commands)
- edits: edits of dynamo's cache: evict, force, guard, patch, run, edits, undo, keep
- history: the recorded history: record, back, forward, present, history
- settings: the session itself: alias, unalias, sticky, set, trace, help
- compile_stops: the commands at a stop while dynamo compiles
"""
