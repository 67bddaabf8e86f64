"""The prompt's commands, in families of `do_*` methods whose docstrings are
their help (pdb's habit); each family talks to the session through
host.Host, never to the session itself.

- running: step, next, return, continue, jump, until (what moves the program)
- looking: stack, locals, p, list, where, display (what looks without running)
- breakpoints: break, tbreak, catch, condition, commands, clear, disable, enable
- compiled: what dynamo made: graph, guards, cache, why (graph_listing and
  graph_checks hold `graph`'s sub-commands)
- edits: edits of dynamo's cache: evict, force, guard, patch, run, undo
- history: the recorded history: record, back, forward
- settings: the session itself: alias, sticky, set, trace, help
- compile_stops: the commands at a stop while dynamo compiles
"""
