"""When dynamo gives up on a function: it hit `config.recompile_limit` (or
another cache limit), and from then on the function runs eagerly, never
reaching dyndbg again.

Torch says so once, as a warning on the `torch._dynamo.convert_frame` logger
whose arguments are (limit name, limit, "'f' (file:line)", the last reason),
the same on torch 2.13-2.15. A handler on that logger reads those arguments
(never the formatted text) and tells dyndbg's own output; torch's warning and
what dynamo does are unchanged.
"""
from __future__ import annotations

import logging
from typing import Callable, NamedTuple

from dyndbg.dynamo.compiles.recompiles import RecompileReason, parse

LOGGER = "torch._dynamo.convert_frame"
_MESSAGE = "torch._dynamo hit config.%s (%s)"


class GiveUp(NamedTuple):
    """Torch's account of one function it stopped compiling."""

    limit: str                      # "recompile_limit"
    value: str                      # "8"
    function: str                   # "'f' (/path/file.py:12)", as torch names it
    last: RecompileReason | None    # the newest entry's failing guard, with its line

    def one_line(self) -> str:
        last = f"; torch's last reason: {self.last.one_line()}" if self.last else ""
        return (f"dyndbg: dynamo gave up compiling {self.function}: it hit config.{self.limit} "
                f"({self.value}), so it runs eagerly from now on and no longer stops here{last}")


class GiveUpHandler(logging.Handler):
    """Hands each give-up to `tell`; never raises into torch's logging."""

    def __init__(self, tell: Callable[[GiveUp], None]) -> None:
        super().__init__(logging.WARNING)
        self._tell = tell

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if not isinstance(record.msg, str) or not record.msg.startswith(_MESSAGE):
                return
            args = record.args if isinstance(record.args, tuple) else ()
            if len(args) < 4:
                return
            reason = str(args[3]).strip()
            self._tell(GiveUp(str(args[0]), str(args[1]), str(args[2]),
                              parse(reason) if reason else None))
        except Exception:  # noqa: BLE001 - a log handler must not fail torch's compile
            pass


def install(tell: Callable[[GiveUp], None]) -> GiveUpHandler:
    handler = GiveUpHandler(tell)
    logging.getLogger(LOGGER).addHandler(handler)
    return handler


def remove(handler: GiveUpHandler) -> None:
    logging.getLogger(LOGGER).removeHandler(handler)
