"""The band-trio error hierarchy.

Every error band-trio raises on purpose derives from :class:`BandError`. Whether
an error is worth retrying is a property of the error (:attr:`BandError.retryable`),
never something callers have to guess from a message.

Secrets never appear here: no error stores an API key, a request header or a
raw response header. Response bodies are kept only as the parsed platform
error fields (``code``, ``message``, ``request_id``, ``details``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "APIStatusError",
    "AgentAlreadyRunningError",
    "AuthenticationError",
    "BadRequestError",
    "BandConfigError",
    "BandConnectionError",
    "BandError",
    "BandProtocolError",
    "BandTimeoutError",
    "BandToolError",
    "ConflictError",
    "ContentTooLargeError",
    "FrameError",
    "HistoryConversionError",
    "InputNotAccepted",
    "InternalServerError",
    "InvalidEventError",
    "JoinError",
    "LocalProtocolError",
    "MissingExtraError",
    "NotFoundError",
    "OutcomeUnknownError",
    "PermissionDeniedError",
    "RangeNotSatisfiableError",
    "RateLimitError",
    "RoomExecutionStoppedError",
    "ServiceUnavailableError",
    "SupersededError",
    "ToolArgumentsError",
    "UnknownParticipantError",
    "UnprocessableEntityError",
    "UpgradeRefusedError",
    "error_for_status",
]


class BandError(Exception):
    """Root of every error band-trio raises on purpose.

    Attributes:
        retryable: True when the same operation may succeed if tried again later
            (a dropped socket, a 429, a 503). False means terminal: retrying the
            same call will fail the same way.
    """

    retryable: bool = False

    @property
    def terminal(self) -> bool:
        """The opposite of :attr:`retryable`."""
        return not self.retryable


class BandConfigError(BandError, ValueError):
    """Setup or lifecycle misuse: a missing or invalid setting, a bad argument."""


class AgentAlreadyRunningError(BandConfigError):
    """Another connection for this agent exists and the platform refused ours (409)."""


class MissingExtraError(BandError, ModuleNotFoundError):
    """A feature needs one of band-trio's optional extras, and it is not installed.

    It is a :class:`ModuleNotFoundError` too, so ``except ImportError`` around an
    optional import catches it. The original import error is the ``__cause__``.
    The message names the fix, for example ``pip install 'band-trio[local]'``.

    Attributes:
        extra: the extra to install (``"local"`` for the embedded platform).
        feature: what needs it, in words.
    """

    def __init__(self, extra: str, feature: str) -> None:
        super().__init__(
            f"{feature} needs the optional extra {extra!r}, which is not installed: "
            f"pip install 'band-trio[{extra}]'"
        )
        self.extra = extra
        self.feature = feature

    def __reduce__(self) -> tuple[type[MissingExtraError], tuple[str, str]]:
        return (type(self), (self.extra, self.feature))


class LocalProtocolError(BandError):
    """We misused a protocol object (for example, joined a topic twice)."""


class BandProtocolError(BandError):
    """The peer broke the protocol: a malformed frame, an invalid payload."""


class FrameError(BandProtocolError):
    """A WebSocket frame that is not a valid Phoenix v2 frame (or is too large)."""


class InvalidEventError(BandProtocolError):
    """An application event whose payload fails validation, or an unknown event.

    The link turns these into counted, logged rejections and keeps running.

    Attributes:
        topic: the Phoenix topic the event arrived on.
        event: the event name.
        reason: what was wrong, without payload contents that could hold secrets.
    """

    def __init__(self, topic: str, event: str, reason: str) -> None:
        super().__init__(f"invalid {event!r} event on {topic!r}: {reason}")
        self.topic = topic
        self.event = event
        self.reason = reason


class BandConnectionError(BandError):
    """The transport failed: could not connect, the socket dropped, a request was lost."""

    retryable = True


class BandTimeoutError(BandConnectionError):
    """An operation did not complete within its deadline."""


class JoinError(BandError):
    """The platform refused (or did not answer) a channel join.

    Attributes:
        topic: the topic that could not be joined.
        reason: the platform's ``response.reason``, or ``"timeout"``.
    """

    def __init__(self, topic: str, reason: str, *, retryable: bool = False) -> None:
        super().__init__(f"could not join {topic!r}: {reason}")
        self.topic = topic
        self.reason = reason
        self.retryable = retryable


class UpgradeRefusedError(BandConnectionError):
    """The platform refused the WebSocket upgrade with an HTTP status.

    Attributes:
        status_code: the HTTP status of the refusal.
        code: the platform error code from the JSON body, if any.
        message: the platform error message, if any.
        retry_after: seconds to wait before retrying, if the platform said so.
    """

    def __init__(
        self,
        status_code: int,
        *,
        code: str | None = None,
        message: str | None = None,
        retry_after: float | None = None,
        retryable: bool,
    ) -> None:
        text = f"WebSocket upgrade refused with HTTP {status_code}"
        if code:
            text += f" ({code})"
        if message:
            text += f": {message}"
        super().__init__(text)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.retry_after = retry_after
        self.retryable = retryable


class SupersededError(BandConnectionError):
    """A newer connection for this agent took over; the platform evicted ours.

    Attributes mirror the ``supersede`` push.
    """

    def __init__(
        self,
        *,
        reason: str,
        message: str,
        retryable: bool = False,
        retry_after: int | None = None,
        correlation_id: str | None = None,
    ) -> None:
        super().__init__(f"connection superseded ({reason}): {message}")
        self.reason = reason
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.correlation_id = correlation_id


class RoomExecutionStoppedError(BandError):
    """The room's agent execution is stopped (HTTP 204 on a lifecycle mark, or
    403 "execution is stopped" on a message or event post)."""

    retryable = True

    def __init__(self, room_id: str) -> None:
        super().__init__(f"agent execution is stopped in room {room_id}")
        self.room_id = room_id


class BandToolError(BandError, ValueError):
    """A platform tool refused a call: an unknown participant, a missing mention,
    a file that is not available. The message is written for the model to read."""


class ToolArgumentsError(BandToolError):
    """A tool was called with arguments that fail its schema.

    Attributes:
        tool_name: the tool that was called.
        problems: one readable line per problem (``"<argument>: <what is wrong>"``).
    """

    def __init__(self, tool_name: str, problems: tuple[str, ...]) -> None:
        super().__init__(f"Invalid arguments for {tool_name}: " + "; ".join(problems))
        self.tool_name = tool_name
        self.problems = problems


class InputNotAccepted(BandError):
    """Raised by an adapter to prove it started no work for this message.

    The runtime keeps the message, does not charge the attempt, and retries it.
    """

    retryable = True


class HistoryConversionError(BandError):
    """An adapter's history converter raised while preparing a turn.

    The original error is the ``__cause__``. The runtime treats the turn as
    failed but keeps its context (history, participants) owed for the next try.
    """


class UnknownParticipantError(BandError, ValueError):
    """A mention names nobody in the room's roster.

    Attributes:
        identifier: the handle, name or id that matched nobody.
        available_handles: the handles that would have matched (the agent excluded).
    """

    def __init__(self, identifier: str, available_handles: Sequence[str]) -> None:
        self.identifier = identifier
        self.available_handles = tuple(available_handles)
        super().__init__(
            f"Unknown participant {identifier!r}. "
            f"Available handles: {list(self.available_handles)!r}"
        )


class APIStatusError(BandError):
    """The REST API answered with an error status.

    Attributes:
        status_code: the HTTP status.
        code: the platform's ``error.code`` (for example ``not_found``).
        message: the platform's ``error.message``.
        request_id: the platform's ``error.request_id``.
        details: the platform's ``error.details`` (validation errors are keyed by
            JSON pointer, for example ``/processing_attempt``).
        retry_after: seconds the platform asked us to wait, when it said so.
    """

    def __init__(
        self,
        status_code: int,
        *,
        code: str | None = None,
        message: str | None = None,
        request_id: str | None = None,
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        where = f" on {method} {path}" if method and path else ""
        text = f"HTTP {status_code}{where}"
        if code:
            text += f" [{code}]"
        if message:
            text += f": {message}"
        super().__init__(text)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.request_id = request_id
        self.details: Mapping[str, Any] = dict(details or {})
        self.retry_after = retry_after
        self.method = method
        self.path = path


class BadRequestError(APIStatusError):
    """HTTP 400."""


class AuthenticationError(APIStatusError):
    """HTTP 401: the API key is missing or wrong."""


class PermissionDeniedError(APIStatusError):
    """HTTP 403."""


class NotFoundError(APIStatusError):
    """HTTP 404 (the platform also uses it to hide things you may not see)."""


class ConflictError(APIStatusError):
    """HTTP 409."""


class ContentTooLargeError(APIStatusError):
    """HTTP 413."""


class RangeNotSatisfiableError(APIStatusError):
    """HTTP 416."""


class UnprocessableEntityError(APIStatusError):
    """HTTP 422: the request was understood but failed validation."""


class RateLimitError(APIStatusError):
    """HTTP 429."""

    retryable = True


class InternalServerError(APIStatusError):
    """HTTP 5xx other than 503."""

    retryable = True


class ServiceUnavailableError(InternalServerError):
    """HTTP 503."""


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: ContentTooLargeError,
    416: RangeNotSatisfiableError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


class OutcomeUnknownError(BandError):
    """A write the platform may have applied although the call failed.

    Raised by the REST client for a call that is not safe to repeat (a message
    or event post, a participant or contact change, a memory or task write, a
    lifecycle mark) when the failure can hide a committed write: a 5xx (a 503
    without ``Retry-After`` included), a 408, a timeout, or a connection lost
    after the request was sent. A load balancer answers exactly like this when
    the platform committed the write but the answer did not make it back. The
    client never sends such a call again by itself: the caller checks whether
    it landed (for a reply, the room's context) before repeating it.

    The error raised is also the class the failure maps to otherwise
    (:class:`InternalServerError`, :class:`ServiceUnavailableError`,
    :class:`APIStatusError` for a 408, :class:`BandTimeoutError`,
    :class:`BandConnectionError`), so handlers of those keep working; catch
    this class to tell "maybe done" from "not done".

    Its :attr:`~BandError.retryable` is that of the underlying failure: the
    platform may well accept the call later, but repeating it blindly may
    apply it twice.

    Attributes:
        method: the HTTP method of the call.
        path: the request path (never the query string or a header).
        status_code: the HTTP status that answered, or ``None`` when no answer
            came (a timeout or a connection lost after sending).
    """

    method: str | None
    path: str | None
    status_code: int | None


# The status classes below set ``status_code`` to an int, which fits the
# ``int | None`` above; mypy only objects because the attribute is writable.


class OutcomeUnknownStatusError(APIStatusError, OutcomeUnknownError):  # type: ignore[misc]
    """HTTP 408 on a write that may have been applied."""


class OutcomeUnknownServerError(InternalServerError, OutcomeUnknownError):  # type: ignore[misc]
    """A 5xx other than 503 on a write that may have been applied."""


class OutcomeUnknownServiceUnavailableError(  # type: ignore[misc]
    ServiceUnavailableError, OutcomeUnknownError
):
    """A 503 without ``Retry-After`` on a write that may have been applied."""


class OutcomeUnknownConnectionError(BandConnectionError, OutcomeUnknownError):
    """The connection was lost after a write was sent; it may have been applied.

    Attributes:
        method: the HTTP method of the call.
        path: the request path.
        status_code: always ``None`` (no answer came).
    """

    def __init__(self, text: str, *, method: str, path: str) -> None:
        super().__init__(text)
        self.method = method
        self.path = path
        self.status_code = None


class OutcomeUnknownTimeoutError(BandTimeoutError, OutcomeUnknownConnectionError):
    """A write timed out after it was sent; it may have been applied."""


def outcome_unknown_status_class(status_code: int) -> type[APIStatusError]:
    """The :class:`OutcomeUnknownError` class for a status that may hide a write.

    Raises:
        ValueError: ``status_code`` is neither 408 nor a 5xx.
    """
    if status_code == 503:
        return OutcomeUnknownServiceUnavailableError
    if status_code >= 500:
        return OutcomeUnknownServerError
    if status_code == 408:
        return OutcomeUnknownStatusError
    raise ValueError(f"HTTP {status_code} does not leave a write's outcome unknown")


def error_for_status(status_code: int) -> type[APIStatusError]:
    """The :class:`APIStatusError` subclass for an HTTP status."""
    if status_code in _BY_STATUS:
        return _BY_STATUS[status_code]
    if status_code >= 500:
        return InternalServerError
    return APIStatusError
