"""Checks for the fields of an adapter's settings, shared by every adapter.

Each check is an attrs validator named after what it accepts
(``attrs.field(validator=positive_int("max_tokens"))``); a value it refuses
raises :class:`~band_trio.BandConfigError` naming the field and what it must
be: ``"max_tokens must be a positive integer; got 0"``. :func:`optional`
lets None through as well (``"... or None; got ..."``). The converters
:func:`as_path` and :func:`as_dict` normalise what they can and leave the
rest to the field's check; :func:`config_or_default` and
:func:`check_tool_names` are the checks an adapter's constructor makes of its
``config`` and of the tools it is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from band_trio.errors import BandConfigError

__all__ = [
    "FieldCheck",
    "as_dict",
    "as_path",
    "check_tool_names",
    "config_or_default",
    "flag",
    "function",
    "instance_of",
    "one_of",
    "optional",
    "positive_int",
    "seconds",
    "string_map",
    "text",
]

C = TypeVar("C")


def _shown(value: object) -> str:
    # Plain values are shown as written; anything else by its type only (an
    # object's repr may be long or hold a secret).
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    return type(value).__name__


def _a(type_name: str) -> str:
    return f"an {type_name}" if type_name[:1].upper() in tuple("AEIOU") else f"a {type_name}"


@attrs.frozen
class FieldCheck:
    """An attrs validator for one settings field (immutable).

    Attributes:
        name: the field, as the error names it.
        expected: what the field must be, completing "<name> must be ...".
        accepts: True for a value the field takes.
    """

    name: str
    expected: str
    accepts: Callable[[object], bool] = attrs.field(eq=False, repr=False)

    def __call__(self, _instance: Any, _attribute: Any, value: Any) -> None:
        """Check ``value`` (the attrs validator signature).

        Raises:
            BandConfigError: ``"<name> must be <expected>; got <value>"``.
        """
        self.check(value)

    def check(self, value: object) -> None:
        """Check ``value`` outside attrs (in ``__attrs_post_init__``, say).

        Raises:
            BandConfigError: ``"<name> must be <expected>; got <value>"``.
        """
        if not self.accepts(value):
            raise BandConfigError(f"{self.name} must be {self.expected}; got {_shown(value)}")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def positive_int(name: str) -> FieldCheck:
    """An integer of at least 1 (not a bool): ``"a positive integer"``."""
    return FieldCheck(
        name,
        "a positive integer",
        lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
    )


def seconds(name: str, *, zero: bool = False) -> FieldCheck:
    """A finite duration in seconds (an int or a float, not a bool): above
    zero, or at least zero when ``zero`` is True."""
    if zero:
        return FieldCheck(
            name,
            "a non-negative, finite number of seconds",
            lambda v: _is_number(v) and 0 <= v < math.inf,  # type: ignore[operator]
        )
    return FieldCheck(
        name,
        "a positive, finite number of seconds",
        lambda v: _is_number(v) and 0 < v < math.inf,  # type: ignore[operator]
    )


def text(name: str, *, blank: bool = True) -> FieldCheck:
    """A string; one with more than white space when ``blank`` is False."""
    if blank:
        return FieldCheck(name, "a string", lambda v: isinstance(v, str))
    return FieldCheck(name, "a non-empty string", lambda v: isinstance(v, str) and bool(v.strip()))


def flag(name: str) -> FieldCheck:
    """A bool: ``"True or False"``."""
    return FieldCheck(name, "True or False", lambda v: isinstance(v, bool))


def one_of(name: str, allowed: Collection[str]) -> FieldCheck:
    """One of ``allowed`` (listed sorted in the error)."""
    choices = frozenset(allowed)
    return FieldCheck(name, f"one of {sorted(choices)}", lambda v: v in choices)


def instance_of(name: str, cls: type) -> FieldCheck:
    """An instance of ``cls``: ``"a <ClassName>"``."""
    return FieldCheck(name, _a(cls.__name__), lambda v: isinstance(v, cls))


def function(name: str, *, of: str) -> FieldCheck:
    """A callable: ``"a function of <of>"`` (``function("workspace_for_room",
    of="the room id")``)."""
    return FieldCheck(name, f"a function of {of}", callable)


def optional(check: FieldCheck) -> FieldCheck:
    """``check``, or None: ``"<expected> or None"``."""
    return FieldCheck(
        check.name, f"{check.expected} or None", lambda v: v is None or check.accepts(v)
    )


def string_map(name: str) -> FieldCheck:
    """A mapping of strings to strings (with :func:`as_dict` as the
    field's converter, a dict the config owns)."""
    return FieldCheck(
        name,
        "a mapping of strings to strings",
        lambda v: (
            isinstance(v, Mapping)
            and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())
        ),
    )


def as_dict(value: Any) -> Any:
    """An attrs converter: a copy of a mapping as a dict (the caller's
    mapping can change later without changing the config); anything else as
    it is, for the field's validator to refuse."""
    return dict(value) if isinstance(value, Mapping) else value


def as_path(value: Any) -> Any:
    """An attrs converter: a string as a :class:`~pathlib.Path`; anything
    else as it is, for the field's validator
    (``optional(instance_of("cwd", Path))``) to judge."""
    return Path(value) if isinstance(value, str) else value


def check_tool_names(names: Sequence[str]) -> None:
    """Check the names of the tools an adapter is given besides the Band
    tools (plain framework tools and custom tools together): none starts
    with ``band_`` and none is given twice.

    Raises:
        BandConfigError: ``"tool name(s) <names> clash with a Band tool or
            with each other"``.
    """
    clashes = sorted({n for n in names if names.count(n) > 1 or n.startswith("band_")})
    if clashes:
        raise BandConfigError(
            f"tool name(s) {', '.join(clashes)} clash with a Band tool or with each other"
        )


def config_or_default(config: object, config_type: type[C]) -> C:
    """An adapter constructor's ``config`` argument: ``config_type()`` for
    None, else ``config`` itself when it is a ``config_type``.

    Raises:
        BandConfigError: ``"config must be a <ConfigType>; got <type>"``.
    """
    if config is None:
        return config_type()
    if not isinstance(config, config_type):
        raise BandConfigError(
            f"config must be {_a(config_type.__name__)}; got {type(config).__name__}"
        )
    return config
