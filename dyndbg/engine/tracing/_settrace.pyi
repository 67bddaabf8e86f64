"""The compiled trace functions of the sys.settrace mechanism (_settrace.c).

The classes but LineFilter and RecordFilter are not module attributes: they
are the types of what the functions return."""
import collections
import threading
import types
from typing import Any, Callable, type_check_only

_TraceFunction = Callable[[types.FrameType, str, Any], object]

@type_check_only
class FrameBook:
    """the settrace tracer's traced frames, kept from C"""

@type_check_only
class _Filter:
    def __call__(self, frame: types.FrameType, event: str, arg: object, /) -> object: ...

@type_check_only
class CodeFilter:
    def __call__(self, code: types.CodeType, /) -> object: ...

@type_check_only
class CalleeFilter(_Filter): ...

@type_check_only
class CallFilter(_Filter): ...

@type_check_only
class LineFilter(_Filter): ...

@type_check_only
class ReturnFilter(_Filter): ...

@type_check_only
class RecordFilter(_Filter): ...

LineFilterType: type[LineFilter]
RecordFilterType: type[RecordFilter]

def frame_book(active: list[types.FrameType], thread: threading.local,
               keyed: tuple[dict[int, Any] | set[int], ...], hooks: Any, lock: Any,
               /) -> FrameBook: ...
def code_filter(generated: dict[int, Any], starts: dict[int, Any], hooks: Any, policy: Any,
                engine: Any, thread: threading.local, settrace: Callable[[Any], None],
                trace: object, code_callback: Callable[[types.CodeType], object],
                /) -> CodeFilter: ...
def callee_filter(callee_trace: _TraceFunction, /) -> CalleeFilter: ...
def call_filter(generated: dict[int, Any], prefixes: tuple[str, ...], hooks: Any, policy: Any,
                global_trace: _TraceFunction, callee_filter: CalleeFilter,
                starts: dict[int, Any], engine: Any, events: collections.Counter[str],
                frame_book: FrameBook, graphs: dict[int | None, Any], /) -> CallFilter: ...
def line_filter(offsets: frozenset[int] | set[int], hot_lines: frozenset[int] | set[int],
                line_of: dict[int, int], all_opcodes: bool, done_from: int,
                checks: dict[int, Any], conditions: Any, lock: Any, engine: Any,
                frame_book: FrameBook, events: collections.Counter[str],
                line_tracer: _TraceFunction, /) -> LineFilter: ...
def return_filter(frame_book: FrameBook, policy: Any, engine: Any,
                  events: collections.Counter[str], on_idle: Callable[[], object],
                  local_trace: _TraceFunction, /) -> ReturnFilter: ...
def record_filter(record: Callable[..., int], spec: tuple[Any, ...], armed: Any, lock: Any,
                  engine: Any, events: collections.Counter[str],
                  after_record: Callable[[int], None], fail: Callable[[BaseException], None],
                  local_trace: _TraceFunction, /) -> RecordFilter: ...
