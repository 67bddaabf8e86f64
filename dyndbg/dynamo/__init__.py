"""Everything that knows torch internals lives in this package.

The rest of dyndbg sees a small interface: `Registry` (which code objects dynamo
generated, for which user function, under which compile id) and `DynamoHooks`
(the adapter that tells the engine when generated code is about to run, and when
dynamo is compiling). A torch that moves something needs changes here only.
"""
from __future__ import annotations

from dyndbg.dynamo.names import RESUME_PREFIXES, is_resume_name
from dyndbg.dynamo.compiles import GeneratedCode, Registry
from dyndbg.dynamo.hooks import DynamoHooks

__all__ = ["DynamoHooks", "GeneratedCode", "Registry", "RESUME_PREFIXES", "is_resume_name"]
