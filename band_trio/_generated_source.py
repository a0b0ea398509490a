"""Drop the source text attrs and cattrs cache for the methods they generate (private).

A small utility of the bottom layer: every layer that defines attrs classes
(the wire events and models, the tool records) calls it once, at the end of
its module.
"""

from __future__ import annotations

import linecache

__all__ = ["forget_generated_source"]


def forget_generated_source(module: str) -> None:
    """Drop the source text attrs and cattrs cached for methods generated in ``module``.

    Both libraries keep the source of every method they generate (``__init__``,
    ``__eq__``, ``__repr__``, structure hooks ...) in :mod:`linecache`, so that
    debuggers can show it: a few KiB of resident strings per class. Tracebacks
    through these methods still name them and their line numbers; they only
    lose the source text. Call it at the end of a module that defines attrs
    classes; it touches nothing else.

    Args:
        module: the module's ``__name__``; entries for its classes and for
            classes of its submodules are dropped.
    """
    attrs_prefix = f"<attrs generated methods {module}."
    cattrs_marker = f" {module}."
    for key in list(linecache.cache):
        if key.startswith(attrs_prefix) or (
            key.startswith("<cattrs generated ") and cattrs_marker in key
        ):
            del linecache.cache[key]
