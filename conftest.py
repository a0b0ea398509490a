"""Every adapter under adapters/ is a uv workspace member found by a glob, so
the root project does not depend on them: a clear error when they are not
installed beats an import error in each of their test modules."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parent


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop at once when an adapter package of the workspace is not installed."""
    missing = []
    for config in sorted(_REPO.glob("adapters/*/pyproject.toml")):
        wheel = tomllib.loads(config.read_text("utf-8"))["tool"]["hatch"]["build"]["targets"]
        for package in wheel["wheel"]["packages"]:
            if importlib.util.find_spec(package) is None:
                missing.append(package)
    if missing:
        raise pytest.UsageError(
            f"the workspace's adapter package(s) {', '.join(missing)} are not installed: "
            "run `uv sync --all-packages` (or `uv run --all-packages pytest`)"
        )
