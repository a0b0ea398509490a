"""docs/internal-api.md describes the import contracts that ``pyproject.toml``
enforces: the same layers in the same order, and every contract by its name."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "internal-api.md"


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _documented_layers(section: str) -> list[str]:
    """The first column of the fenced block: one layer per line, siblings
    separated by ``:``, the description after two or more spaces."""
    block = section.split("```")[1]
    lines = [line for line in block.splitlines()[1:] if line.strip()]
    return [
        " : ".join(part.strip() for part in re.split(r"\s{2,}", line)[0].split(":"))
        for line in lines
    ]


def _layers_contract(name: str) -> dict[str, Any]:
    return next(c for c in _contracts() if c["name"] == name)


def _normalised(layers: list[str]) -> list[str]:
    return [" : ".join(part.strip() for part in layer.split(":")) for layer in layers]


def test_the_core_layers_are_documented_in_order() -> None:
    contract = _layers_contract("The core's layers are one-way")
    documented = _documented_layers(_section("The layers"))
    assert documented == _normalised(contract["layers"])


def test_every_import_contract_is_documented_by_name() -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [c["name"] for c in _contracts() if f'"{c["name"]}"' not in text]
    assert not missing, f"contracts of pyproject.toml not named in {DOC.name}: {missing}"


def test_the_layers_that_stand_beside_are_documented() -> None:
    contract = _layers_contract("The core's layers are one-way")
    section = _section("The layers")
    for name in contract.get("exhaustive_ignores", []):
        assert f"`{name}`" in section, f"{name} stands beside the layers: say so"
