"""The test tree's own rules: helpers live in conftest or helper modules (a test
module never imports another test module), and files are named after their
subject."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_DIRS = (ROOT / "tests", *sorted((ROOT / "adapters").glob("*/tests")))


def _python_files() -> list[Path]:
    return sorted(p for d in TEST_DIRS for p in d.rglob("*.py") if ".venv" not in p.parts)


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, relative imports made absolute."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_no_test_module_imports_another_test_module() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in _python_files()
        for module in sorted(_imported_modules(path))
        if module.rsplit(".", 1)[-1].startswith("test_")
    ]
    assert offenders == []


def test_files_are_named_after_their_subject() -> None:
    process_words = re.compile(r"gaps|review|audit|issue\d|milestone|\bS\d+\b|\bH\d+\b")
    offenders = [
        str(path.relative_to(ROOT)) for path in _python_files() if process_words.search(path.stem)
    ]
    assert offenders == []
