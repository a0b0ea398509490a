"""The local platform shares no code with the client it is tested against.

It may import only the error root and the small utilities of ``band_trio``,
and its own modules; none of its modules imports another in a cycle. Both are
read from the source (every import statement, also those guarded by
``TYPE_CHECKING``), so nothing at run time can hide an edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import band_trio.local

LOCAL = Path(band_trio.local.__file__).parent
ALLOWED_OUTSIDE = {"band_trio._terminal", "band_trio._util", "band_trio.errors"}


def _module_name(path: Path) -> str:
    parts = ["band_trio", "local", *path.relative_to(LOCAL).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Every ``band_trio`` module each local module imports (submodules resolved)."""
    modules = {_module_name(path): path for path in LOCAL.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = {f"{node.module}.{a.name}" for a in node.names} & modules.keys()
                found |= subs or {node.module}
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
        edges[name] = {m for m in found if m.split(".")[0] == "band_trio" and m != name}
    return edges


def test_local_imports_nothing_of_the_client() -> None:
    outside = {
        name: sorted(m for m in deps if not m.startswith("band_trio.local") and m != "band_trio")
        for name, deps in _imports().items()
    }
    assert {n: d for n, d in outside.items() if set(d) - ALLOWED_OUTSIDE} == {}
    assert all("band_trio" not in deps for deps in _imports().values())


def test_local_modules_import_each_other_one_way() -> None:
    edges = _imports()
    cycles: list[list[str]] = []

    def visit(name: str, path: list[str], done: set[str]) -> None:
        for dep in sorted(edges.get(name, ())):
            if dep in path:
                cycles.append([*path[path.index(dep) :], dep])
            elif dep not in done:
                done.add(dep)
                visit(dep, [*path, dep], done)

    for name in sorted(edges):
        visit(name, [name], set())
    assert cycles == []
