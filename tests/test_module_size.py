"""One idea per module: no library module grows past ~800 lines, with no
exception."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 850  # "about 800"


def _library_modules() -> list[Path]:
    files = list((ROOT / "band_trio").rglob("*.py"))
    files += list((ROOT / "adapters").glob("*/band_trio_*/**/*.py"))
    return sorted(files)


def _too_long(paths: list[Path], root: Path = ROOT) -> list[str]:
    too_long = []
    for path in paths:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LIMIT:
            too_long.append(f"{path.relative_to(root).as_posix()}: {lines} lines")
    return too_long


def test_library_modules_stay_small() -> None:
    too_long = _too_long(_library_modules())
    assert not too_long, "modules over ~800 lines:\n" + "\n".join(too_long)


def test_a_module_past_the_limit_is_reported(tmp_path: Path) -> None:
    at_limit = tmp_path / "at_limit.py"
    at_limit.write_text("x = 1\n" * LIMIT, encoding="utf-8")
    past = tmp_path / "past.py"
    past.write_text("x = 1\n" * (LIMIT + 1), encoding="utf-8")
    assert _too_long([at_limit, past], root=tmp_path) == [f"past.py: {LIMIT + 1} lines"]


def _public_classes(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
    }


def test_no_two_modules_or_public_classes_share_a_name() -> None:
    """A name says what a thing is, once: no module file name appears twice in
    the core, and no public class name twice in the core and the adapters
    (each adapter distribution has its own ``adapter.py`` and ``converter.py``:
    the same roles, in separate packages)."""
    modules: dict[str, list[str]] = {}
    classes: dict[str, list[str]] = {}
    for path in _library_modules():
        rel = path.relative_to(ROOT).as_posix()
        if path.name != "__init__.py" and rel.startswith("band_trio/"):
            modules.setdefault(path.name, []).append(rel)
        for name in _public_classes(path):
            classes.setdefault(name, []).append(rel)
    twice = {k: v for k, v in {**modules, **classes}.items() if len(v) > 1}
    assert not twice, f"names used twice: {twice}"
