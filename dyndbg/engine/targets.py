"""Breakpoint targets: which instructions of a generated code object a
breakpoint arms (`offsets`), and a check against the live stack when one is
reached (`confirm`), e.g. that the callable about to be called really is
graph 2. Targets name code that may not exist yet: they are pending until
dynamo compiles matching code.

- InstructionTarget: one instruction of one code object (`b 12`, `b @34`)
- LineTarget: where generated code enters a source line (`b file.py:9`)
- GraphCallTarget: calls of compiled graphs (`b graph 2`, `b __compiled_fn_*`)
- ResumeTarget: entry to resume functions (`b resume`, `b torch_dynamo_resume_in_f*`)
- FunctionTarget: entry to the transformed code of a user function (`b f`)
- CatchTarget: `catch compile|recompile|graph-break|exception`
- CompileCatchTarget: `catch trace [FUNC]`, and CompileLineTarget: `b --trace
  FILE:LINE`: stops while dynamo compiles (compile_stepping.py), never in
  generated code: they arm no instruction
- BackwardCatchTarget: `catch backward [N]`: stops inside a compiled
  backward (graph_backward.py), never in generated code
- NanCatchTarget (nan_catch.py): `catch nan`: stops after a graph's node
  made a NaN or an Inf, or after the call of a graph with no way in
- MarkerTarget: torch's `<BREAKPOINT>` markers (breakpoint 0, built in)
"""
from __future__ import annotations

import fnmatch
import functools
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Callable

from dyndbg.cpython import CALL_OPNAMES, MARKER_LOAD, call_site
from dyndbg.dynamo.markers import breakpoint_marker
from dyndbg.dynamo.names import GRAPH_NAME, RESUME_GLOBAL, graph_number, is_resume_name, resume_code
from dyndbg.dynamo.compiles import GeneratedCode
from dyndbg.engine.codeinfo import CodeInfo, Instr


StackReader = Callable[[], "list[object] | None"]   # reads the value stack on demand


def entry_offset(info: CodeInfo) -> int | None:
    """The first instruction that can stop (not RESUME, nor what runs before it)."""
    for instr in info.instructions:
        if not instr.silent:
            return instr.offset
    return None


def call_offsets(info: CodeInfo) -> set[int]:
    return {i.offset for i in info.instructions if i.opname in CALL_OPNAMES}


class Target:
    # True where offsets() are candidates and confirm() decides when reached
    # (listings mark those `B1?`).
    checked_when_reached = False
    # True for stops while dynamo compiles (compile_stepping.py): no place in generated code.
    compile_time = False
    # True for stops inside a compiled graph as it runs (graph_backward.py): none either.
    graph_time = False

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        raise NotImplementedError

    def confirm(self, frame: types.FrameType, entry: GeneratedCode, instr: Instr,
                stack: StackReader) -> bool:
        return True

    def describe(self) -> str:
        raise NotImplementedError


@dataclass
class InstructionTarget(Target):
    code: types.CodeType      # strong reference: its id() stays valid
    offset: int
    index: int
    where: str                # e.g. "f [0/0]"

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        return {self.offset} if entry.code is self.code else set()

    def describe(self) -> str:
        return f"{self.where} instr {self.index} @{self.offset}"


@dataclass
class LineTarget(Target):
    filename: str             # as typed
    line: int

    def file_matches(self, co_filename: str) -> bool:
        if os.path.isabs(self.filename) or os.path.exists(self.filename):
            return os.path.realpath(co_filename) == os.path.realpath(self.filename)
        return co_filename == self.filename or co_filename.endswith(os.sep + self.filename)

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if not self.file_matches(entry.code.co_filename):
            return set()
        return set(info.line_entries(self.line))

    def describe(self) -> str:
        return f"{self.filename}:{self.line}"


class MarkerTarget(Target):
    """The `LOAD_CONST <BREAKPOINT>` that torch's bytecode_debugger.breakpoint()
    leaves in generated code: dyndbg stops there as torch's debugger would."""

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if not entry.has_marker:
            return set()
        marker = breakpoint_marker()
        return {i.offset for i in info.instructions
                if i.opname == MARKER_LOAD and i.argval is marker}

    def describe(self) -> str:
        return "torch's <BREAKPOINT> markers (bytecode_debugger.breakpoint())"


def _called_function(instr: Instr, stack: StackReader) -> object:
    if instr.opname not in CALL_OPNAMES:
        return None
    values = stack()
    site = call_site(instr.opname, instr.arg, values) if values is not None else None
    return None if site is None else site.function


@dataclass
class GraphCallTarget(Target):
    """Calls of compiled graphs whose global name matches `pattern`."""

    checked_when_reached = True

    pattern: str              # fnmatch pattern on the global name, or a graph number
    number: int | None = None

    def name_matches(self, name: str) -> bool:
        if not GRAPH_NAME.fullmatch(name):
            return False
        if self.number is not None:
            return graph_number(name) == self.number
        return fnmatch.fnmatchcase(name, self.pattern)

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if not any(self.name_matches(n) for n in entry.code.co_names):
            return set()
        return call_offsets(info)   # which call is the graph's is confirmed on the stack

    def confirm(self, frame: types.FrameType, entry: GeneratedCode, instr: Instr,
                stack: StackReader) -> bool:
        function = _called_function(instr, stack)
        return function is not None and any(
            frame.f_globals.get(n) is function for n in frame.f_code.co_names
            if self.name_matches(n))

    def describe(self) -> str:
        return f"graph {self.number}" if self.number is not None else self.pattern


@dataclass
class ResumeTarget(Target):
    """Entry to resume functions: all, by code name, or by `__resume_at_*` global."""

    pattern: str = "*"        # on the resume function's name, or on its global name

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if not entry.is_resume:
            return set()
        if not self.pattern.startswith("__resume_at_") and \
                not fnmatch.fnmatchcase(entry.function, self.pattern):
            return set()
        offset = entry_offset(info)
        return set() if offset is None else {offset}

    def confirm(self, frame: types.FrameType, entry: GeneratedCode, instr: Instr,
                stack: StackReader) -> bool:
        if not self.pattern.startswith("__resume_at_"):
            return True
        # The global holds the resume function; the running code is it or its transform.
        codes = (entry.code, entry.original)
        return any(resume_code(value) in codes
                   for name, value in frame.f_globals.items()
                   if RESUME_GLOBAL.fullmatch(name) and fnmatch.fnmatchcase(name, self.pattern))

    def describe(self) -> str:
        return "resume" if self.pattern == "*" else self.pattern


def main_module_name() -> str | None:
    """The name the code run as `__main__` has as a module, where no other
    loaded module has it: `pkg.mod` under `-m pkg.mod` (its spec's name),
    `prog` for the script prog.py; else None."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if not isinstance(name, str) or name == "__main__":
        path = getattr(main, "__file__", None)
        if not isinstance(path, str):
            return None
        name, ext = os.path.splitext(os.path.basename(path))
        if ext != ".py" or not name.isidentifier():
            return None
    return name if sys.modules.get(name) is None else None


@functools.lru_cache(maxsize=None)
def _real(path: str) -> str:
    """A file's real path, found once: a name breakpoint is matched against the
    code of every compile, and each match reads the file of every loaded
    module (thousands with torch; resolving them all again was a fifth of a
    compile under `b *`)."""
    return os.path.realpath(path)


def module_names_of(filename: str) -> list[str]:
    """The names of the loaded modules whose file is `filename` (`__main__` for
    the script), and the script's also by its name as a module (main_module_name)."""
    real = _real(filename)
    names = [name for name, module in list(sys.modules.items())
             if isinstance(path := getattr(module, "__file__", None), str)
             and _real(path) == real]
    alias = main_module_name() if "__main__" in names else None
    return names + [alias] if alias is not None else names


def names_function(pattern: str, function: str, qualname: str, filename: str,
                   qualified: bool = True) -> bool:
    """Whether a function pattern names it: `f`, `Net.forward`, or (unless
    `qualified` is False) `mod.Net.forward` (for the script, also
    `__main__.Net.forward` and `prog.Net.forward`). The plain names are tried
    first: the module-qualified ones need the loaded modules' files."""
    if any(fnmatch.fnmatchcase(n, pattern) for n in (function, qualname)):
        return True
    return qualified and any(fnmatch.fnmatchcase(f"{module}.{qualname}", pattern)
                             for module in module_names_of(filename))


@dataclass
class FunctionTarget(Target):
    """Entry to the transformed code of a user function: `f`, `Net.forward`, `mod.f`."""

    pattern: str

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if entry.kind != "transformed" or entry.is_resume:
            return set()
        if not names_function(self.pattern, entry.function, entry.qualname,
                              entry.code.co_filename):
            return set()
        offset = entry_offset(info)
        return set() if offset is None else {offset}

    def describe(self) -> str:
        return self.pattern


@dataclass
class CatchTarget(Target):
    """`catch compile`: first run of each code object compiled after the
    catchpoint was set;
    `catch recompile`: the same for compile ids after the first (0/1, ...);
    `catch graph-break`: each call from a frame's code into a resume function;
    `catch exception`: every exception raised in generated code (all generated
    frames are traced while it is enabled)."""

    event: str                                  # compile, recompile, graph-break, exception
    since: int = 0                              # registry serials from here are "new"
    caught: set[int] = field(default_factory=set)

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        if self.event == "exception":
            return set()  # not an instruction: the engine stops at exception events
        if self.event == "graph-break":
            has_resume = any(RESUME_GLOBAL.fullmatch(n) for n in entry.code.co_names)
            return call_offsets(info) if has_resume else set()
        if entry.kind != "transformed" or entry.compile_id is None:
            return set()
        if self.event == "recompile" and entry.compile_id.endswith("/0"):
            return set()
        offset = entry_offset(info)
        return set() if offset is None else {offset}

    def confirm(self, frame: types.FrameType, entry: GeneratedCode, instr: Instr,
                stack: StackReader) -> bool:
        if self.event == "graph-break":
            code = getattr(_called_function(instr, stack), "__code__", None)
            return code is not None and is_resume_name(code.co_name)
        if entry.serial < self.since or id(entry.code) in self.caught:
            return False  # compiled before the catchpoint, or already caught
        self.caught.add(id(entry.code))   # once per compiled code object
        return True

    def describe(self) -> str:
        return f"catch {self.event}"


@dataclass
class CompileCatchTarget(CatchTarget):
    """`catch trace [FUNC]`: stop when dynamo starts tracing a frame whose
    function matches FUNC (a first compile, a recompile, a resume function),
    before it interprets the first instruction. Calls dynamo inlines are not
    matched: `s` steps into them, `b --trace FILE:LINE` stops in them."""

    event: str = "trace"
    pattern: str = "*"
    compile_time = True

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        return set()    # compile time only

    def matches(self, code: types.CodeType) -> bool:
        qualname = getattr(code, "co_qualname", code.co_name)
        # Without a dot no module-qualified name is looked for: not worth finding the module.
        return names_function(self.pattern, code.co_name, qualname, code.co_filename,
                              qualified="." in self.pattern)

    def describe(self) -> str:
        return "catch trace" + ("" if self.pattern == "*" else f" {self.pattern}")


@dataclass
class BackwardCatchTarget(CatchTarget):
    """`catch backward [N]`: stop when AOT autograd's compiled backward of
    graph N (of any graph: None) starts inside `loss.backward()`, before its
    first node (engine/graph_backward.py). Pending while graph N is not
    compiled: it may be later."""

    event: str = "backward"
    graph: int | None = None
    graph_time = True

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        return set()    # inside a graph's backward only

    def matches(self, number: int) -> bool:
        return self.graph is None or self.graph == number

    def describe(self) -> str:
        return "catch backward" + ("" if self.graph is None else f" {self.graph}")


@dataclass
class CompileLineTarget(LineTarget):
    """`b --trace FILE:LINE`: stop when dynamo, tracing, reaches that line of
    the user's code (at the first instruction of that line in the code)."""

    compile_time = True

    def offsets(self, entry: GeneratedCode, info: CodeInfo) -> set[int]:
        return set()    # compile time only

    def describe(self) -> str:
        return f"--trace {self.filename}:{self.line}"
