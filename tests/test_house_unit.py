"""The house rules a test can keep (issue 36). No import circle among
dyndbg's modules, typing-only imports included: every `import` and `from ...
import` anywhere in a module (at its top, in a function, under TYPE_CHECKING)
is an edge; a layer that must see another's objects takes a Protocol from a
leaf module (ui/commands/host.py, dap/hub.py, engine/tracing/tracer.py) instead of importing
the module that holds them. And every `type: ignore` names its error code and
says why (`make typecheck` runs the checker itself)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dyndbg"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imported(module: str, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The dyndbg modules an import statement names (a name imported from a
    package counts as the package, unless it is one of its modules)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if modules[module].name != "__init__.py":
                package = package[:-1]
            package = package[:len(package) - (node.level - 1)]
            base = ".".join([*package, base] if base else package)
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                 for alias in node.names]
    found = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _imported(module, node, modules)
        graph[module] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_circles_are_found() -> None:
    """The finder itself: a typing-only import back closes a circle."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    # At the top, in a function (make_tracer's choice), under TYPE_CHECKING.
    assert "dyndbg.engine.tracing.tracer" in graph["dyndbg.engine.tracing.settrace"]
    assert "dyndbg.engine.tracing.monitoring" in graph["dyndbg.engine.tracing.choice"]
    assert "dyndbg.dap.hub" in graph["dyndbg.dap.stop_requests"]


def test_no_import_circle_among_dyndbg_modules() -> None:
    found = circles(import_graph())
    assert found == [], "import circles: " + "; ".join(" <-> ".join(c) for c in found)


IGNORE = re.compile(r"#\s*type:\s*ignore(?P<code>\[[^\]]+\])?(?P<why>\s+#\s*\S.*)?")


def test_every_type_ignore_says_which_error_and_why() -> None:
    bare = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found = IGNORE.search(line)
            if found and not (found["code"] and found["why"]):
                bare.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert bare == [], "\n".join(bare)


def test_tests_share_helpers_through_a_module_not_conftest() -> None:
    """conftest.py is pytest's (fixtures and hooks); what tests share is in
    harness.py, imported like any module."""
    importers = [path.name for path in (ROOT / "tests").rglob("*.py")
                 if re.search(r"^\s*(from conftest import|import conftest)", path.read_text(), re.M)]
    assert importers == []


def _by_folder(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """`package`'s import graph with each sub-package as one node (its
    modules merged) and each top module as itself."""
    def node(module: str) -> str:
        parts = module[len(package) + 1:].split(".")
        return parts[0] if parts != [""] else "(init)"
    merged: dict[str, set[str]] = {}
    for module, edges in graph.items():
        if module.startswith(package + "."):
            merged.setdefault(node(module), set()).update(
                node(other) for other in edges if other.startswith(package + ".") and
                node(other) != node(module))
    return merged


def test_dynamo_and_ui_are_folders_by_concept_with_no_circle_between_them() -> None:
    """Issue 49: a folder answers "where is X" in one look, and the folders
    stack in floors: no sub-package imports one that imports it back (in
    dynamo/: the shared modules, then shapes, then guards, then compiles and graphs, then
    symbolic and edits, then hooks.py; in ui/: text, commands, terminal, then
    the session)."""
    graph = import_graph()
    for package, folders in (("dyndbg.dynamo", {"compiles", "guards", "graphs", "edits", "symbolic",
                                                "shapes"}),
                             ("dyndbg.ui", {"commands", "terminal", "text"})):
        merged = _by_folder(graph, package)
        assert folders <= set(merged), sorted(merged)
        found = circles(merged)
        assert found == [], f"{package}: " + "; ".join(" <-> ".join(c) for c in found)
    dynamo = _by_folder(graph, "dyndbg.dynamo")
    # The shared modules at the top import no folder; only hooks.py does.
    assert {name for name, edges in dynamo.items() if "." not in name and name != "hooks"
            and name not in {"compiles", "guards", "graphs", "edits", "symbolic", "shapes", "(init)"}
            and edges & {"compiles", "guards", "graphs", "edits", "symbolic", "shapes",
                         "hooks"}} == set()


def _assigned_attributes(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute):
                    names.add(part.attr)
    return names


def test_one_stop_held_once_by_the_engine() -> None:
    """Issue 49: the engine holds the stop (engine/stop.py's HeldStop); no
    front end keeps a copy of it."""
    for path in sorted([*(PACKAGE / "ui").rglob("*.py"), *(PACKAGE / "dap").rglob("*.py"),
                        PACKAGE / "pytest_session.py", PACKAGE / "notebook.py"]):
        kept = _assigned_attributes(path) & {"stop", "compile_stop", "_stopped"}
        assert kept == set(), f"{path.relative_to(ROOT)} keeps {sorted(kept)}"


def test_the_editor_reads_no_printed_text() -> None:
    """Issue 49: dap/ answers no request by capturing what the session
    prints: no StringIO there, and it never swaps the session's output."""
    for path in sorted((PACKAGE / "dap").rglob("*.py")):
        text = path.read_text()
        assert "StringIO" not in text, path.name
        assert "out" not in _assigned_attributes(path), path.name
