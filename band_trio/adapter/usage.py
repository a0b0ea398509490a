"""Token usage: one ``task`` event per turn with ``{"band_usage": {...}}`` metadata
(the platform has no ``usage`` event type). Posting is best-effort: a failed
post is logged and never breaks the turn."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import attrs
import trio

from band_trio._logging import get_logger
from band_trio.adapter.tool_protocol import AgentToolsProtocol
from band_trio.wire.models import EventCreated

__all__ = ["USAGE_EVENT_TYPE", "USAGE_METADATA_KEY", "Usage", "emit_usage", "is_usage_event"]

logger = get_logger("band_trio.adapter")

USAGE_EVENT_TYPE: Final = "task"
"""Usage rides a ``task`` event: the platform has no ``usage`` event type."""
USAGE_METADATA_KEY: Final = "band_usage"
"""The metadata key that tells a usage event from a task lifecycle event."""


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"token counts are non-negative integers; got {value!r}")
    return value


def _lenient(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _cost(value: object) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"a cost is a non-negative number of US dollars or None; got {value!r}")
    return float(value)


def _lenient_cost(value: object) -> float | None:
    try:
        return _cost(value)
    except ValueError:
        return None


@attrs.frozen
class Usage:
    """Token counts of one or more model calls; ``+`` and ``sum()`` add them up.

    Attributes:
        input_tokens: prompt tokens.
        output_tokens: completion tokens.
        cache_read_tokens: prompt tokens read from the provider's cache.
        cache_write_tokens: prompt tokens written to the provider's cache.
        cost_usd: what the calls cost in US dollars, when the framework
            reports it (keyword only; None: not reported). A sum has a cost
            when any of its parts has one.
    """

    input_tokens: int = attrs.field(default=0, converter=_count)
    output_tokens: int = attrs.field(default=0, converter=_count)
    cache_read_tokens: int = attrs.field(default=0, converter=_count)
    cache_write_tokens: int = attrs.field(default=0, converter=_count)
    cost_usd: float | None = attrs.field(default=None, converter=_cost, kw_only=True)

    @classmethod
    def reported(
        cls,
        *,
        input_tokens: object = None,
        output_tokens: object = None,
        cache_read_tokens: object = None,
        cache_write_tokens: object = None,
        cost_usd: object = None,
    ) -> Usage:
        """The usage a provider reported, read leniently: a count that is
        missing, not an integer (booleans included) or negative counts 0; a
        cost that is not a finite, non-negative number is not reported."""
        return cls(
            _lenient(input_tokens),
            _lenient(output_tokens),
            _lenient(cache_read_tokens),
            _lenient(cache_write_tokens),
            cost_usd=_lenient_cost(cost_usd),
        )

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=sum(costs) if costs else None,
        )

    def __radd__(self, other: object) -> Usage:
        # sum() starts from 0.
        if other == 0 and not isinstance(other, bool):
            return self
        return NotImplemented

    @property
    def is_zero(self) -> bool:
        """True when all four counts are zero and no cost (or a zero one) is reported."""
        return not (
            self.input_tokens
            or self.output_tokens
            or self.cache_read_tokens
            or self.cache_write_tokens
            or self.cost_usd
        )

    @property
    def content(self) -> str:
        """``"Token usage: input=<in> output=<out>"``, then ``" cost=$<usd>"``
        when a cost is reported."""
        text = f"Token usage: input={self.input_tokens} output={self.output_tokens}"
        return text if self.cost_usd is None else f"{text} cost=${self.cost_usd:.6f}"

    def metadata(self) -> dict[str, Any]:
        """``{"band_usage": {input_tokens, output_tokens, cache_read_tokens,
        cache_write_tokens}}``, with ``cost_usd`` too when a cost is reported."""
        counts: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }
        if self.cost_usd is not None:
            counts["cost_usd"] = self.cost_usd
        return {USAGE_METADATA_KEY: counts}


def is_usage_event(metadata: Mapping[str, Any] | None) -> bool:
    """True for the metadata of a usage event (a ``task`` event that is not a
    task lifecycle event)."""
    return isinstance(metadata, Mapping) and isinstance(metadata.get(USAGE_METADATA_KEY), Mapping)


def _being_cancelled() -> bool:
    # -inf once an enclosing (unshielded) scope was cancelled; a deadline in the
    # past means the next checkpoint cancels.
    return trio.current_effective_deadline() <= trio.current_time()


async def emit_usage(tools: AgentToolsProtocol, usage: Usage) -> EventCreated | None:
    """Post the turn's token usage as a ``task`` event, best-effort.

    Nothing is posted when all counts are zero or when the turn is being
    cancelled (an enclosing cancel scope was cancelled or its deadline passed;
    inside a shielded scope the turn does not count as being cancelled): call
    it from a ``finally`` block. A failed post is logged, never raised.

    Cancellation:
        Skipping never raises ``trio.Cancelled``; a post in progress can be
        cancelled like any other request.

    Returns:
        The platform's receipt, or None when nothing was posted.
    """
    if usage.is_zero or _being_cancelled():
        # A schedule point that never raises Cancelled: called from a
        # ``finally`` block, skipping must not replace the error in flight.
        await trio.lowlevel.cancel_shielded_checkpoint()
        return None
    try:
        return await tools.send_event(usage.content, USAGE_EVENT_TYPE, usage.metadata())
    except Exception as exc:
        logger.warning("could not post the usage event: %r", exc)
        return None
