"""What a compile knows while it runs, read in its bytecode hook: each
guard's whole user stack, and the call that started the compile.

The call: the first frame up the stack, from the hook, that is neither
torch's nor dyndbg's (dynamo compiles a frame before it runs, so the frame's
caller is the innermost frame of the program's on the stack).

The guards' stacks:

Torch gives every guard a `user_stack` (a `traceback.StackSummary`, the
user's frames when dynamo installed it: `GuardsSet.add` in torch/_guards.py)
and writes only its last user frame after the guard's code (`# file.py:12 in
f`). The C++ leaf guards of a finished entry keep the stack but expose only
their code parts, so the whole stack is read while the compile still holds
its guards: in the bytecode hook, from the OutputGraph that torch's
`_compile_inner` (torch/_dynamo/convert_frame.py) keeps in its local
`output` when it calls the hooks (the same on torch 2.13-2.15). Only reading
the Guard objects torch made: nothing here changes what dynamo compiles.

A guard line of `guards` is matched to its Guard by its source name and its
last user frame; `stack_of` answers only where every Guard so matched has
the same stack, so that the stack shown is the one torch recorded.
"""
from __future__ import annotations

import os
import sys
import traceback
import types
from typing import NamedTuple


_CONVERT_FRAME = os.path.join("_dynamo", "convert_frame.py")
_COMPILER = "_compile_inner"


class GuardStack(NamedTuple):
    """One guard dynamo installed, and the user's frames when it did."""

    name: str                           # the guarded source, "L['x']", "G['config'].flag"
    kind: str                           # torch's guard type, "TYPE_MATCH", "EQUALS_MATCH"
    user_stack: traceback.StackSummary  # innermost last

    def last_line(self) -> str:
        """`file.py:12` of the innermost frame, as `guards` shows an origin."""
        return place_of(self.user_stack[-1])


def guard_kind(guard: object) -> str:
    """The GuardBuilder method that makes a Guard ("TENSOR_MATCH"): its
    create_fn, or the method a functools.partial wraps; "" if neither."""
    create_fn = getattr(guard, "create_fn", None)
    return str(getattr(create_fn, "__name__", None) or
               getattr(getattr(create_fn, "func", None), "__name__", ""))


def place_of(frame: traceback.FrameSummary) -> str:
    """`file.py:12`: a user frame, as `guards` shows a guard's origin."""
    return f"{os.path.basename(frame.filename)}:{frame.lineno}"


def compiler_output(depth: int = 1) -> object | None:
    """Called from a bytecode hook: the OutputGraph of the compile calling it
    (`_compile_inner`'s local `output`), or None where it cannot be found."""
    frame: types.FrameType | None = sys._getframe(depth)
    while frame is not None:
        code = frame.f_code
        if code.co_name == _COMPILER and code.co_filename.endswith(_CONVERT_FRAME):
            break
        frame = frame.f_back
    return None if frame is None else frame.f_locals.get("output")


def guard_stacks(output: object) -> tuple[GuardStack, ...]:
    """The guards of the compile whose OutputGraph is `output` (compiler_output),
    each with its user stack (guards without one are torch's own and left out);
    () where there are none to read."""
    guards = getattr(output, "guards", None)
    if guards is None:
        return ()
    out = []
    for guard in guards:
        stack = getattr(guard, "user_stack", None)
        if not stack:
            continue
        out.append(GuardStack(str(getattr(guard, "name", "")), guard_kind(guard), stack))
    return tuple(out)


def stack_of(stacks: tuple[GuardStack, ...], source: str, code: str,
             origin: str | None) -> traceback.StackSummary | None:
    """The user stack of the guard on `source` (its manager's) whose code is
    `code` and whose line is `origin` (`file.py:12`): the Guards on that
    source at that line, else those whose source the code names. None where
    none matches, or where the matches disagree on the stack."""
    if not origin or origin == "torch":
        return None
    at_line = [s for s in stacks if s.name and s.last_line() == origin]
    matches = [s for s in at_line if s.name == source] or \
        [s for s in at_line if s.name in code]
    if not matches:
        return None
    first = _frames(matches[0].user_stack)
    if any(_frames(s.user_stack) != first for s in matches[1:]):
        return None
    return matches[0].user_stack


def _frames(stack: traceback.StackSummary) -> list[tuple[str, int | None, str]]:
    return [(frame.filename, frame.lineno, frame.name) for frame in stack]


def called_from(depth: int = 1) -> str | None:
    """`file.py:12 in g`: the program's frame that made the compile (its call
    of the compiled function); None where none is on the stack."""
    frame = program_frame(depth + 1)
    if frame is None:
        return None
    return (f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} "
            f"in {frame.f_code.co_name}")


def program_frame(depth: int = 1) -> types.FrameType | None:
    """The innermost frame on the stack that is the program's: neither
    torch's nor dyndbg's, nor logging's (torch's warnings call dyndbg
    through it); during a compile, the caller of the compiled function."""
    frame: types.FrameType | None = sys._getframe(depth)
    skipped = _skipped_folders()
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skipped) and not filename.startswith("<frozen"):
            return frame
        frame = frame.f_back
    return None


def _skipped_folders() -> tuple[str, ...]:
    folders = []
    for name in ("torch", "dyndbg", "logging"):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            folders.append(os.path.dirname(path) + os.sep)
    return tuple(folders)
