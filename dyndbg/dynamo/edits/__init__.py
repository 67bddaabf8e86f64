"""Edits of dynamo's cache: numbered and undoable.

- table: the one table of edits (evict, force, guard add/drop, patch, install)
- kinds: what an edit is and the record `edits` lists
- patching, verifier: instruction-level edits of generated code and the checks they pass
- guard_drop: an entry's guards with one left out
- causes: why dynamo compiled while an edit made calls fall through
"""
from dyndbg.dynamo.edits.table import EDITS, Edit, EditKind, fell_through_lines
from dyndbg.dynamo.edits.patching import PatchAction, PatchOp

__all__ = ["EDITS", "Edit", "EditKind", "PatchAction", "PatchOp", "fell_through_lines"]
