"""What every REST model shares: the ``extra`` field and the request-body rule.

Response models keep every key the platform sent that they do not declare in
``extra``. Request models (registered with :func:`request_model`) unstructure
*omitting* every field that is ``None`` ("not set"), recursively: the platform
rejects some explicit nulls (a mention's ``kind``, ``attachment_ids``).
Anything in a request's ``extra`` is sent as is, flat.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

from band_trio.wire._converter import converter

__all__ = ["extra_field", "is_request_model", "request_model"]

_C = TypeVar("_C", bound=type)


def extra_field() -> Any:
    """The ``extra`` field every model has: unknown keys, never compared loosely."""
    return attrs.field(factory=dict, repr=False)


_REQUEST_TYPES: set[type] = set()


def request_model(cls: _C) -> _C:
    """Register ``cls`` as a request body: its ``None`` fields are omitted on the wire."""
    _REQUEST_TYPES.add(cls)
    return cls


def is_request_model(cls: Any) -> bool:
    """True for the request classes whose ``None`` fields are omitted on the wire."""
    return cls in _REQUEST_TYPES


def _request_unstructure_factory(cls: type, conv: cattrs.Converter) -> Callable[[Any], Any]:
    # Nested values (mentions, metadata) go back through the converter, so a
    # request inside a request also drops its unset fields.
    base: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
        cls, conv, _cattrs_use_linecache=False, extra=override(omit=True)
    )

    def unstructure(obj: Any) -> dict[str, Any]:
        out = {k: v for k, v in base(obj).items() if v is not None}
        for key, value in obj.extra.items():
            out.setdefault(key, value)
        return out

    return unstructure


converter.register_unstructure_hook_factory(is_request_model, _request_unstructure_factory)
