"""Fixtures of the Codex adapter's tests: the scripted Responses API the real
``codex`` binary talks to, and the binary itself.

The real-binary tests need node and the ``codex`` command (``npm install
@openai/codex``): ``BAND_CODEX`` names the executable, else ``codex`` on
``PATH``. Where either is missing they are skipped with the command that
installs it, unless ``BAND_REQUIRE_CODEX`` is set (``.ci/run`` sets it):
then they fail.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import trio
from responses_stub import ResponsesStub

ENV_REQUIRE_CODEX = "BAND_REQUIRE_CODEX"
"""Set (to anything but empty or ``0``) where a missing codex is an error, not a skip."""
MISSING_CODEX = (
    "the real-binary tests need node and the codex command: run `apt-get install -y nodejs npm` "
    "and `npm install -g @openai/codex@0.171.0` (or set BAND_CODEX to the executable)"
)


def codex_required() -> bool:
    return os.environ.get(ENV_REQUIRE_CODEX, "").strip() not in ("", "0")


def find_codex() -> Path | None:
    """The ``codex`` executable, when it and node are installed."""
    named = os.environ.get("BAND_CODEX") or shutil.which("codex")
    if not named or shutil.which("node") is None or not os.access(named, os.X_OK):
        return None
    return Path(named)


@pytest.fixture
def codex_binary() -> Path:
    found = find_codex()
    if found is None:
        if codex_required():
            pytest.fail(MISSING_CODEX)
        pytest.skip(MISSING_CODEX)
    return found


@pytest.fixture
async def responses_stub(nursery: trio.Nursery) -> ResponsesStub:
    stub = ResponsesStub()
    await nursery.start(stub.serve)
    return stub


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    """The binary's home (its threads are stored there)."""
    home = tmp_path / "codex-home"
    home.mkdir()
    return home
