"""How the local platform refuses a request: :class:`RequestRefusedError` and its builders.

The platform's rules raise a :class:`RequestRefusedError` carrying exactly what the HTTP
layer answers with: the status, the machine ``code``, the ``message``, and for
validation errors the ``details`` keyed by JSON pointer. The server never uses
the client's error classes: it shares no code with the SDK it is tested
against, so the interop tests prove something.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from band_trio.errors import BandError

__all__ = [
    "RequestRefusedError",
    "bad_request",
    "conflict",
    "default_code",
    "fail",
    "forbidden",
    "invalid",
    "not_found",
]

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    408: "request_timeout",
    409: "conflict",
    413: "content_too_large",
    416: "range_not_satisfiable",
    422: "validation_error",
    429: "rate_limited",
    500: "internal_server_error",
    503: "service_unavailable",
}


def default_code(status: int) -> str:
    """The platform error code used for ``status`` when nothing more precise applies."""
    return _CODES.get(status, "error")


class RequestRefusedError(BandError):
    """The local platform refused a request; the HTTP answer it turns into.

    Raised by the platform's rules, and by :class:`~band_trio.local.LocalPlatform`
    methods that run the same rules in process (``post_message``,
    ``push_control``).

    Attributes:
        status: the HTTP status (404, 422, ...).
        code: the machine code of the error body (``not_found``, ...).
        message: the human-readable message of the error body.
        details: validation problems keyed by JSON pointer (422), else empty.
        retry_after: seconds the client is asked to wait, when the answer says so.
        headers: extra response headers (``content-range`` of a 416).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.status = status
        self.code = code or default_code(status)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.retry_after = retry_after
        self.headers = tuple(headers)
        super().__init__(f"HTTP {status} [{self.code}]: {message}")

    def body(self, request_id: str | None) -> dict[str, Any]:
        """The error document the platform answers with."""
        error: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "request_id": request_id,
        }
        if self.details or self.status == 422:
            error["details"] = dict(self.details)
        if self.retry_after is not None:
            error["retry_after"] = math.ceil(self.retry_after)
        return {"error": error}


def fail(
    status: int,
    message: str,
    *,
    code: str | None = None,
    details: Mapping[str, Any] | None = None,
    retry_after: float | None = None,
) -> RequestRefusedError:
    """Build (not raise) the refusal for an HTTP error answer."""
    return RequestRefusedError(status, message, code=code, details=details, retry_after=retry_after)


def invalid(
    pointer: str, problem: str, *, message: str | None = None, code: str | None = None
) -> RequestRefusedError:
    """A 422 ``validation_error`` naming one JSON pointer."""
    return fail(
        422,
        message or f"{pointer or '/'} {problem}",
        code=code or "validation_error",
        details={pointer or "/": [problem]},
    )


def not_found(what: str) -> RequestRefusedError:
    """A 404 ``not_found``."""
    return fail(404, f"{what} not found")


def forbidden(message: str) -> RequestRefusedError:
    """A 403 ``forbidden``."""
    return fail(403, message)


def bad_request(message: str) -> RequestRefusedError:
    """A 400 ``bad_request``."""
    return fail(400, message)


def conflict(message: str) -> RequestRefusedError:
    """A 409 ``conflict``."""
    return fail(409, message)
