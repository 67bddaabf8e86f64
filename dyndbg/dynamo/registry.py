"""Which code objects dynamo generated, keyed by identity.

Transformed code objects can be unhashable (a closure before a graph break puts
the module globals dict into co_consts), so they are never used as set members
or dict keys: the registry keys by id() and holds a strong reference so the id
stays valid for the life of the process.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field

# torch 2.x names resume functions torch_dynamo_resume_in_<fn>_at_<line>;
# older releases used "<resume in fn>".
RESUME_PREFIXES = ("torch_dynamo_resume_in_", "<resume in ")


def is_resume_name(name: str) -> bool:
    return name.startswith(RESUME_PREFIXES)


@dataclass
class GeneratedCode:
    """One dynamo-generated code object and where it came from."""

    code: types.CodeType
    kind: str                            # "transformed" or "resume" (runs as generated)
    original: types.CodeType | None      # the code dynamo transformed, if any
    compile_id: str | None               # "0/1" as in TORCH_LOGS; None if never compiled
    serial: int                          # registration order, for stable listings
    extra: dict = field(default_factory=dict)  # per-code caches owned by other modules

    @property
    def function(self) -> str:
        """The name the user knows: the original function or the resume function."""
        source = self.original if self.original is not None else self.code
        return source.co_name

    @property
    def qualname(self) -> str:
        source = self.original if self.original is not None else self.code
        return getattr(source, "co_qualname", source.co_name)

    @property
    def is_resume(self) -> bool:
        return is_resume_name(self.function)

    def label(self) -> str:
        """`f [0/0]`, or `torch_dynamo_resume_in_f_at_9 [not compiled]`."""
        cid = self.compile_id if self.compile_id is not None else "not compiled"
        return f"{self.function} [{cid}]"


class Registry:
    """All generated code seen so far, by id()."""

    def __init__(self) -> None:
        self._by_id: dict[int, GeneratedCode] = {}
        self.by_id = self._by_id   # read-only use on hot paths: id(code) -> entry
        self._transformed_from: set[int] = set()   # id() of originals (kept alive by entries)

    def add_transformed(self, original: types.CodeType, new: types.CodeType,
                        compile_id: str | None) -> GeneratedCode:
        if compile_id is not None:
            compile_id = compile_id.split("_")[0]  # "0/0_1" is attempt 1 of 0/0
        entry = GeneratedCode(new, "transformed", original, compile_id, len(self._by_id))
        self._by_id[id(new)] = entry
        if original is not None:
            self._transformed_from.add(id(original))
        return entry

    def has_transform(self, original: types.CodeType) -> bool:
        """Dynamo compiled this code (so the C callback sees it run)."""
        return id(original) in self._transformed_from

    def get(self, code: types.CodeType) -> GeneratedCode | None:
        """The entry for `code`, registering a resume function on first sight.

        A resume function that dynamo declines to convert runs as generated code
        without ever passing the bytecode hook; its name identifies it.
        """
        entry = self._by_id.get(id(code))
        if entry is None and is_resume_name(code.co_name):
            entry = GeneratedCode(code, "resume", None, None, len(self._by_id))
            self._by_id[id(code)] = entry
        return entry

    def count(self) -> int:
        """How many code objects are registered (serials below this exist)."""
        return len(self._by_id)

    def is_generated(self, code: types.CodeType) -> bool:
        return id(code) in self._by_id or is_resume_name(code.co_name)

    def entries(self) -> list[GeneratedCode]:
        return sorted(self._by_id.values(), key=lambda e: e.serial)
