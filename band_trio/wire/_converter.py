"""The one cattrs converter band-trio uses for every wire payload (private).

The converter is a mutable object (hooks can be registered on it), so it stays
inside the wire layer; other layers convert through :func:`structure` and
:func:`unstructure`, re-exported by :mod:`band_trio.wire`.

Configured once, here:

* primitives are strict: a ``str`` field rejects numbers and booleans, an ``int``
  field rejects booleans, strings and floats, a ``bool`` field accepts only
  ``true``/``false``. cattrs' default of coercing ``5`` into ``"5"`` would hide a
  misbehaving peer;
* attrs classes that declare a field named ``extra`` (a ``Mapping[str, Any]``)
  keep every unknown key of the payload there, and unstructure it back flat, so
  payloads round-trip and forward-compatible fields are never lost;
* ``Mapping[str, Any]`` / ``Any`` values pass through untouched.

Event and REST model modules register their own hooks (tagged unions, custom
validators) on :data:`converter`; nothing else creates a converter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

__all__ = [
    "converter",
    "has_extra_field",
    "structure",
    "unstructure",
]

T = TypeVar("T")

EXTRA_FIELD = "extra"


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(omit_if_default=False)

    def structure_str(value: Any, _: type) -> str:
        if type(value) is not str:
            raise TypeError(f"expected a string, got {type(value).__name__}")
        return value

    def structure_int(value: Any, _: type) -> int:
        if type(value) is not int:
            raise TypeError(f"expected an integer, got {type(value).__name__}")
        return value

    def structure_float(value: Any, _: type) -> float:
        if type(value) is bool or not isinstance(value, int | float):
            raise TypeError(f"expected a number, got {type(value).__name__}")
        return float(value)

    def structure_bool(value: Any, _: type) -> bool:
        if type(value) is not bool:
            raise TypeError(f"expected a boolean, got {type(value).__name__}")
        return value

    conv.register_structure_hook(str, structure_str)
    conv.register_structure_hook(int, structure_int)
    conv.register_structure_hook(float, structure_float)
    conv.register_structure_hook(bool, structure_bool)
    conv.register_structure_hook_factory(has_extra_field, _extra_structure_factory)
    conv.register_unstructure_hook_factory(has_extra_field, _extra_unstructure_factory)
    return conv


def has_extra_field(cls: Any) -> bool:
    """True for attrs classes that keep unknown payload keys in ``extra``."""
    if not (isinstance(cls, type) and attrs.has(cls)):
        return False
    return any(f.name == EXTRA_FIELD for f in attrs.fields(cls))


def _wire_names(cls: type) -> frozenset[str]:
    return frozenset(f.alias or f.name for f in attrs.fields(cls) if f.name != EXTRA_FIELD)


def _extra_structure_factory(cls: type[T], conv: cattrs.Converter) -> Callable[[Any, type[T]], T]:
    known = _wire_names(cls)
    base = make_dict_structure_fn(
        cls,
        conv,
        _cattrs_use_linecache=False,
        **{EXTRA_FIELD: override(omit=True)},  # type: ignore[arg-type]
    )

    def structure(value: Any, _: type[T]) -> T:
        if not isinstance(value, Mapping):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        obj = base(value, cls)
        extra = {k: v for k, v in value.items() if k not in known}
        if extra:
            obj = attrs.evolve(obj, **{EXTRA_FIELD: extra})  # type: ignore[misc]
        return obj

    return structure


def _extra_unstructure_factory(cls: type[T], conv: cattrs.Converter) -> Callable[[T], Any]:
    base = make_dict_unstructure_fn(
        cls,
        conv,
        _cattrs_use_linecache=False,
        **{EXTRA_FIELD: override(omit=True)},  # type: ignore[arg-type]
    )

    def unstructure(obj: T) -> dict[str, Any]:
        out: dict[str, Any] = base(obj)
        extra: Mapping[str, Any] = getattr(obj, EXTRA_FIELD)
        for key, value in extra.items():
            out.setdefault(key, value)
        return out

    return unstructure


converter: cattrs.Converter = _make_converter()
"""The process-wide converter. Configure hooks at import time only."""


def structure(data: Any, cls: type[T]) -> T:
    """Build a wire object of type ``cls`` from its JSON-like ``data``.

    The rules of the platform apply: strict primitives, unknown keys kept in
    ``extra``, event unions tagged by their event name.

    Raises:
        cattrs.BaseValidationError: ``data`` does not match ``cls``.
    """
    return converter.structure(data, cls)


def unstructure(obj: Any) -> Any:
    """The JSON-like form of a wire object, as it is sent on the wire.

    ``extra`` keys come back flat; unset (``None``) fields of request models
    are omitted.
    """
    return converter.unstructure(obj)
