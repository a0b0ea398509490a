"""Sphinx configuration of the band-trio documentation site.

Build it with ``uv run sphinx-build -W --keep-going -b html docs docs/_build/html``;
the build is nitpicky (below), so a cross-reference that does not resolve fails it.
"""

from __future__ import annotations

import importlib
import re
import typing
from typing import TYPE_CHECKING

from sphinx.ext import intersphinx

import band_trio

if TYPE_CHECKING:
    from docutils import nodes
    from docutils.nodes import TextElement
    from sphinx.addnodes import pending_xref
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

project = "band-trio"
author = "The band-trio authors"
copyright = "2026, The band-trio authors"
release = band_trio.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinxcontrib_trio",
]

# internal-api.md is for contributors and stays a Markdown file in the tree.
exclude_patterns = ["_build", "internal-api.md"]
root_doc = "index"


autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# Every cross-reference must resolve (``-n`` is implied): a name that does not
# is a broken link in the reference, so the build fails on it.
nitpicky = True

# Links into the standard library, from the inventory of Python 3.11's own docs
# kept beside this file (Debian's python3.11-doc), so the site builds offline.
intersphinx_mapping: dict[str, tuple[str, str | None]] = {
    "python": ("https://docs.python.org/3.11", "_inventories/python-3.11.inv"),
}
intersphinx_timeout = 5

# Third-party packages whose inventories are not kept here: an offline build
# cannot fetch them, so their names in signatures stay plain text instead of
# failing the build. Names of band-trio itself are never ignored.
nitpick_ignore_regex = [
    (r"py:.*", rf"{package}(\..*)?")
    for package in (
        "anthropic",
        "attr",
        "attrs",
        "cattrs",
        "httpx",
        "hypothesis",
        "langchain_core",
        "langgraph",
        "pydantic",
        "pydantic_ai",
        "trio",
    )
]
nitpick_ignore = [
    # Python 3.11's docs describe compiled patterns without an entry for the class.
    ("py:class", "re.Pattern"),
    # SimpleAdapter's type variable, shown in its bases.
    ("py:class", "H"),
    # Third-party names the adapters import for type checking only, which
    # autodoc leaves unqualified.
    *(
        ("py:class", name)
        for name in (
            "BaseChatModel",
            "BaseCheckpointSaver",
            "BaseMessage",
            "BaseTool",
            "Model",
            "ModelMessage",
            "Tool",
        )
    ),
]
# PydanticAI's ``ModelMessage`` is an ``Annotated`` union with a pydantic
# ``Discriminator``, which autodoc expands into these pieces.
nitpick_ignore += [
    # Prose in a Raises section of band_trio_anthropic.trim_to_counted_budget.
    ("py:exc", "Whatever count raises."),
]
nitpick_ignore_regex += [
    ("py:class", r"types\.Annotated|discriminator=.*|custom_error_(type|message|context)=None"),
]

html_theme = "furo"
html_title = f"band-trio {release}"
html_static_path = ["_static"]
html_css_files = ["illustrative.css"]


# -- cross-references to band-trio's own names --------------------------------
#
# Autodoc names a type in a signature by where it is defined
# (``band_trio.local.server.LocalPlatform``); the reference documents it where a
# user imports it (``band_trio.LocalPlatform``). A reference that does not
# resolve is retried on the public paths of the same object.


def _public_paths(target: str) -> list[str]:
    """``a.b.c.Name.attr`` → ``a.b.Name.attr``, ``a.Name.attr``, … (longest first)."""
    parts = target.split(".")
    paths = []
    for start in range(len(parts) - 1, 0, -1):
        for keep in range(start - 1, 0, -1):
            paths.append(".".join(parts[:keep] + parts[start:]))
    return paths


def _defined_object(target: str) -> object:
    """The object a dotted name names, or ``None`` when it does not import."""
    parts = target.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:split]))
        except (ImportError, ValueError):
            continue
        for name in parts[split:]:
            value = getattr(value, name, None)
        return value
    return None


# Standard-library names that autodoc leaves unqualified in attrs fields.
_STDLIB_SHORT_NAMES = {"Path": "pathlib.Path"}


def _resolve_own_name(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: TextElement
) -> nodes.Node | None:
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    documented: dict[str, object] = domain.objects  # type: ignore[attr-defined]
    if target.startswith("band_trio"):
        paths = _public_paths(target)
    else:
        # A short name in a docstring (``ToolResult``, ``AgentTools.aclose``):
        # the one band-trio entry of that name, the shortest path if several.
        paths = sorted(
            (
                name
                for name in documented
                if name.startswith("band_trio") and name.endswith(f".{target}")
            ),
            key=lambda name: name.count("."),
        )[:1]
    for path in paths:
        if path in documented:
            return domain.resolve_xref(
                env, node["refdoc"], app.builder, node["reftype"], path, node, contnode
            )
    # A type variable or a private name has no entry by design: plain text.
    if target in _STDLIB_SHORT_NAMES:
        node["reftarget"] = _STDLIB_SHORT_NAMES[target]
        return intersphinx.missing_reference(app, env, node, contnode)
    if target.startswith("band_trio") and (
        any(part.startswith("_") for part in target.split("."))
        or isinstance(_defined_object(target), typing.TypeVar)
    ):
        return contnode
    return None


# Napoleon reads a property docstring's first line ``Text: more`` as
# ``type: description``; the type comes from the annotation here, so the colon
# is hidden from Napoleon and put back after it.
_COLON = "\ue000"  # a private-use character, in no docstring


def _hide_property_colon(
    app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]
) -> None:
    if what == "property" and lines and re.match(r"[^`:]*:\s", lines[0]):
        lines[0] = lines[0].replace(":", _COLON, 1)


def _restore_property_colon(
    app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]
) -> None:
    lines[:] = [line.replace(_COLON, ":") for line in lines]


def setup(app: Sphinx) -> None:
    app.connect("missing-reference", _resolve_own_name)
    app.connect("autodoc-process-docstring", _hide_property_colon, priority=400)
    app.connect("autodoc-process-docstring", _restore_property_colon, priority=600)
