"""Dynamic shapes: why a size is symbolic, specialized or guarded, as torch's
ShapeEnv accounts for it.

- parts: torch's text for its shape guards (the lambda's code parts, each
  with its SLoc), read back
- watch: what a ShapeEnv does not keep, noted as dynamo compiles
- record: a compile's symbols (and why each is symbolic), replacements and
  guards, read as it ends
- story: what `why shapes` says of each symbol at a stop
"""
