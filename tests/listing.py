"""Finding an instruction in dyndbg's own listing (`ll`, `l`) by what it is.

Tests must not pin the indexes one torch release generates (torch 2.15 wraps
every graph call in a profiler-gated template that shifts them and adds
branches). A test lists the code that was actually compiled and finds the
instruction it talks about by opname, argument and source line:

    code = parse_listing(segment.output)           # the lines `ll` printed
    call = code.find("CALL_FUNCTION_EX")           # exactly one, or an AssertionError
    store = code.find("STORE_FAST", "graph_out_0")
    first = code.first("LOAD_FAST", "x", after=call)
    code.find_all("LOAD_GLOBAL", re.compile(r"(NULL \\+ )?torch\\..*"))

`successors` and `path_problem` read the control flow the listing shows
(`to 104` on 3.11/3.12, `to L2` on 3.13), to check the order in which
instructions ran without assuming straight-line code.

Pure: no torch, no subprocess (tests/test_listing_unit.py runs in
milliseconds).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Union

# render.disassembly_line: marker (`->`, then `*` on a line a cache edit changed),
# index, offset, breakpoint (`B1`, `b2` disabled, `B1?` a candidate call), `>>` on a
# jump target, opname and its argument as the listing shows it.
INSTR_LINE = re.compile(r"^(?P<current>->|  )(?P<changed>[ *])\s*(?P<index>\d+) @(?P<offset>\d+)\s+"
                        r"(?:(?P<bp>[Bb]\d+\??)\s+)?(?P<target>>>)?\s*(?P<op>[A-Z][A-Z0-9_]*)"
                        r"(?:\s+(?P<arg>.*?))?\s*$")
# render.disassembly: `   FILE:LINE  source` above the instructions of that line.
SOURCE_HEADER = re.compile(r"^   (?P<file>\S+):(?P<line>\d+)  ")
JUMP_ARG = re.compile(r"^to (?:(?P<offset>\d+)|L(?P<label>\d+))$")
# No fall-through after these.
UNCONDITIONAL = frozenset({
    "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_ABSOLUTE", "JUMP", "JUMP_NO_INTERRUPT",
    "JUMP_BACKWARD_NO_INTERRUPT", "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"})

Match = Union[str, "re.Pattern[str]", None]


@dataclass(frozen=True)
class Instr:
    index: int
    offset: int
    opname: str
    arg: str               # as the listing shows it ("NULL + graph 2", "'print'", "to 104"), "" if none
    file: str | None       # the source header above it (short path), None before any
    line: int | None
    current: bool = False  # `->`
    changed: bool = False  # `*`: a cache edit changed it
    breakpoint: str = ""   # "B1", "b2", "B1?" or ""
    jump_target: bool = False

    def __str__(self) -> str:
        return f"{self.index} @{self.offset} {self.opname} {self.arg}".rstrip()


def _matches(value: str, wanted: Match) -> bool:
    if wanted is None:
        return True
    if isinstance(wanted, str):
        return value == wanted
    return wanted.fullmatch(value) is not None


def _index(bound: int | Instr | None) -> int | None:
    return bound.index if isinstance(bound, Instr) else bound


class Listing:
    """One code object's instructions, as one `ll` (or part, as `l`) printed them."""

    def __init__(self, instrs: list[Instr], text: str = "") -> None:
        self.instrs = instrs
        self.text = text
        self._by_index = {i.index: i for i in instrs}
        self._by_offset = {i.offset: i for i in instrs}

    def __len__(self) -> int:
        return len(self.instrs)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.instrs)

    def at(self, index: int) -> Instr:
        assert index in self._by_index, f"no instruction {index} in the listing:\n{self.text}"
        return self._by_index[index]

    def at_offset(self, offset: int) -> Instr:
        assert offset in self._by_offset, f"no instruction @{offset} in the listing:\n{self.text}"
        return self._by_offset[offset]

    @property
    def current(self) -> Instr | None:
        marked = [i for i in self.instrs if i.current]
        return marked[0] if marked else None

    def find_all(self, opname: Match = None, arg: Match = None, *, line: int | None = None,
                 after: int | Instr | None = None, before: int | Instr | None = None) -> list[Instr]:
        """Every instruction that matches, in order. opname and arg: a string is
        compared whole, a compiled pattern must match the whole text; line: the
        source line; after/before: index bounds, exclusive."""
        low, high = _index(after), _index(before)
        return [i for i in self.instrs
                if _matches(i.opname, opname) and _matches(i.arg, arg)
                and (line is None or i.line == line)
                and (low is None or i.index > low) and (high is None or i.index < high)]

    def find(self, opname: Match = None, arg: Match = None, **where) -> Instr:  # type: ignore[no-untyped-def]
        """The one instruction that matches; an AssertionError if none or several do."""
        found = self.find_all(opname, arg, **where)
        assert len(found) == 1, \
            f"{len(found)} instructions match {_said(opname, arg, where)} " \
            f"({', '.join(map(str, found[:5]))}), one expected, in:\n{self.text}"
        return found[0]

    def first(self, opname: Match = None, arg: Match = None, **where) -> Instr:  # type: ignore[no-untyped-def]
        """The first instruction that matches; an AssertionError if none does."""
        found = self.find_all(opname, arg, **where)
        assert found, f"no instruction matches {_said(opname, arg, where)} in:\n{self.text}"
        return found[0]

    def jump_target(self, instr: Instr) -> Instr | None:
        """Where a jump instruction goes: `to 104` is an offset; `to L2` (3.13) the
        second jump target (`>>`) of the code, as dis numbers its labels."""
        match = JUMP_ARG.match(instr.arg)
        if match is None:
            return None
        if match["offset"] is not None:
            return self.at_offset(int(match["offset"]))
        targets = [i for i in self.instrs if i.jump_target]
        label = int(match["label"])
        assert 1 <= label <= len(targets), f"no label L{label} in:\n{self.text}"
        return targets[label - 1]

    def successors(self, instr: Instr) -> list[int]:
        """The indexes that can run right after `instr` within the same frame."""
        following: list[int] = []
        if instr.opname not in UNCONDITIONAL and instr.index + 1 in self._by_index:
            following.append(instr.index + 1)
        target = self.jump_target(instr)
        if target is not None and target.index not in following:
            following.append(target.index)
        return following

    def on_every_path(self, instr: Instr) -> bool:
        """Whether every way through the code (from its first instruction to one
        with no successor here, as a return) passes `instr`: an instruction in
        the body of an `if` does not, the code around it does."""
        start = self.instrs[0]
        if start is instr:
            return True
        seen, todo = {start.index}, [start]
        while todo:
            here = todo.pop()
            following = self.successors(here)
            if not following:
                return False           # an end reached without passing instr
            for index in following:
                if index != instr.index and index not in seen:
                    seen.add(index)
                    todo.append(self._by_index[index])
        return True

    def path_problem(self, indexes: list[int]) -> str | None:
        """None if `indexes` is an order in which this code's instructions can
        run one after the other (each one a successor of the one before);
        otherwise what is wrong, for an assertion message."""
        for index in indexes:
            if index not in self._by_index:
                return f"instruction {index} is not in the listing"
        for before, after in zip(indexes, indexes[1:]):
            allowed = self.successors(self._by_index[before])
            if after not in allowed:
                return (f"{after} ran after {self._by_index[before]}, which can only be "
                        f"followed by {allowed}")
        return None


def _said(opname: Match, arg: Match, where: dict) -> str:
    parts = [f"opname={getattr(opname, 'pattern', opname)!r}"] if opname is not None else []
    if arg is not None:
        parts.append(f"arg={getattr(arg, 'pattern', arg)!r}")
    parts += [f"{k}={_index(v) if k in ('after', 'before') else v!r}" for k, v in where.items()]
    return ", ".join(parts) or "anything"


def parse_listing(text: str | Iterable[str]) -> Listing:
    """The instructions of one listing: `text` is what `ll` (or `l`) printed,
    one string or its lines; other lines (prompts, stop lines) are skipped,
    but a source header sets the line of the instructions under it (`ll` prints
    no header for an instruction without a line: it keeps the line above)."""
    lines = text.splitlines() if isinstance(text, str) else list(text)
    instrs: list[Instr] = []
    file: str | None = None
    line: int | None = None
    for raw in lines:
        header = SOURCE_HEADER.match(raw)
        if header:
            file, line = header["file"], int(header["line"])
            continue
        match = INSTR_LINE.match(raw)
        if match is None:
            continue
        instrs.append(Instr(index=int(match["index"]), offset=int(match["offset"]),
                            opname=match["op"], arg=match["arg"] or "", file=file, line=line,
                            current=match["current"] == "->", changed=match["changed"] == "*",
                            breakpoint=match["bp"] or "", jump_target=match["target"] == ">>"))
    indexes = [i.index for i in instrs]
    assert indexes == sorted(set(indexes)), f"not one listing (indexes {indexes[:20]}…)"
    return Listing(instrs, "\n".join(lines))
