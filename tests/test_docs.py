"""Every code block of the documentation is either run by a test or marked as
illustrative, so no page can show code that silently stopped working.

The convention, for every page under docs/:

* a block that shows a program, or part of one, that a test runs is a
  ``.. literalinclude::`` of a script under ``examples/`` (or an adapter's
  ``examples/``), and some test names that script;
* any other block is a ``.. code-block::`` with ``:class: illustrative`` (the
  site labels it "illustrative"): a sketch, a command, a log line, a file to
  adapt;
* a bare literal block (a paragraph ending in ``::``) is not allowed, since it
  cannot carry the mark.

Pages are parsed with docutils; Sphinx-only directives (autodoc, toctree) and
roles are unknown to it and skipped, which is fine: they hold no code blocks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import docutils.core
import pytest
from docutils import nodes
from docutils.parsers.rst import Directive, directives

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
EXAMPLE_DIRS = (REPO / "examples", *sorted((REPO / "adapters").glob("*/examples")))
TEST_DIRS = (REPO / "tests", *sorted((REPO / "adapters").glob("*/tests")))
ILLUSTRATIVE = "illustrative"
INCLUDED = "included-example"


class LiteralInclude(Directive):
    """Stands in for Sphinx's ``literalinclude``: a literal block that records
    which file it includes."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {  # noqa: RUF012 - the shape docutils reads
        name: directives.unchanged
        for name in (
            "language",
            "lines",
            "start-after",
            "end-before",
            "pyobject",
            "caption",
            "emphasize-lines",
            "linenos",
            "dedent",
            "class",
            "name",
        )
    }

    def run(self) -> list[nodes.Node]:
        page = Path(self.state.document.current_source)
        target = (page.parent / self.arguments[0]).resolve()
        block = nodes.literal_block("", "", classes=[INCLUDED])
        block["included_path"] = str(target)
        return [block]


directives.register_directive("literalinclude", LiteralInclude)


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.rst") if "_build" not in p.parts)


def code_blocks(page: Path) -> Iterator[nodes.literal_block]:
    doctree = docutils.core.publish_doctree(
        page.read_text(encoding="utf-8"),
        source_path=str(page),
        # Sphinx's roles and directives are unknown to docutils: no reports.
        settings_overrides={"report_level": 5, "halt_level": 5, "file_insertion_enabled": True},
    )
    for block in doctree.findall(nodes.literal_block):
        # An unknown directive is echoed as a literal block in its report.
        if any(isinstance(parent, nodes.system_message) for parent in _parents(block)):
            continue
        yield block


def _parents(node: nodes.Node) -> Iterator[nodes.Node]:
    while node.parent is not None:
        node = node.parent
        yield node


def problems(page: Path) -> list[str]:
    """What breaks the convention on ``page``, one line per block."""
    label = page.relative_to(REPO) if page.is_relative_to(REPO) else page.name
    found = []
    for block in code_blocks(page):
        where = f"{label}:{block.line or '?'}"
        if INCLUDED in block["classes"]:
            target = Path(block["included_path"])
            if not any(target.is_relative_to(d) for d in EXAMPLE_DIRS):
                found.append(f"{where}: includes {target}, which is no example script")
            elif not run_by_a_test(target):
                found.append(f"{where}: no test names {target.name}")
        elif ILLUSTRATIVE not in block["classes"]:
            first = block.astext().strip().splitlines()[:1]
            found.append(f"{where}: unmarked code block {first}")
    return found


def run_by_a_test(script: Path) -> bool:
    return any(
        script.name in test.read_text(encoding="utf-8")
        for directory in TEST_DIRS
        for test in directory.rglob("test_*.py")
    )


def test_the_site_has_pages() -> None:
    names = {p.relative_to(DOCS).as_posix() for p in pages()}
    assert {"index.rst", "concepts.rst", "api/band_trio.rst"} <= names


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_every_code_block_is_run_or_marked_illustrative(page: Path) -> None:
    assert problems(page) == []


def test_an_unmarked_block_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.rst"
    page.write_text(
        "Title\n=====\n\nA command::\n\n    band-trio demo\n\n"
        ".. code-block:: python\n\n   print('unmarked')\n\n"
        ".. code-block:: python\n   :class: illustrative\n\n   print('marked')\n",
        encoding="utf-8",
    )
    found = problems(page)
    assert [line.split(": ", 1)[1] for line in found] == [
        "unmarked code block ['band-trio demo']",
        "unmarked code block [\"print('unmarked')\"]",
    ]


def test_an_include_of_a_file_outside_the_examples_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.rst"
    page.write_text(f".. literalinclude:: {REPO / 'pyproject.toml'}\n", encoding="utf-8")
    (found,) = problems(page)
    assert found.endswith("which is no example script")


def test_an_included_example_is_accepted(tmp_path: Path) -> None:
    page = tmp_path / "page.rst"
    page.write_text(f".. literalinclude:: {REPO / 'examples' / 'embedding.py'}\n", encoding="utf-8")
    assert problems(page) == []


def test_the_langgraph_page_names_the_package_of_its_chat_model() -> None:
    page = (DOCS / "tutorial" / "langgraph.rst").read_text()
    assert "from langchain_anthropic import ChatAnthropic" in page
    assert "pip install band-trio-langgraph langchain-anthropic" in " ".join(page.split())


def test_the_send_message_reference_says_what_mentions_take_and_when_it_returns_none() -> None:
    import inspect

    from band_trio.adapter import AgentToolsProtocol

    doc = inspect.getdoc(AgentToolsProtocol.send_message) or ""
    assert "mentions: who the message is for" in doc
    assert "handle (``alice``, ``@alice``, ``you/helper``), display name or id" in " ".join(
        doc.split()
    )
    assert "None when ``content`` is blank" in doc


def test_the_site_is_built_nitpicky_and_offline() -> None:
    conf: dict[str, object] = {}
    exec(compile((DOCS / "conf.py").read_text(), str(DOCS / "conf.py"), "exec"), conf)
    assert conf["nitpicky"] is True
    mapping = conf["intersphinx_mapping"]
    assert isinstance(mapping, dict)
    for _url, inventory in mapping.values():
        assert (DOCS / inventory).is_file(), inventory
