"""Dynamo's cache entries and their guards.

- entries: a function's entries and whether each guard passes at a call
- outcomes: one entry's guards checked on a call's locals, as torch checks them
- tree: a guard tree walked into numbered lines
- call_state: torch's state at a call, for checking guards after it
- live_entries: the live entries reached safely, the torch calls cache editing rests on
"""
from dyndbg.dynamo.guards.entries import EntryExplanation, cache_entries, explain_entry, guard_tree
from dyndbg.dynamo.guards.live_entries import LiveEntry
from dyndbg.dynamo.guards.tree import GuardLine, installed_at, split_part

__all__ = ["EntryExplanation", "GuardLine", "LiveEntry", "cache_entries", "explain_entry",
           "guard_tree", "installed_at", "split_part"]
