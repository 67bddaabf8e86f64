"""The compiled recording loop (_history.c): History.record in C."""
import collections
import types
from typing import Any, Callable

class Track:
    """history._Track in C: a live recorded frame's newest slots and what was kept."""

    caller: int
    newest: int
    raw: list[object]
    kept: list[object]
    tokens: list[object]
    locals: tuple[object, ...]
    opname: str
    def __init__(self, caller: int, /) -> None: ...

class Recorder:
    """History.record in C, bound to one History."""

    next: int    # the seq of the next record
    size: int    # History.size, set by resize
    def __init__(self, history: Any, records: collections.deque[Any], tracks: dict[int, Any],
                 new_track: Callable[[types.FrameType], Track], keep: Callable[..., Any],
                 record_type: type[tuple[Any, ...]], settled_after: frozenset[str], null: object,
                 unavailable: type[Exception], copy_type: type, volatile: object,
                 as_is: frozenset[type], copies: dict[int, Any] = ...,
                 tensor_types: frozenset[type] = ..., items_type: type = ...,
                 container_bounds: tuple[int, int] = ...) -> None: ...
    def record(self, frame: types.FrameType, spec: tuple[Any, ...], /) -> int: ...
    def keep(self, value: object, seq: int, /) -> tuple[object, object]: ...
    def slot_sources(self, values: list[object], previous: list[object], tokens: list[object],
                     settled: bool, seq: int, /) -> list[int]: ...

def untrack(obj: object, /) -> None: ...
