"""Without chromium the browser tests are skipped with a reason, or fail where required."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ONE_BROWSER_TEST = "tests/playground/test_playground_browser.py::test_the_page_has_an_icon"


def run_one_browser_test(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "BAND_REQUIRE_BROWSER"}
    environ |= {"BAND_CHROMIUM": str(tmp_path / "no-chromium"), **env}
    return subprocess.run(
        [sys.executable, "-m", "pytest", ONE_BROWSER_TEST, "-p", "no:cacheprovider", "-rs"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_without_chromium_the_browser_tests_are_skipped_saying_how_to_run_them(
    tmp_path: Path,
) -> None:
    result = run_one_browser_test(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "SKIPPED" in result.stdout
    assert "apt-get install -y chromium" in result.stdout


def test_where_the_browser_is_required_a_missing_chromium_is_an_error(tmp_path: Path) -> None:
    result = run_one_browser_test(tmp_path, BAND_REQUIRE_BROWSER="1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 error" in result.stdout
    assert "BAND_REQUIRE_BROWSER is set" in result.stdout
