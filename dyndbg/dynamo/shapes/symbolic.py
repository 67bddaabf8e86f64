"""Why a symbol is symbolic, as dyndbg names torch's reasons (a leaf: the
reading is in shapes/record.py, what each torch release records in versions.py)."""
from __future__ import annotations

import enum


class Symbolic(enum.Enum):
    """Why a symbol is symbolic: torch's decision, read from what it recorded."""

    AUTOMATIC = "automatic dynamic"        # a size seen to change (torch's automatic_dynamic_shapes)
    MARKED = "mark_dynamic"                 # torch._dynamo.mark_dynamic on the tensor
    MAYBE_MARKED = "maybe_mark_dynamic"     # torch._dynamo.maybe_mark_dynamic
    DYNAMIC = "dynamic=True"                # assume_static_by_default False (torch.compile(dynamic=True))
    MARKED_UNBACKED = "mark_unbacked"       # torch._dynamo.decorators.mark_unbacked
    UNBACKED = "unbacked"                   # a value computed in the graph (.item(), nonzero())
    UNKNOWN = "symbolic"                    # torch recorded nothing dyndbg reads as a reason
