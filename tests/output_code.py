"""torch's own account of an inductor output code, read by the tests from
the module torch loaded (its text): the statements of `call` a stop comes
before, in order, and each kernel call with the nodes inductor's `Source
Nodes` comment above it names (tests/test_graph_*inductor*.py)."""
from __future__ import annotations

import ast
import re
from typing import NamedTuple

SOURCE_NODES = re.compile(r"Source Nodes: \[([^\]]*)\]")


class CallStep(NamedTuple):
    line: int                            # of the output code file
    text: str                            # the statement, stripped
    name: str                            # the callee, `.run` dropped: `triton_poi_fused_relu_0`
    kernel: bool                         # a kernel call (else an allocation, a reinterpret, the return)
    comment: tuple[str, ...] | None      # the comment's nodes; None where inductor wrote none


def call_steps(source: str) -> list[CallStep]:
    """Each statement of `call` (nested ones too: a device guard's body) that
    is a kernel call, an allocation, a reinterpret or the return, by line."""
    text = source.splitlines()
    defined = set(re.findall(r"^(\w+) = async_compile\.", source, re.M))
    call = next(n for n in ast.walk(ast.parse(source))
                if isinstance(n, ast.FunctionDef) and n.name == "call")
    found: list[CallStep] = []
    for stmt in ast.walk(call):
        if not isinstance(stmt, (ast.Expr, ast.Assign, ast.Return)):
            continue
        statement = text[stmt.lineno - 1].strip()
        callee = re.match(r"(?:\w+ = )?([\w.]+)\(", statement)
        name = callee[1].removesuffix(".run") if callee else ""
        if isinstance(stmt, ast.Return) or name.startswith(("empty_strided", "reinterpret_tensor")):
            found.append(CallStep(stmt.lineno, statement, name or "return", False, None))
        elif name.startswith("extern_kernels.") or name in defined:
            above = text[stmt.lineno - 2].strip()
            comment = SOURCE_NODES.search(above) if above.startswith("#") else None
            found.append(CallStep(stmt.lineno, statement, name, True,
                                  tuple(n.strip() for n in comment[1].split(",")) if comment else None))
    return sorted(found)
