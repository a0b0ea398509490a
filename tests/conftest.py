"""Suite-wide check: no API key or token ever shows in what a test leaves behind.

Every key the local platform mints has a recognisable shape (``band_u_…`` for
users, ``band_a_…`` for agents, ``band_admin_…`` for the admin API, ``bdt_…``
for delegation tokens, each followed by its random part), so the check needs no
list of keys: it looks for that shape in

* every log record that reaches the root logger, with the text of its
  exception (chained causes included) and its message built from the
  arguments, so ``%r`` of an object counts;
* the text of every :class:`~band_trio.errors.BandError` created, raised or
  not;
* each test's captured stdout, stderr and log sections and its failure report.

A test that leaks fails with the place and a masked excerpt. A test whose job
is to show credentials (the platform's command line prints them) says so with
``@pytest.mark.shows_credentials``.

It is cheap: one regular expression over texts that are built anyway.
"""

from __future__ import annotations

import contextlib
import logging
import re
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

from band_trio.errors import BandError

SECRET = re.compile(r"(band_(?:u|a|admin)_)[A-Za-z0-9_-]{32}|(bdt_)[A-Za-z0-9_-]{43}")
"""The shape of every key and token the local platform mints."""

_found: list[str] = []
"""Leaks seen since the current test phase started (where, masked excerpt)."""


def mask(text: str, match: re.Match[str]) -> str:
    """An excerpt around ``match`` with the secret's random part hidden."""
    start, end = match.span()
    excerpt = masked(text[max(0, start - 60) : end + 60])
    return excerpt.replace("\n", "\\n")


def _hide(match: re.Match[str]) -> str:
    return (match.group(1) or match.group(2)) + "***"


def masked(text: str) -> str:
    """``text`` with the random part of every key and token in it hidden."""
    return SECRET.sub(_hide, text)


def scan(where: str, text: str) -> None:
    """Record a leak if ``text`` holds a secret."""
    match = SECRET.search(text)
    if match is not None:
        _found.append(f"{where}: {mask(text, match)}")


class _SecretScanner(logging.Handler):
    """Scans every record that reaches the root logger (it never prints)."""

    def emit(self, record: logging.LogRecord) -> None:
        # A record whose arguments do not format is not this check's to judge.
        with contextlib.suppress(Exception):
            scan(f"log record of {record.name!r}", record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            scan(
                f"exception logged by {record.name!r}",
                "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
            )


_scanner = _SecretScanner(level=logging.NOTSET)
_original_init = BandError.__init__


def _scanning_init(self: BandError, *args: Any, **kwargs: Any) -> None:
    _original_init(self, *args, **kwargs)
    # The arguments hold the text; str() may need attributes a subclass sets later.
    scan(f"text of {type(self).__name__}", " ".join(map(str, self.args)))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "shows_credentials: the test's output shows credentials on purpose "
        "(exempt from the suite-wide secrets check)",
    )
    logging.getLogger().addHandler(_scanner)
    BandError.__init__ = _scanning_init  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    logging.getLogger().removeHandler(_scanner)
    BandError.__init__ = _original_init  # type: ignore[method-assign]


def _report_texts(report: pytest.TestReport) -> Iterator[tuple[str, str]]:
    for title, content in report.sections:
        # A report also carries the sections of the phases before it.
        if title.endswith(f" {report.when}"):
            yield title, content
    if report.failed and report.longrepr is not None:
        yield "failure report", report.longreprtext


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    for where, text in _report_texts(report):
        scan(where, text)
    leaks, _found[:] = list(_found), []
    if not leaks or item.get_closest_marker("shows_credentials") is not None:
        return
    leaked = (
        f"an API key or token leaked during {call.when} ({len(leaks)} place(s)):\n  "
        + "\n  ".join(leaks[:10])
    )
    if report.failed and report.longrepr is not None:
        # The test failed anyway: its own failure, masked, stays the first thing read.
        leaked = masked(report.longreprtext) + "\n\n" + leaked
    report.outcome = "failed"
    report.longrepr = leaked
