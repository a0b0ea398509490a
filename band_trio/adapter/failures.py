"""Failure reports: what the room sees when the model provider or the adapter fails.

One ``error`` event carrying ``{"failure": {...}}`` metadata, which also marks
the turn as reported so the runtime posts no second error for it. The generic
texts the runtime itself posts are defined here too, so that adapters and the
runtime say the same thing.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Final, Protocol

import attrs

from band_trio.adapter.content import is_visible
from band_trio.adapter.tool_results import to_jsonable
from band_trio.wire.models import EventCreated

__all__ = [
    "ERROR_EVENT_TEXT",
    "FAILURE_METADATA_KEY",
    "GENERIC_FAILURE_MESSAGE",
    "MISSING_REPLY_LABEL",
    "MISSING_REPLY_MESSAGE",
    "MISSING_REPLY_TEXT",
    "AgentFailure",
    "FailureReporter",
    "report_failure",
]

ERROR_EVENT_TEXT: Final = "Internal error while processing message; see agent logs."
"""The one generic text posted to a room when a message fails for the last time."""

MISSING_REPLY_TEXT: Final = (
    "The agent ended its turn without replying or calling band_no_reply, "
    "so nothing reached the room."
)
"""What the runtime posts (provider ``band-runtime``) for a judged turn without a reply."""

MISSING_REPLY_LABEL: Final = "turn ended without a reply"
"""The error the runtime marks a judged turn without a reply failed with (never retried)."""

FAILURE_METADATA_KEY: Final = "failure"
"""The metadata key of a failure report on an ``error`` event."""
GENERIC_FAILURE_MESSAGE: Final = ERROR_EVENT_TEXT
"""The room-visible text for a failure whose details belong in the agent's logs."""
MISSING_REPLY_MESSAGE: Final = MISSING_REPLY_TEXT
"""What the runtime posts (provider ``band-runtime``) for a judged turn without a reply."""


def _code(value: object) -> str | None:
    return None if value is None else str(value)


@attrs.frozen
class AgentFailure:
    """A failure of the model provider (or the adapter) to report in the room.

    Args:
        provider: who failed, e.g. ``"anthropic"``, ``"langgraph"``.
        message: the room-visible text; blank means ``"<provider> failed
            without an error message."``. Keep provider internals and secrets
            out of it (:meth:`generic` gives the neutral text).
        code: a short code (an HTTP status such as ``"429"``), or None.
        detail: JSON-compatible detail (a provider's error body), or None.
    """

    provider: str
    message: str
    code: str | None = attrs.field(default=None, converter=_code)
    detail: Any = None

    @classmethod
    def generic(cls, provider: str, *, code: object = None) -> AgentFailure:
        """A failure with the generic text ``"Internal error while processing
        message; see agent logs."`` and no detail."""
        return cls(provider, GENERIC_FAILURE_MESSAGE, code=_code(code))

    @property
    def content(self) -> str:
        """The event's text: the message, or the fallback when it is blank."""
        if isinstance(self.message, str) and is_visible(self.message):
            return self.message
        return f"{self.provider} failed without an error message."

    def metadata(self) -> dict[str, Any]:
        """``{"failure": {"provider", "code", "message", "detail"}}``."""
        return {
            FAILURE_METADATA_KEY: {
                "provider": self.provider,
                "code": self.code,
                "message": self.content,
                "detail": to_jsonable(self.detail),
            }
        }


class FailureReporter(Protocol):
    """What :func:`report_failure` needs: the tools' ``send_failure``
    (every :class:`~band_trio.adapter.AgentToolsProtocol` has it)."""

    def send_failure(self, failure: AgentFailure) -> Awaitable[EventCreated | None]:
        """Post ``failure`` as the turn's ``error`` event and tell the runtime."""
        ...


async def report_failure(tools: FailureReporter, failure: AgentFailure) -> EventCreated | None:
    """Post ``failure`` as the turn's ``error`` event, best-effort.

    This is the tools' ``send_failure``: a posted report marks the turn as
    reported, so the runtime neither judges it a missing reply nor posts its
    own generic error for it.

    Returns:
        The platform's receipt, or None when the post failed (logged).

    Raises:
        RoomExecutionStoppedError: the room's execution is stopped (the turn is
            being ended).
    """
    return await tools.send_failure(failure)
