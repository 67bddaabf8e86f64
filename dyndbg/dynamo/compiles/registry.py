"""Which code objects dynamo generated, keyed by identity.

Transformed code objects can be unhashable (a closure before a graph break puts
the module globals dict into co_consts), so they are never used as set members
or dict keys: the registry keys by id() and holds a strong reference so the id
stays valid for the life of the process.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Callable

from dyndbg.dynamo.compiles.breaks import BreakReason
from dyndbg.dynamo.compiles.context import GuardStack
from dyndbg.dynamo.compiles.skips import FrameSkip
from dyndbg.dynamo.markers import has_marker
from dyndbg.dynamo.names import is_resume_name
from dyndbg.dynamo.compiles.recompiles import RecompileReason
from dyndbg.dynamo.shapes.record import ShapeRecord

@dataclass
class GeneratedCode:
    """One dynamo-generated code object and where it came from."""

    code: types.CodeType
    kind: str                            # "transformed" or "resume" (runs as generated)
    original: types.CodeType | None      # the code dynamo transformed, if any
    compile_id: str | None               # "0/1" as in TORCH_LOGS; None if never compiled
    serial: int                          # registration order, for stable listings
    extra: dict = field(default_factory=dict)  # per-code caches owned by other modules
    has_marker: bool = False             # holds torch's <BREAKPOINT> marker
    edited: frozenset[int] | None = None  # a cache edit's code: the indexes it changed
    breaks: tuple[BreakReason, ...] = ()  # the graph breaks its compile made (torch's reasons)
    because: tuple[RecompileReason, ...] = ()  # older entries' failing guards that compiled it
    guard_stacks: tuple[GuardStack, ...] = ()  # its guards' user stacks, as torch recorded them
    called_from: str | None = None       # the program's call that made its compile
    skipped: tuple[FrameSkip, ...] = ()  # functions it called that dynamo skipped (torch's account)
    shapes: ShapeRecord | None = None    # its symbolic shapes as its compile ended (None: not read)

    @property
    def source(self) -> types.CodeType:
        """The code dynamo compiled this from: the user's function, or the resume
        function it made (this code itself where dyndbg runs one uncompiled)."""
        return self.original if self.original is not None else self.code

    @property
    def function(self) -> str:
        """The name the user knows: the original function or the resume function."""
        return self.source.co_name

    @property
    def qualname(self) -> str:
        return getattr(self.source, "co_qualname", self.source.co_name)

    @property
    def is_resume(self) -> bool:
        return is_resume_name(self.function)

    def label(self) -> str:
        """`f [0/0]`, or `torch_dynamo_resume_in_f_at_9 [not compiled]`."""
        cid = self.compile_id if self.compile_id is not None else "not compiled"
        return f"{self.function} [{cid}{', edited' if self.edited is not None else ''}]"


class Registry:
    """All generated code seen so far, by id()."""

    def __init__(self) -> None:
        self._by_id: dict[int, GeneratedCode] = {}
        self.by_id = self._by_id   # read-only use on hot paths: id(code) -> entry
        self._transformed_from: set[int] = set()   # id() of originals (kept alive by entries)
        self.has_markers = False    # some code holds torch's <BREAKPOINT> marker
        self.on_add: Callable[[GeneratedCode], None] | None = None  # told of each new entry

    def add_transformed(self, original: types.CodeType | None, new: types.CodeType,
                        compile_id: str | None,
                        edited: frozenset[int] | None = None,
                        breaks: tuple[BreakReason, ...] = (),
                        because: tuple[RecompileReason, ...] = (),
                        guard_stacks: tuple[GuardStack, ...] = (),
                        called_from: str | None = None,
                        shapes: ShapeRecord | None = None) -> GeneratedCode:
        if compile_id is not None:
            compile_id = compile_id.split("_")[0]  # "0/0_1" is attempt 1 of 0/0
        entry = GeneratedCode(new, "transformed", original, compile_id, len(self._by_id),
                              has_marker=has_marker(new), edited=edited, breaks=breaks,
                              because=because, guard_stacks=guard_stacks,
                              called_from=called_from, shapes=shapes)
        self.has_markers = self.has_markers or entry.has_marker
        if original is not None:
            self._transformed_from.add(id(original))
        self._add(entry)
        return entry

    def add_edited(self, original: types.CodeType, code: types.CodeType, compile_id: str,
                   changed: frozenset[int]) -> None:
        """Code a cache edit installed (patched, or the entry's own under other guards)."""
        if id(code) not in self._by_id:
            self.add_transformed(original, code, compile_id, edited=changed)

    def _add(self, entry: GeneratedCode) -> None:
        self._by_id[id(entry.code)] = entry
        if self.on_add is not None:
            self.on_add(entry)

    def has_transform(self, original: types.CodeType) -> bool:
        """Dynamo compiled this code (so the C callback sees it run)."""
        return id(original) in self._transformed_from

    def generated_frames(self, frame: types.FrameType | None) -> list[types.FrameType]:
        """The generated frames among `frame` and its callers, innermost first."""
        generated = []
        while frame is not None:
            if self.get(frame.f_code) is not None:
                generated.append(frame)
            frame = frame.f_back
        return generated

    def get(self, code: types.CodeType) -> GeneratedCode | None:
        """The entry for `code`, registering it on first sight if it is
        generated code that never passed the bytecode hook: a resume function
        dynamo declined to convert (its name identifies it), or code compiled
        before dyndbg was attached (torch remembers those).
        """
        entry = self._by_id.get(id(code))
        if entry is None:
            entry = self.recover(code)
        return entry

    def recover(self, code: types.CodeType) -> GeneratedCode | None:
        """Register generated code that was made before dyndbg was attached."""
        entry = self._by_id.get(id(code))
        if entry is not None:
            return entry
        original = _original_of(code)
        if original is not None:
            entry = self.add_transformed(original, code, _compile_id_of(original, code))
        elif is_resume_name(code.co_name):
            entry = GeneratedCode(code, "resume", None, None, len(self._by_id))
            self._add(entry)
        return entry

    def recover_existing(self) -> None:
        """Register all generated code torch still holds that was made before
        dyndbg was attached (a mechanism that needs no C callback to see it run)."""
        try:
            from torch._dynamo.convert_frame import orig_code_map
            codes = [ref() for ref in list(orig_code_map.refs.values())]
        except Exception:  # noqa: BLE001 - an older torch: nothing to recover
            return
        for code in codes:
            if code is not None:
                self.recover(code)

    def count(self) -> int:
        """How many code objects are registered (serials below this exist)."""
        return len(self._by_id)

    def is_generated(self, code: types.CodeType) -> bool:
        return id(code) in self._by_id or is_resume_name(code.co_name) or \
            _original_of(code) is not None

    def entries(self) -> list[GeneratedCode]:
        return sorted(self._by_id.values(), key=lambda e: e.serial)


def _original_of(code: types.CodeType) -> types.CodeType | None:
    """The code dynamo transformed into `code`, if `code` is dynamo's output."""
    try:
        from torch._dynamo.convert_frame import orig_code_map
        return orig_code_map.get(code)
    except Exception:  # noqa: BLE001 - an older torch: nothing to recover
        return None


def _compile_id_of(original: types.CodeType, code: types.CodeType) -> str | None:
    """The compile id of the cache entry that runs `code`."""
    try:
        from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list
        for entry in _debug_get_cache_entry_list(original):
            if entry.code is code:
                return str(entry.compile_id)
    except Exception:  # noqa: BLE001
        pass
    return None
