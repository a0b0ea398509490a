"""Every adapter package under ``adapters/`` is part of the workspace with one
edit of the root ``pyproject.toml``: the globs find it for uv, pytest and mypy,
and the one line that cannot glob (import-linter's ``root_packages``) lists it.

The recipe is docs/writing-an-adapter-package.rst."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
MEMBERS = sorted(p.parent for p in REPO.glob("adapters/*/pyproject.toml"))


def _import_package(member: Path) -> str:
    config: dict[str, Any] = tomllib.loads((member / "pyproject.toml").read_text("utf-8"))
    (package,) = config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    return str(package)


def _matches(path: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def test_there_are_adapter_members() -> None:
    assert {m.name for m in MEMBERS} >= {"anthropic", "langgraph"}


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: m.name)
def test_every_member_is_covered_by_the_root_configuration(member: Path) -> None:
    relative = member.relative_to(REPO).as_posix()
    package = _import_package(member)
    assert package.startswith("band_trio_"), "an adapter's import package is band_trio_<name>"
    assert (member / package / "__init__.py").is_file()
    assert (member / package / "py.typed").is_file(), f"{package} ships no py.typed"
    assert _matches(relative, ROOT["tool"]["uv"]["workspace"]["members"])
    assert _matches(f"{relative}/tests", ROOT["tool"]["pytest"]["ini_options"]["testpaths"])
    assert _matches(f"{relative}/{package}", ROOT["tool"]["mypy"]["files"])
    assert package in ROOT["tool"]["importlinter"]["root_packages"], (
        f"add {package!r} to [tool.importlinter] root_packages in the root pyproject.toml"
    )
    config = tomllib.loads((member / "pyproject.toml").read_text("utf-8"))
    assert config["tool"]["uv"]["sources"]["band-trio"] == {"workspace": True}


def test_root_packages_are_the_core_and_the_members() -> None:
    expected = {"band_trio", *(_import_package(m) for m in MEMBERS)}
    assert set(ROOT["tool"]["importlinter"]["root_packages"]) == expected


def test_no_contract_names_an_adapter() -> None:
    # The adapters' contract protects the core; it names no adapter, so a new
    # one needs no edit there.
    packages = {_import_package(m) for m in MEMBERS}
    (contract,) = [
        c
        for c in ROOT["tool"]["importlinter"]["contracts"]
        if c["name"] == "The adapters use band-trio's public packages only"
    ]
    assert not any(p in repr(contract) for p in packages)
