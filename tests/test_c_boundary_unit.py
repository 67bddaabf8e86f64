"""What the compiled core reads from Python, and builds for it, by position
is named on both sides: each C index enum (IDENT = N) equals the place of
the field of that name in its NamedTuple's _fields (its *_FIELDS member the
count), and each C result code the value of the Python Enum member of that
name. Read from the C sources, so that it holds without a compiler too; and
no C source reads or fills a tuple at a bare number."""
from __future__ import annotations

import ast
import enum
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from dyndbg.cpython.valuestack import EventMode
from dyndbg.engine.breakpoints import ConditionCheck
from dyndbg.engine.conditions import Outcome
from dyndbg.engine.fast_paths import FastInstructions
from dyndbg.engine.recording.history import Record, RecordResult, RecordSpec
from dyndbg.engine.recording.recorded_values import ContainerBounds, Kept
from dyndbg.engine.tracing.compiled_filters import FrameStart

PACKAGE = Path(__file__).resolve().parent.parent / "dyndbg"
C_SOURCES = sorted([*PACKAGE.rglob("*.c"), *PACKAGE.rglob("*.h")])


def _enum(path: str, tag: str) -> dict[str, int]:
    """The members of `enum tag { ... }` in a C source, by name."""
    text = (PACKAGE / path).read_text()
    found = re.search(r"enum\s+" + tag + r"\s*\{(.*?)\}", text, re.S)
    assert found, f"no enum {tag} in {path}"
    body = re.sub(r"/\*.*?\*/", "", found.group(1), flags=re.S)
    members = {}
    for item in filter(None, (part.strip() for part in body.split(","))):
        name, _, value = item.partition("=")
        assert value.strip(), f"{path}: {tag}.{name.strip()} has no explicit value"
        members[name.strip()] = int(value.strip(), 0)
    return members


def _fields(prefix: str, record: type[tuple]) -> dict[str, int]:
    """What the C enum of a NamedTuple's fields must hold."""
    fields = record._fields  # type: ignore[attr-defined]  # a NamedTuple class
    return {**{f"{prefix}_{name.upper()}": i for i, name in enumerate(fields)},
            f"{prefix}_FIELDS": len(fields)}


class Pinned(NamedTuple):
    path: str             # under dyndbg/
    tag: str              # the C enum's tag
    prefix: str           # its members' prefix
    python: type          # the NamedTuple whose _fields it names


NAMED_TUPLES = [
    Pinned("engine/tracing/_fast_paths.h", "ConditionCheckField", "CONDITION_CHECK",
           ConditionCheck),
    Pinned("engine/tracing/_fast_paths.h", "OutcomeField", "OUTCOME", Outcome),
    Pinned("engine/tracing/_filters.h", "FrameStartField", "FRAME_START", FrameStart),
    Pinned("engine/tracing/_monitoring.c", "FastInstructionsField", "FAST_INSTRUCTIONS",
           FastInstructions),
    Pinned("engine/recording/_recorder.h", "RecordSpecField", "RECORD_SPEC", RecordSpec),
    Pinned("engine/recording/_recorder.h", "RecordField", "RECORD", Record),
    Pinned("engine/recording/_recorder.h", "ContainerBoundsField", "CONTAINER_BOUNDS",
           ContainerBounds),
    Pinned("engine/recording/_kept_values.h", "KeptField", "KEPT", Kept),
]


@pytest.mark.parametrize("pinned", NAMED_TUPLES, ids=lambda p: p.python.__name__)
def test_each_index_c_reads_is_the_named_tuples_field_of_that_name(pinned: Pinned) -> None:
    assert _enum(pinned.path, pinned.tag) == _fields(pinned.prefix, pinned.python)


class PinnedCodes(NamedTuple):
    path: str
    tag: str
    prefix: str
    python: type[enum.Enum]
    every: bool           # the C enum names every member (not some)


ENUMS = [
    PinnedCodes("engine/recording/_recorder.h", "RecordResult", "RECORD_RESULT", RecordResult,
                True),
    PinnedCodes("engine/tracing/_fast_paths.h", "RecordResult", "RECORD_RESULT", RecordResult,
                False),
    PinnedCodes("cpython/_frames.c", "EventMode", "", EventMode, True),
]


@pytest.mark.parametrize("pinned", ENUMS, ids=lambda p: f"{p.path}:{p.tag}")
def test_each_result_code_c_returns_is_the_python_enums_value(pinned: PinnedCodes) -> None:
    expected = {(f"{pinned.prefix}_" if pinned.prefix else "") + member.name: member.value
                for member in pinned.python}
    got = _enum(pinned.path, pinned.tag)
    if pinned.every:
        assert got == expected
    else:
        assert got and got.items() <= expected.items()


def test_no_c_source_reads_or_fills_a_tuple_at_a_bare_number() -> None:
    bare = re.compile(r"PyTuple_(?:GET|SET)_ITEM\([^,()]+(?:\([^()]*\))?,\s*\d+\s*[,)]"
                      r"|PyTuple_Pack\(\s*[2-9]")
    found = [f"{path.relative_to(PACKAGE)}: {match.group(0)}" for path in C_SOURCES
             for match in bare.finditer(path.read_text())]
    assert not found, found


# Names C looks up that Python itself or a library defines, not dyndbg: the
# trace functions' event names, frame attributes, a lock's and a deque's
# methods, Tensor._version, the instruction's opname.
OUTSIDE_DYNDBG = {"call", "line", "opcode", "exception", "return", "f_trace", "f_trace_lines",
                  "f_trace_opcodes", "acquire", "release", "append", "popleft", "_version",
                  "opname"}


def _defined_names() -> set[str]:
    """Every attribute, method, class and field name dyndbg's Python defines:
    `x.name = ...` (and augmented, annotated), a class body's names, `def name`;
    and every string key it stores (`events["instruction"] += 1`)."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and \
                    isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                names.add(node.slice.value)        # a key counted: events["instruction"] += 1
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                if isinstance(node, ast.ClassDef):
                    for item in node.body:
                        targets = item.targets if isinstance(item, ast.Assign) else \
                            [item.target] if isinstance(item, ast.AnnAssign) else []
                        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def test_each_attribute_name_c_reads_is_defined_in_dyndbgs_python() -> None:
    """C reads Python state by name (interned once): a name Python renames
    must not leave C reading an attribute nobody sets any more."""
    interned = {name for path in C_SOURCES
                for name in re.findall(r'dyndbg_intern\(\s*&[\w>.-]+\s*,\s*"(\w+)"\)', path.read_text())}
    assert len(interned) > 20, interned          # the pattern still finds them
    missing = sorted(interned - OUTSIDE_DYNDBG - _defined_names())
    assert missing == [], f"C reads attributes no dyndbg Python defines: {missing}"
