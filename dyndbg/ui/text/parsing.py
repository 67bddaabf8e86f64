"""Pure parsing of what is typed at the prompt: numbers, breakpoint locations,
list ranges, `;;` chaining and pdb's aliases. No session, no frames: each
function takes text and gives values or raises CommandError (one line)."""
from __future__ import annotations

import re
from enum import Enum
from typing import Callable, Mapping, NamedTuple

from dyndbg.dynamo.names import GRAPH_NAME
from dyndbg.engine.targets import (FunctionTarget, GraphCallTarget, LineTarget, ResumeTarget,
                                   Target)


class CommandError(Exception):
    """Bad input at the prompt: shown as one line."""


# -- numbers ---------------------------------------------------------------------------------
def parse_int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CommandError(f"{what} must be a whole number, not {text!r}") from None


def parse_numbers(arg: str, what: str = "breakpoint number") -> list[int]:
    """`1 2`, `1,2`, `1, 2`: the numbers, in order."""
    return [parse_int(part, what) for part in arg.replace(",", " ").split()]


def parse_count(arg: str, what: str) -> int:
    """An optional repeat count (step/next N): 1 when absent, at least 1."""
    count = parse_int(arg, what) if arg else 1
    if count < 1:
        raise CommandError(f"{what} must be at least 1")
    return count


_SIZE_UNITS = {"": 1, "B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}


def parse_bytes(text: str, what: str) -> int:
    """`512MB`, `2GB`, `1048576`: a size in bytes (units of 1024), at least 1."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?B?)\s*", text.upper())
    if match is None:
        raise CommandError(f"{what} must be a size such as 512MB or 2GB, not {text!r}")
    size = int(match[1]) * _SIZE_UNITS[match[2] if match[2] in _SIZE_UNITS else match[2] + "B"]
    if size < 1:
        raise CommandError(f"{what} must be at least 1 byte")
    return size


def format_bytes(size: int) -> str:
    """1536 -> `1.5 KB`, 536870912 -> `512 MB`."""
    for unit in ("GB", "MB", "KB"):
        scale = _SIZE_UNITS[unit]
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} B"


# -- lines -------------------------------------------------------------------------------------
def leading_word(line: str) -> str:
    """The command word: letters, digits and '_' from the start (`p(x)` -> `p`)."""
    end = 0
    while end < len(line) and (line[end].isalnum() or line[end] == "_"):
        end += 1
    return line[:end]


class Split(NamedTuple):
    first: str         # the command to run now
    rest: str | None   # what follows the first ';;', to run next; None without one


def split_commands(line: str) -> Split:
    """The line up to its first ';;', and the rest. `!` lines (Python) and
    alias definitions are not split (as pdb)."""
    words = line.split()
    if ";;" not in line or line.lstrip().startswith("!") or words[0] == "alias":
        return Split(line, None)
    first, rest = line.split(";;", 1)
    # Nothing after the last ';;' is no command (an empty one would repeat the last).
    return Split(first.strip(), rest.strip() or None)


_OPEN, _CLOSE = "([{", ")]}"


def split_expressions(text: str) -> list[str]:
    """Python expressions separated by spaces or commas outside brackets and
    strings: `x torch.ones(2, 3) 'a b'` -> ['x', 'torch.ones(2, 3)', "'a b'"]."""
    parts: list[str] = []
    start = 0                       # where the expression being read began
    opened: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in "'\"":
            i = _string_end(text, i)
            continue
        if char in _OPEN:
            opened.append(char)
        elif char in _CLOSE:
            if not opened or _OPEN[_CLOSE.index(char)] != opened.pop():
                raise CommandError(f"unbalanced {char!r} in {text.strip()!r}")
        elif not opened and (char.isspace() or char == ","):
            parts.append(text[start:i])
            start = i + 1
        i += 1
    if opened:
        raise CommandError(f"unclosed {opened[-1]!r} in {text.strip()!r}")
    parts.append(text[start:])
    return [part for part in parts if part]


def _string_end(text: str, start: int) -> int:
    """The index after the string literal that starts at `start` (a quote)."""
    quote = text[start] * 3 if text.startswith(text[start] * 3, start) else text[start]
    i = start + len(quote)
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text.startswith(quote, i):
            return i + len(quote)
        else:
            i += 1
    raise CommandError(f"unterminated string in {text.strip()!r}")


# -- aliases (pdb's) --------------------------------------------------------------------------------
_ALIAS_PARAMETER = re.compile(r"%([1-9*])")


def check_alias_body(body: str) -> None:
    """As pdb: %1..%N with none skipped, so every word given has a place."""
    if "%*" in body:
        return
    used = [n for n in range(1, 10) if f"%{n}" in body]
    if used != list(range(1, len(used) + 1)):
        raise CommandError("parameters must be consecutive: %1, %2, ...")


def substitute_alias(name: str, body: str, args: list[str]) -> str:
    """An alias's text with %1..%9 and %* replaced, as pdb does; a missing
    argument, or one with no place, is an error (as in pdb since 3.13)."""
    wanted = max((int(n) for n in _ALIAS_PARAMETER.findall(body) if n != "*"), default=0)
    if len(args) < wanted:
        raise CommandError(f"not enough arguments for alias {name!r} (it takes {wanted})")
    if len(args) > wanted and "%*" not in body:
        raise CommandError(f"too many arguments for alias {name!r} (it takes {wanted})")
    return _ALIAS_PARAMETER.sub(
        lambda m: " ".join(args) if m.group(1) == "*" else args[int(m.group(1)) - 1], body)


def expand_aliases(line: str, aliases: Mapping[str, str], is_command: Callable[[str], bool],
                   queue: Callable[[str], None]) -> str:
    """The line with its first word expanded while that is an alias (as pdb).

    A name met again ends the expansion: where it is also a command, that
    command runs (`alias ll ll --raw`); otherwise the aliases loop, which is
    an error rather than a hang. What follows a ';;' of an alias's text goes
    to `queue` (to run next, before what was queued earlier), as typed ones do;
    a loop found later does not take it back."""
    chain: list[str] = []
    while True:
        words = line.split()
        if not words or words[0] not in aliases:
            return line
        name = words[0]
        if name in chain:
            if is_command(name):
                return line
            raise CommandError("alias loop: " + " -> ".join(chain + [name]))
        chain.append(name)
        line, rest = split_commands(substitute_alias(name, aliases[name], words[1:]))
        if rest is not None:
            queue(rest)


# -- breakpoint locations -----------------------------------------------------------------------
class Place(Enum):
    """How a location names an instruction of the current code object."""
    INDEX = "index"     # `b 12`
    OFFSET = "offset"   # `b @34`


class InstructionSpec(NamedTuple):
    """An instruction of the selected code object; the session resolves it."""
    place: Place
    number: int


class BreakpointRef(NamedTuple):
    """`N` (a breakpoint) or `N.M` (its location M, gdb's numbering)."""
    number: int
    location: int | None


def parse_breakpoint_refs(arg: str) -> list[BreakpointRef]:
    """`1 2.1, 3`: breakpoints and locations, in order."""
    refs = []
    for part in arg.replace(",", " ").split():
        number, dot, location = part.partition(".")
        refs.append(BreakpointRef(parse_int(number, "breakpoint number"),
                                  parse_int(location, "location number") if dot else None))
    return refs


_GDB_CONDITION = re.compile(r"\s+if\s+")


def split_condition(arg: str) -> tuple[str, str | None]:
    """`LOCATION [, CONDITION]` (pdb's) or `LOCATION if CONDITION` (gdb's):
    the location text and the condition, checked."""
    spec, _, condition = arg.partition(",")
    gdb = _GDB_CONDITION.search(spec)
    if gdb is not None and not condition:
        spec, condition = spec[:gdb.start()], spec[gdb.end():]
    text = condition.strip() or None
    if text is not None:
        check_condition(text)
    return spec, text


def check_condition(condition: str) -> None:
    try:
        compile(condition, "<condition>", "eval")
    except SyntaxError:
        raise CommandError(f"invalid condition {condition!r}") from None


def parse_location(spec: str) -> InstructionSpec | Target:
    """INDEX, @OFFSET, FILE:LINE or a name (see named_target)."""
    spec = spec.strip()
    if not spec:
        raise CommandError("missing breakpoint location")
    if spec.startswith("@"):
        return InstructionSpec(Place.OFFSET, parse_int(spec[1:], "instruction offset"))
    if spec.lstrip("-").isdigit():
        return InstructionSpec(Place.INDEX, parse_int(spec, "instruction index"))
    if ":" in spec and spec.rpartition(":")[2].strip().isdigit():
        filename, _, line_text = spec.rpartition(":")
        line = int(line_text)
        if line < 1:
            raise CommandError("line number must be at least 1")
        return LineTarget(filename.strip(), line)
    return named_target(spec)


_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.*?[]<> -")


def named_target(spec: str) -> Target:
    """graph N / __compiled_fn_* / resume / torch_dynamo_resume_in_* / __resume_at_* / FUNC."""
    words = spec.split()
    if words[0] == "graph":
        if len(words) != 2 or not (words[1].isdigit() or words[1] == "*"):
            raise CommandError("usage: break graph N")
        return GraphCallTarget("__compiled_fn_*", None if words[1] == "*" else int(words[1]))
    if len(words) > 1 and not spec.startswith("<resume in "):
        raise CommandError(f"bad breakpoint location {spec!r}: a name has no spaces "
                           "(a condition goes after ',' or 'if')")
    if spec.startswith("__compiled_fn"):
        match = GRAPH_NAME.fullmatch(spec)
        if match:  # one graph, by number (the uuid suffix is optional)
            return GraphCallTarget(spec, int(match.group(1)))
        return GraphCallTarget(spec)
    if spec == "resume":
        return ResumeTarget()
    if spec.startswith(("torch_dynamo_resume_in_", "__resume_at_", "<resume in")):
        return ResumeTarget(spec)
    if len(words) == 1 and set(spec) <= _NAME_CHARS and not spec[0].isdigit():
        return FunctionTarget(spec)
    raise CommandError(f"bad breakpoint location {spec!r}: expected INDEX, @OFFSET, FILE:LINE, "
                       "graph N, __compiled_fn_*, resume, or a function name")


# -- list -----------------------------------------------------------------------------------------
class ListRange(NamedTuple):
    first: int   # may be negative: the caller clamps to the code object
    last: int


def parse_list_range(arg: str, current: int) -> ListRange:
    """`l INDEX` or `l .` (five each side of INDEX, or of the current
    instruction), `l FIRST, LAST`, or as pdb, `l FIRST, COUNT` where the
    second number is smaller than the first ("assume it's a count")."""
    parts = arg.replace(",", " ").split()
    if len(parts) == 1:
        center = current if parts[0] == "." else parse_int(parts[0], "instruction index")
        return ListRange(center - 5, center + 5)
    if len(parts) == 2:
        first = parse_int(parts[0], "instruction index")
        last = parse_int(parts[1], "instruction index")
        if last < first:
            if last < 1:
                raise CommandError("count must be at least 1")
            last = first + last - 1
        return ListRange(first, last)
    raise CommandError("usage: list [INDEX | . | FIRST, LAST | FIRST, COUNT]")
