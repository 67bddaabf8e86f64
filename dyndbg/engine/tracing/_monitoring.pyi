"""The compiled INSTRUCTION callback of the sys.monitoring mechanism (_monitoring.c)."""
import collections
import types
from typing import Any, Callable, type_check_only

@type_check_only
class InstructionFilter:
    """_on_instruction's filter (not a module attribute: instruction_filter's result)."""

    def __call__(self, code: types.CodeType, offset: int, /) -> object: ...
    def forget(self) -> None: ...

def instruction_filter(fast: dict[int, Any], conditions: Any, lock: Any, engine: Any,
                       events: collections.Counter[str], fail: Callable[[BaseException], None],
                       on_instruction: Callable[[types.CodeType, int], object],
                       /) -> InstructionFilter: ...
