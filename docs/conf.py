"""Sphinx configuration of the band-trio documentation site.

Build it with ``uv run sphinx-build -W --keep-going -b html docs docs/_build/html``.
"""

from __future__ import annotations

import band_trio

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

# Links into the standard library and Trio; the site builds offline without them.
intersphinx_mapping: dict[str, tuple[str, str | None]] = {}
intersphinx_disabled_reftypes = ["*"]

html_theme = "furo"
html_title = f"band-trio {release}"
html_static_path = ["_static"]
html_css_files = ["illustrative.css"]
