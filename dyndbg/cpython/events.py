"""Which instructions never produce a sys.settrace opcode event."""
from __future__ import annotations

# 3.11 and 3.12 report a frame's start as its 'call' event; RESUME itself gets
# no opcode event (measured), so a stop can never happen there.
SILENT_OPNAMES = frozenset({"RESUME"})
