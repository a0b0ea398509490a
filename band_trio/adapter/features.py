"""What an LLM adapter emits and offers: :class:`Emit` flags and :class:`AdapterFeatures`.

Sans-io: parsing the ``emit=``, ``capabilities=`` and tool-filter arguments of
:class:`~band_trio.adapter.SimpleAdapter` into one frozen record, with error
messages that name the adapter, the unsupported values and the supported ones.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, TypeVar

import attrs

from band_trio.adapter.capabilities import Capability, ToolCategory
from band_trio.errors import BandConfigError

__all__ = ["AdapterFeatures", "Emit", "resolve_features"]

E = TypeVar("E", bound=enum.Enum)


class Emit(enum.Enum):
    """Kinds of events an adapter may post to the room on its own.

    Combine members with ``|`` (the result is a frozenset) or pass an iterable.
    """

    TOOL_CALLS = "tool_calls"
    """A ``tool_call`` event before each tool runs and a ``tool_result`` after it."""
    THOUGHTS = "thoughts"
    """``thought`` events (reasoning the adapter chooses to show)."""
    TASK_EVENTS = "task_events"
    """``task`` lifecycle events."""
    USAGE = "usage"
    """One token-usage ``task`` event per turn."""

    def __or__(self, other: Emit | Iterable[Emit]) -> frozenset[Emit]:
        return frozenset({self}) | _same_kind(Emit, other)

    def __ror__(self, other: Emit | Iterable[Emit]) -> frozenset[Emit]:
        return _same_kind(Emit, other) | {self}


def _same_kind(kind: type[E], other: object) -> frozenset[E]:
    items = [other] if isinstance(other, enum.Enum) else other
    if not isinstance(items, Iterable) or isinstance(items, str):
        raise TypeError(f"cannot combine {kind.__name__} with {type(other).__name__}")
    out = frozenset(items)
    if not all(isinstance(i, kind) for i in out):
        raise TypeError(f"cannot combine {kind.__name__} with other kinds of flags")
    return out


@attrs.frozen
class AdapterFeatures:
    """The effective feature set of an adapter.

    Attributes:
        emit: the event kinds the adapter posts on its own.
        capabilities: the optional tool families offered to the model (empty:
            only the 8 chat tools).
        include_tools: keep only these tool names (None: no filter).
        exclude_tools: drop these tool names (None: no filter).
        include_categories: keep only tools of these categories (None: no filter).
    """

    emit: frozenset[Emit] = frozenset()
    capabilities: frozenset[Capability] = frozenset()
    include_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] | None = None
    include_categories: tuple[ToolCategory, ...] | None = None

    def emits(self, kind: Emit) -> bool:
        """True when ``kind`` is switched on."""
        return kind in self.emit

    def without_capabilities(self, unserved: Iterable[Capability]) -> AdapterFeatures:
        """A copy without the ``unserved`` capabilities (the runtime's pruning)."""
        return attrs.evolve(self, capabilities=self.capabilities - frozenset(unserved))

    def tool_schema_options(self) -> dict[str, Any]:
        """Keyword arguments for ``AgentTools.get_tool_schemas`` that apply these
        capabilities and filters."""
        return {
            "capabilities": self.capabilities,
            "include_tools": self.include_tools,
            "exclude_tools": self.exclude_tools,
            "include_categories": self.include_categories,
        }


def _listed(values: Iterable[enum.Enum]) -> str:
    return ", ".join(sorted(v.value for v in values)) or "none"


def _parse_flags(kind: type[E], value: object) -> frozenset[E]:
    """``value`` (a member, its string value, or an iterable of those) as a set."""
    if isinstance(value, kind | str):
        items: Iterable[object] = [value]
    elif isinstance(value, Iterable):
        items = value
    else:
        raise BandConfigError(f"invalid {kind.__name__} value: {value!r}")
    out: set[E] = set()
    for item in items:
        if isinstance(item, kind):
            out.add(item)
            continue
        try:
            if not isinstance(item, str):
                raise ValueError(item)
            out.add(kind(item))
        except ValueError:
            expected = ", ".join(sorted(str(m.value) for m in kind))
            raise BandConfigError(
                f"invalid {kind.__name__} value: {item!r}; expected one of: {expected}"
            ) from None
    return frozenset(out)


def _parse_names(what: str, value: Iterable[str] | str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = (value,) if isinstance(value, str) else tuple(value)
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise BandConfigError(f"{what} must be tool names (strings); got {name!r}")
    return names


def resolve_features(
    owner: str,
    *,
    supported_emit: frozenset[Emit],
    supported_capabilities: frozenset[Capability],
    emit: Emit | str | Iterable[Emit | str] | None = None,
    capabilities: Capability | str | Iterable[Capability | str] | None = None,
    include_tools: Iterable[str] | str | None = None,
    exclude_tools: Iterable[str] | str | None = None,
    include_categories: ToolCategory | str | Iterable[ToolCategory | str] | None = None,
) -> AdapterFeatures:
    """Check an adapter's feature arguments and return its effective features.

    ``emit`` omitted (None) means every kind in ``supported_emit``; ``()`` means
    none. ``capabilities`` omitted means none (capabilities are opt-in).

    Args:
        owner: the adapter class name, used in error messages.
        supported_emit: what the adapter can emit.
        supported_capabilities: the capabilities the adapter can serve.
        emit: the emit kinds asked for.
        capabilities: the capabilities asked for.
        include_tools: keep only these tool names.
        exclude_tools: drop these tool names.
        include_categories: keep only these categories.

    Raises:
        BandConfigError: an invalid value, or a kind or capability ``owner``
            does not support, e.g. ``"AnthropicAdapter does not support emit
            kind(s): thoughts; supported: tool_calls, usage"``.
    """
    wanted_emit = frozenset(supported_emit) if emit is None else _parse_flags(Emit, emit)
    bad_emit = wanted_emit - supported_emit
    if bad_emit:
        raise BandConfigError(
            f"{owner} does not support emit kind(s): {_listed(bad_emit)}; "
            f"supported: {_listed(supported_emit)}"
        )
    caps = frozenset() if capabilities is None else _parse_flags(Capability, capabilities)
    bad_caps = caps - supported_capabilities
    if bad_caps:
        raise BandConfigError(
            f"{owner} does not support capability/-ies: {_listed(bad_caps)}; "
            f"supported: {_listed(supported_capabilities)}"
        )
    categories = (
        None
        if include_categories is None
        else tuple(sorted(_parse_flags(ToolCategory, include_categories), key=lambda c: c.value))
    )
    return AdapterFeatures(
        emit=wanted_emit,
        capabilities=caps,
        include_tools=_parse_names("include_tools", include_tools),
        exclude_tools=_parse_names("exclude_tools", exclude_tools),
        include_categories=categories,
    )
