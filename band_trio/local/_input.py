"""Reading untrusted request input: JSON bodies and query strings.

Every problem becomes a :class:`~band_trio.local.refusal.RequestRefusedError` carrying the
platform's error code and (for 422) ``details`` keyed by JSON pointer, so the
HTTP layer can render the platform's error body. Nothing here raises anything else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from band_trio.local.refusal import invalid

__all__ = ["Obj", "Query", "json_longer_than"]

_INTEGER = re.compile(r"-?[0-9]{1,18}", re.ASCII)

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def json_longer_than(value: Any, limit: int) -> bool:
    """Whether ``value`` takes more than ``limit`` bytes as compact UTF-8 JSON.

    Encodes piece by piece and stops once past ``limit``, so checking a
    large value costs about ``limit`` bytes of encoding, not all of it (a
    few thousand-digit integers alone take a second to write out).
    """
    size = 0
    for chunk in _ENCODER.iterencode(value):
        size += len(chunk) if chunk.isascii() else len(chunk.encode())
        if size > limit:
            return True
    return False


class Obj:
    """A JSON object from a request body, read field by field with type checks.

    Args:
        data: the decoded JSON value (anything).
        pointer: JSON pointer of this object in the body, for error details.

    Raises:
        RequestRefusedError: 422 when ``data`` is not an object.
    """

    __slots__ = ("data", "pointer")

    def __init__(self, data: Any, pointer: str = "") -> None:
        if not isinstance(data, dict):
            raise invalid(pointer or "/", "must be an object")
        self.data: dict[str, Any] = data
        self.pointer = pointer

    def at(self, key: str) -> str:
        """The JSON pointer of ``key`` in this object."""
        return f"{self.pointer}/{key}"

    def has(self, key: str) -> bool:
        """Whether ``key`` is present (even as null)."""
        return key in self.data

    def raw(self, key: str) -> Any:
        """The raw value of ``key`` (None when absent)."""
        return self.data.get(key)

    def _present(self, key: str, *, required: bool, nullable: bool) -> Any:
        """The raw value of ``key``; None when absent, or null and that is allowed.

        Raises:
            RequestRefusedError: 422 when a required key is absent, or null where
                null is not allowed.
        """
        if key not in self.data:
            if required:
                raise invalid(self.at(key), "is required")
            return None
        value = self.data[key]
        if value is None and (required or not nullable):
            raise invalid(self.at(key), "can't be null")
        return value

    def str_(
        self,
        key: str,
        *,
        required: bool = False,
        nullable: bool = True,
        max_len: int | None = None,
        choices: Sequence[str] | None = None,
    ) -> str | None:
        """A string field; None when absent (or null and ``nullable``)."""
        value = self._present(key, required=required, nullable=nullable)
        if value is None:
            return None
        if not isinstance(value, str):
            raise invalid(self.at(key), "must be a string")
        if max_len is not None and len(value) > max_len:
            raise invalid(self.at(key), f"is too long (maximum is {max_len} characters)")
        if choices is not None and value not in choices:
            raise invalid(self.at(key), f"must be one of: {', '.join(choices)}")
        return value

    def req_str(self, key: str, **kw: Any) -> str:
        """A required, non-null string field."""
        value = self.str_(key, required=True, **kw)
        assert value is not None
        return value

    def bool_(self, key: str, *, required: bool = False) -> bool | None:
        """A boolean field; None when absent or null (unless required)."""
        value = self.data.get(key)
        if value is None:
            if required:
                raise invalid(self.at(key), "is required")
            return None
        if not isinstance(value, bool):
            raise invalid(self.at(key), "must be a boolean")
        return value

    def obj(self, key: str, *, required: bool = False) -> Obj | None:
        """A nested object; None when absent or null (unless required)."""
        value = self.data.get(key)
        if value is None:
            if required:
                raise invalid(self.at(key), "is required")
            return None
        return Obj(value, self.at(key))

    def req_obj(self, key: str) -> Obj:
        """A required nested object."""
        value = self.obj(key, required=True)
        assert value is not None
        return value

    def list_(self, key: str, *, required: bool = False, nullable: bool = True) -> list[Any] | None:
        """A list field; None when absent (or null and ``nullable``)."""
        value = self._present(key, required=required, nullable=nullable)
        if value is None:
            return None
        if not isinstance(value, list):
            raise invalid(self.at(key), "must be a list")
        return value

    def str_list(
        self, key: str, *, max_items: int | None = None, nullable: bool = True
    ) -> list[str] | None:
        """A list of strings; None when absent or null (if allowed)."""
        items = self.list_(key, nullable=nullable)
        if items is None:
            return None
        if max_items is not None and len(items) > max_items:
            raise invalid(self.at(key), f"has too many items (maximum is {max_items})")
        for index, item in enumerate(items):
            if not isinstance(item, str):
                raise invalid(f"{self.at(key)}/{index}", "must be a string")
        return items


class Query:
    """Query-string parameters (last value wins; ``include`` keys are merged)."""

    __slots__ = ("includes", "params")

    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        self.params: dict[str, str] = {}
        self.includes: set[str] = set()
        for key, value in pairs:
            self.params[key] = value
            if key == "include":
                self.includes.update(part.strip() for part in value.split(",") if part.strip())

    def has(self, name: str) -> bool:
        """Whether the parameter was given (possibly empty)."""
        return name in self.params

    def str_(
        self, name: str, *, choices: Sequence[str] | None = None, default: str | None = None
    ) -> str | None:
        """A string parameter, optionally restricted to ``choices`` (422 otherwise)."""
        value = self.params.get(name)
        if value is None or value == "":
            return default
        if choices is not None and value not in choices:
            raise invalid(f"/{name}", f"must be one of: {', '.join(choices)}")
        return value

    def int_(self, name: str, *, default: int, minimum: int = 1, maximum: int | None = None) -> int:
        """An integer parameter; 422 when not an integer or below ``minimum``;
        values above ``maximum`` are clamped to it."""
        raw = self.params.get(name)
        if raw is None or raw == "":
            return default
        # ASCII digits only, and few of them: int() would take "١٢" or "²"-free
        # Unicode digits, and thousands of digits cost real CPU.
        if _INTEGER.fullmatch(raw) is None:
            raise invalid(f"/{name}", "must be an integer")
        value = int(raw)
        if value < minimum:
            raise invalid(f"/{name}", f"must be greater than or equal to {minimum}")
        if maximum is not None and value > maximum:
            return maximum
        return value

    def bool_(self, name: str) -> bool | None:
        """A boolean parameter (``true``/``false``); 422 otherwise."""
        raw = self.params.get(name)
        if raw is None or raw == "":
            return None
        if raw.lower() in ("true", "1"):
            return True
        if raw.lower() in ("false", "0"):
            return False
        raise invalid(f"/{name}", "must be a boolean")
