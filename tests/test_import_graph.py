"""The import graph of the core: no cycle between modules, and no function-level
import without a stated reason.

The cycle check runs on the graph import-linter itself builds (grimp), with the
imports under ``if TYPE_CHECKING:`` included: a cycle that only the type checker
sees is still two modules that cannot be understood one without the other, and
excluding them would let an upward dependency hide there. The layer contracts
are in ``pyproject.toml`` (``lint-imports``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Set
from pathlib import Path

import grimp

import band_trio

PACKAGE_DIR = Path(band_trio.__file__).parent


def _import_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph("band_trio", exclude_type_checking_imports=False)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def _cycles(edges: Mapping[str, Set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (or a module
    importing itself), each as a sorted list; Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    found.append(sorted(component))
    return sorted(found)


def _one_cycle(component: list[str], edges: Mapping[str, Set[str]]) -> list[str]:
    """A concrete cycle through the first module of ``component`` (breadth-first),
    for the failure message."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(edges.get(node, ())):
            if child == start:
                return [*paths[node], start]
            if child in members and child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    raise AssertionError("not a cycle")  # pragma: no cover


def test_cycle_finder_finds_a_cycle_and_nothing_else() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _cycles(edges) == [["a", "b", "c"], ["e"]]
    assert _one_cycle(["a", "b", "c"], edges) == ["a", "b", "c", "a"]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_modules() -> None:
    edges = _import_graph()
    cycles = [f"{', '.join(c)}: {' -> '.join(_one_cycle(c, edges))}" for c in _cycles(edges)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def _function_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    yield inner


def _has_reason(lines: list[str], node: ast.stmt) -> bool:
    line = lines[node.lineno - 1]
    above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
    return "#" in line or above.startswith("#")


def _unexplained_imports(source: str) -> list[int]:
    tree = ast.parse(source)
    lines = source.splitlines()
    return sorted({n.lineno for n in _function_level_imports(tree) if not _has_reason(lines, n)})


def test_the_reason_scan_tells_explained_from_unexplained() -> None:
    source = (
        "def f():\n"
        "    # the extra is optional: imported on first use\n"
        "    import json\n"
        "    import os  # start-up cost\n"
        "    import sys\n"
    )
    assert _unexplained_imports(source) == [5]


def test_every_function_level_import_states_its_reason() -> None:
    unexplained = [
        f"{path.relative_to(PACKAGE_DIR.parent)}:{line}"
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        for line in _unexplained_imports(path.read_text(encoding="utf-8"))
    ]
    assert not unexplained, (
        "function-level imports need a comment on their line or the line above "
        "saying why they are not at the top of the module:\n" + "\n".join(unexplained)
    )
