"""No file cites a document outside the repository.

The team's reference ships in docs/reference/*.rst, and a citation names one of
those pages and a section title, so a reader of any checkout can follow it. This
test fails on the old forms that pointed outside the repository: the Markdown
files of the old reference (``runtime``, ``protocol`` and ``tools_adapters``
with the ``.md`` suffix), a section number written with the section sign, and
absolute paths under the ``work`` or ``tmp`` directories of the file system root
(machine-local places that exist only where the file was written).

Its own examples of the old forms are spelled so that this file passes the scan
too (tests/ is scanned once its citations are rewritten).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# The trees scanned, relative to the repository root (a glob each). tests/ joins
# them once its own citations are rewritten in the same style.
CITATION_SCANNED_ROOTS = (
    "band_trio",
    "adapters",
    "benchmarks",
    "docs",
    "examples",
    "tests",
    "README.rst",
    "CHANGELOG.rst",
)

SCANNED_SUFFIXES = frozenset({".py", ".md", ".rst", ".txt", ".toml", ".cfg", ".ini"})

FORBIDDEN = {
    "a reference file outside the repository": re.compile(
        r"\b(?:runtime|protocol|tools_adapters)\.md\b"
    ),
    "a section number": re.compile("\N{SECTION SIGN}"),
    "a machine-local path": re.compile(r"(?<![\w.~-])/(?:work|tmp)/"),
}


def scanned_files() -> Iterator[Path]:
    for pattern in CITATION_SCANNED_ROOTS:
        for root in sorted(REPO.glob(pattern)):
            candidates = [root] if root.is_file() else sorted(root.rglob("*"))
            for path in candidates:
                if path.is_file() and path.suffix in SCANNED_SUFFIXES:
                    yield path


def offences(text: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern in FORBIDDEN.items():
            if pattern.search(line):
                found.append(f"{number}: {what}: {line.strip()}")
    return found


def test_every_scanned_root_exists() -> None:
    for pattern in CITATION_SCANNED_ROOTS:
        assert list(REPO.glob(pattern)), f"{pattern} matches nothing"


def test_the_scan_reads_python_and_the_reference_pages() -> None:
    files = {path.relative_to(REPO).as_posix() for path in scanned_files()}
    assert "band_trio/runtime/core/_history.py" in files
    assert "docs/reference/official-runtime.rst" in files
    assert "docs/internal-api.md" in files
    assert any(name.startswith("adapters/anthropic/band_trio_anthropic/") for name in files)


@pytest.mark.parametrize(
    "line",
    [
        "never sees recent turns (reference runtime" + ".md \N{SECTION SIGN}9.3)",
        "(protocol" + ".md, URL)",
        "tools_adapters" + ".md item 14",
        "see \N{SECTION SIGN}9.19",
        "    short = file.replace('/wo" + "rk/main/', '')",
        "written to /t" + "mp/profile.txt",
    ],
)
def test_the_old_citation_forms_are_found(line: str) -> None:
    assert offences(line)


@pytest.mark.parametrize(
    "line",
    [
        'never sees recent turns (official runtime, "Weak spots" 3)',
        "Reference: docs/reference/official-runtime.rst.",
        "a runtime.mdx file, a protocol.markdown",
        "waited for a CPU (from /proc/<pid>/schedstat)",
        "benchmarks/work/tmp/ is relative",
    ],
)
def test_the_in_repository_forms_pass(line: str) -> None:
    assert offences(line) == []


def test_no_file_cites_a_document_outside_the_repository() -> None:
    found = []
    for path in scanned_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path.relative_to(REPO)}:{entry}" for entry in offences(text)]
    assert found == [], "\n".join(found)
