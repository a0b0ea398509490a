"""Fixtures for the browser tests: a headless Chromium page, screenshotted on failure.

Chromium is Debian's ``chromium`` package (``.ci/run`` installs it), driven by
Playwright; Playwright's own browser downloads are never used. Where it is not
installed the browser tests are skipped with the command that installs it, unless
``BAND_REQUIRE_BROWSER`` is set (``.ci/run`` sets it): then they fail. A failing test
leaves ``failure.png`` and ``page.html`` in its pytest temporary directory and,
when ``BAND_TEST_ARTIFACTS`` names a directory, a copy there.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.playground.world import World, running_world

CHROMIUM = Path(os.environ.get("BAND_CHROMIUM") or "/usr/bin/chromium")
"""Debian's chromium; ``BAND_CHROMIUM`` names another executable."""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


ENV_REQUIRE_BROWSER = "BAND_REQUIRE_BROWSER"
"""Set (to anything but empty or ``0``) where a missing chromium is an error, not a skip."""
MISSING_CHROMIUM = (
    f"the browser tests need Debian's chromium at {CHROMIUM}: "
    "run `apt-get install -y chromium` to run them"
)


def browser_required() -> bool:
    return os.environ.get(ENV_REQUIRE_BROWSER, "").strip() not in ("", "0")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        if browser_required():
            pytest.fail(f"{MISSING_CHROMIUM} ({ENV_REQUIRE_BROWSER} is set)", pytrace=False)
        pytest.skip(MISSING_CHROMIUM)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def world() -> Iterator[World]:
    with running_world() as world:
        yield world


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
        assert errors == [], f"the page raised: {errors}"
    finally:
        if request.node.stash.get(_FAILED, False):
            _keep_artefacts(page, request.node.name, tmp_path)
        context.close()


def _keep_artefacts(page: Page, name: str, tmp_path: Path) -> None:
    shot = tmp_path / "failure.png"
    page.screenshot(path=str(shot), full_page=True)
    (tmp_path / "page.html").write_text(page.content())
    target = os.environ.get("BAND_TEST_ARTIFACTS")
    if target:
        out = Path(target) / name
        out.mkdir(parents=True, exist_ok=True)
        for file in (shot, tmp_path / "page.html"):
            shutil.copy(file, out / file.name)
    print(f"browser artefacts of {name}: {tmp_path}")
