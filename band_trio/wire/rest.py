"""``RestClient``: the Band agent REST API (protocol.md §4.3, all 38 endpoints) on Trio.

One :class:`httpx.AsyncClient` (on Trio; its transport is band-trio's own
keep-alive pool, :mod:`band_trio.wire._pool`) admitting at most
``max_connections`` requests at once, one typed async method per endpoint,
pagination helpers, a typed error for every failure, and retries that never repeat a write the
platform may already have done (see :mod:`band_trio.wire.retry`).

Secrets: the API key lives only in the underlying client's default headers.
It is never logged, never in a ``repr`` and never in an exception's text;
errors name the method and the *path* only. It is also stripped from any
redirect that leaves the base URL's origin.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, TypeVar
from urllib.parse import quote
from urllib.request import getproxies

import attrs
import cattrs
import httpx
import trio

from band_trio._version import __version__
from band_trio.errors import (
    APIStatusError,
    BandConfigError,
    BandConnectionError,
    BandProtocolError,
    BandTimeoutError,
    PermissionDeniedError,
    RoomExecutionStoppedError,
    error_for_status,
)
from band_trio.wire._pool import PooledTransport
from band_trio.wire.converter import converter
from band_trio.wire.models import (
    ActivityDetail,
    ActivityRequest,
    ActivityState,
    AgentContact,
    AgentMe,
    AgentMemory,
    AgentMemoryCreateRequest,
    Attachment,
    Board,
    BoardUpdateRequest,
    ChatEventRequest,
    ChatMessage,
    ChatMessageRequest,
    ChatParticipant,
    ChatRoom,
    ChatRoomRequest,
    ContactAddRequest,
    ContactAddResult,
    ContactRemoveRequest,
    ContactRemoveResult,
    ContactRequests,
    ContactRespondRequest,
    ContactResponseResult,
    CursorPage,
    DelegationToken,
    DelegationTokenRequest,
    EventCreated,
    MemoryMetadataRequest,
    MentionRequest,
    MessageSent,
    MessageStatus,
    Page,
    PageMeta,
    ParticipantRequest,
    Peer,
    ReceivedContactRequest,
    SentContactRequest,
    Task,
    TaskCreateRequest,
    TaskEvent,
    TaskUpdateRequest,
)
from band_trio.wire.retry import RetryPolicy, server_requested_delay

__all__ = ["MAX_PAGES", "RestClient", "RestConfig", "RestStatistics", "encode_query"]

logger = logging.getLogger("band_trio.wire.rest")

T = TypeVar("T")

API_PREFIX: Final = "/api/v1/agent"
MAX_PAGES: Final = 50
"""Offset-paginated listings stop after this many pages (the official SDK's cap)."""
MAX_POOL: Final = 64
_EXECUTION_STOPPED = "execution is stopped"

# Transport failures that prove the request never reached the server.
_NOT_SENT: Final = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# Failures that the same request would hit again: never retried.
_NEVER_TRANSIENT: Final = (httpx.UnsupportedProtocol, httpx.LocalProtocolError)


def _default_user_agent() -> str:
    return f"band-trio/{__version__}"


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise BandConfigError(f"{attribute.name} must be > 0, got {value!r}")


def _pool_size(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not 1 <= value <= MAX_POOL:
        raise BandConfigError(f"{attribute.name} must be within 1..{MAX_POOL}, got {value!r}")


@attrs.frozen(kw_only=True)
class RestConfig:
    """Settings of a :class:`RestClient`; every knob has a default.

    Attributes:
        timeout: seconds one attempt of one call may take, end to end.
        activity_timeout: the timeout of :meth:`RestClient.report_activity`
            (which is never retried: a late "working" report is worthless).
        retry: the retry policy (budget 3 by default).
        max_connections: requests on the wire at once, hence connections open
            at most (1..64; 16 by default: in the benchmarks more gave no more
            throughput).
        max_keepalive_connections: idle connections kept open (defaults to
            ``max_connections``, so a busy agent does not churn connections).
        keepalive_expiry: seconds an idle pooled connection stays open.
        user_agent: the ``User-Agent`` header.
    """

    timeout: float = attrs.field(default=30.0, validator=_positive)
    activity_timeout: float = attrs.field(default=2.0, validator=_positive)
    retry: RetryPolicy = attrs.field(factory=RetryPolicy)
    max_connections: int = attrs.field(default=16, validator=_pool_size)
    max_keepalive_connections: int | None = attrs.field(default=None)
    keepalive_expiry: float = attrs.field(default=30.0, validator=_positive)
    user_agent: str = attrs.field(factory=_default_user_agent)

    @max_keepalive_connections.validator
    def _check_keepalive(self, attribute: attrs.Attribute[int | None], value: int | None) -> None:
        if value is not None and not 0 <= value <= MAX_POOL:
            raise BandConfigError(f"{attribute.name} must be within 0..{MAX_POOL}, got {value!r}")


@attrs.frozen
class RestStatistics:
    """Counters of a :class:`RestClient` (a snapshot).

    Attributes:
        calls: method calls made (one per endpoint call, however many attempts).
        attempts: HTTP requests sent (calls plus retries).
        retries: retries made after a retryable failure.
        errors: calls that ended in an exception.
        in_flight: requests on the wire now (at most ``max_connections``).
        queued: requests waiting for a free connection now.
    """

    calls: int
    attempts: int
    retries: int
    errors: int
    in_flight: int = 0
    queued: int = 0


def encode_query(params: Mapping[str, Any]) -> dict[str, str]:
    """Encode query parameters the way the platform expects (protocol.md §4.1).

    ``None`` values are dropped, booleans become ``true``/``false`` and lists or
    tuples are joined with commas.
    """
    out: dict[str, str] = {}
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, list | tuple):
            out[key] = ",".join(str(v) for v in value)
        else:
            out[key] = str(value)
    return out


def _seg(value: str | int) -> str:
    """One path segment, escaped so an id can never change the route."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise BandConfigError(
            f"an id in a request path must be a string, got {type(value).__name__}"
        )
    text = str(value)
    if not text:
        raise BandConfigError("an id in a request path must not be empty")
    return quote(text, safe="")


_NO_BODY: Final[Any] = object()


class RestClient:
    """Typed async client for the Band agent REST API (``/api/v1/agent``).

    Use it as an async context manager (or call :meth:`aclose`)::

        async with RestClient(base_url=url, api_key=key) as rest:
            me = await rest.get_me()

    Every method is a Trio checkpoint and may raise:

    Raises:
        APIStatusError: the platform answered with an error status; the
            subclass names the status (``NotFoundError``, ``RateLimitError``,
            ...) and carries the platform's ``code``, ``message``,
            ``request_id`` and ``details``.
        RoomExecutionStoppedError: the room's agent execution is stopped (204
            on a lifecycle mark; 403 "execution is stopped" on a post).
        BandConnectionError: the transport failed (``__cause__`` is the
            original error); ``BandTimeoutError`` when an attempt timed out.
        BandProtocolError: the platform answered 2xx with a body that does not
            match the protocol.

    Concurrency: at most ``config.max_connections`` requests are on the wire
    at once; further calls wait in FIFO order for a free connection (the wait
    is not part of an attempt's timeout; a caller's own deadline still applies).

    Cancellation: safe at any point; a retry wait is a ``trio.sleep``.

    Args:
        base_url: the site root, e.g. ``https://app.band.ai`` (without ``/api/v1``).
        api_key: the agent's API key (sent as ``X-API-Key``; never shown).
        config: timeouts, retry policy and pool limits.
        transport: an httpx transport to use instead of the network (tests).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        config: RestConfig | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Create the client and its connection pool (no I/O happens here).

        Raises:
            BandConfigError: an empty key, or a base URL that is not a plain
                ``http(s)://host[:port][/prefix]``.
        """
        config = config or RestConfig()
        if not isinstance(api_key, str) or not api_key.strip():
            raise BandConfigError("api_key must be a non-empty string")
        try:
            url = httpx.URL(base_url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise BandConfigError(f"invalid REST base URL {base_url!r}") from exc
        if url.userinfo:
            # Do not echo the URL: it carries a secret.
            raise BandConfigError("REST base URL must not contain credentials")
        if url.query or url.fragment:
            raise BandConfigError(f"REST base URL must not have a query or fragment: {base_url!r}")
        if url.scheme not in ("http", "https") or not url.host:
            raise BandConfigError(f"REST base URL must be http(s)://host, got {base_url!r}")
        if "/api/v1" in url.path:
            raise BandConfigError(
                f"REST base URL must not contain /api/v1 (give the site root): {base_url!r}"
            )
        self._base_url = str(url).rstrip("/")
        self._origin = (url.scheme, url.host, url.port)
        self._api_key = api_key
        self._config = config
        self._random = random.Random()
        self._calls = 0
        self._attempts = 0
        self._retries = 0
        self._errors = 0
        # At most max_connections requests enter httpx at once; the rest wait
        # here, in FIFO order (a Trio queue costs nothing while it waits).
        # Waiting here is not part of an attempt: the attempt timeout starts
        # once a connection is free. The transport opens a connection only
        # when no idle one is left, so this also bounds the connections.
        self._slots = trio.CapacityLimiter(config.max_connections)
        keepalive = config.max_keepalive_connections
        if keepalive is None:
            keepalive = config.max_connections
        proxied = any(scheme != "no" for scheme in getproxies())
        if transport is None and not proxied:
            transport = PooledTransport(
                max_keepalive=min(keepalive, config.max_connections),
                keepalive_expiry=config.keepalive_expiry,
            )
        # With proxies configured in the environment (HTTP_PROXY, HTTPS_PROXY,
        # ALL_PROXY, ...) httpx's own transport is used, the only one httpx
        # applies them to; these limits are for it (the slots still bound the
        # load). A transport given here ignores them.
        self._client = httpx.AsyncClient(
            base_url=self._base_url,
            headers={"X-API-Key": api_key, "User-Agent": config.user_agent},
            timeout=httpx.Timeout(config.timeout),
            limits=httpx.Limits(
                max_connections=config.max_connections,
                max_keepalive_connections=min(keepalive, config.max_connections),
                keepalive_expiry=config.keepalive_expiry,
            ),
            transport=transport,
            follow_redirects=True,
            event_hooks={"request": [self._guard_key_on_redirect]},
        )

    def __repr__(self) -> str:
        return f"<RestClient {self._base_url}>"

    @property
    def base_url(self) -> str:
        """The site root every path is appended to."""
        return self._base_url

    @property
    def config(self) -> RestConfig:
        """The client's settings."""
        return self._config

    def statistics(self) -> RestStatistics:
        """A snapshot of the client's counters."""
        slots = self._slots.statistics()
        return RestStatistics(
            self._calls,
            self._attempts,
            self._retries,
            self._errors,
            in_flight=slots.borrowed_tokens,
            queued=slots.tasks_waiting,
        )

    async def aclose(self) -> None:
        """Close every pooled connection. The client cannot be used afterwards."""
        await self._client.aclose()

    async def __aenter__(self) -> RestClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ core

    async def _guard_key_on_redirect(self, request: httpx.Request) -> None:
        # httpx strips Authorization on cross-origin redirects but not our
        # X-API-Key header: never hand the key to another origin.
        if (request.url.scheme, request.url.host, request.url.port) != self._origin:
            request.headers.pop("X-API-Key", None)

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]") if self._api_key in text else text

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = _NO_BODY,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        attempt_timeout: float | None = None,
        retry: bool = True,
    ) -> httpx.Response:
        """Send one call (with retries) and return its 2xx response, body read."""
        self._calls += 1
        try:
            return await self._request_with_retries(
                method,
                path,
                params=params,
                body=body,
                content=content,
                headers=headers,
                idempotent=idempotent,
                attempt_timeout=attempt_timeout,
                retry=retry,
            )
        except Exception:
            self._errors += 1
            raise

    async def _request_with_retries(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None,
        body: Any,
        content: bytes | None,
        headers: Mapping[str, str] | None,
        idempotent: bool | None,
        attempt_timeout: float | None,
        retry: bool,
    ) -> httpx.Response:
        if self._client.is_closed:
            raise BandConfigError("this RestClient is closed")
        if idempotent is None:
            idempotent = method in ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")
        policy = self._config.retry if retry else attrs.evolve(self._config.retry, max_retries=0)
        per_attempt = attempt_timeout if attempt_timeout is not None else self._config.timeout
        send_headers = dict(headers or {})
        if body is not _NO_BODY:
            try:
                text = json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise BandConfigError(
                    f"{method} {path}: the request body is not valid JSON ({exc})"
                ) from exc
            content = text.encode()
            send_headers["Content-Type"] = "application/json"
        query = encode_query(params) if params else None
        request = self._client.build_request(
            method,
            path,
            params=query,
            content=content,
            headers=send_headers,
            timeout=httpx.Timeout(per_attempt),
        )
        attempt = 0
        while True:
            self._attempts += 1
            failure: httpx.HTTPError | None = None
            response: httpx.Response | None = None
            async with self._slots:
                with trio.move_on_after(per_attempt) as scope:
                    try:
                        response = await self._client.send(request)
                    except httpx.HTTPError as exc:
                        failure = exc
            if scope.cancelled_caught:
                failure = httpx.ReadTimeout("the attempt exceeded its timeout", request=request)
            if failure is not None:
                delay = None
                if isinstance(failure, httpx.TransportError) and not isinstance(
                    failure, _NEVER_TRANSIENT
                ):
                    delay = policy.after_transport_error(
                        attempt=attempt,
                        maybe_sent=not isinstance(failure, _NOT_SENT),
                        idempotent=idempotent,
                        random=self._random.random(),
                    )
                if delay is None:
                    error = self._transport_error(failure, method, path)
                    if self._api_key in str(failure):
                        # A traceback prints the cause's text: never chain the key.
                        raise error from None
                    raise error from failure
                logger.warning(
                    "%s %s failed (%s); retry %d in %.2f s",
                    method,
                    path,
                    type(failure).__name__,
                    attempt + 1,
                    delay,
                )
            else:
                assert response is not None
                if response.is_success:
                    return response
                delay = policy.after_status(
                    attempt=attempt,
                    status=response.status_code,
                    headers=response.headers,
                    idempotent=idempotent,
                    now=time.time(),
                    random=self._random.random(),
                )
                if delay is None:
                    raise self._status_error(response, method, path)
                logger.warning(
                    "%s %s answered %d; retry %d in %.2f s",
                    method,
                    path,
                    response.status_code,
                    attempt + 1,
                    delay,
                )
            attempt += 1
            self._retries += 1
            await trio.sleep(delay)

    def _transport_error(self, exc: httpx.HTTPError, method: str, path: str) -> Exception:
        detail = self._redact(str(exc)) or type(exc).__name__
        text = f"{method} {path}: {type(exc).__name__}: {detail}"
        if isinstance(exc, httpx.TimeoutException):
            return BandTimeoutError(text)
        if isinstance(exc, httpx.UnsupportedProtocol):
            return BandConfigError(text)
        if isinstance(exc, httpx.DecodingError | httpx.TooManyRedirects):
            return BandProtocolError(text)
        return BandConnectionError(text)

    def _status_error(self, response: httpx.Response, method: str, path: str) -> APIStatusError:
        code = message = request_id = None
        details: Mapping[str, Any] | None = None
        try:
            payload = json.loads(response.content) if response.content else None
        except (ValueError, UnicodeDecodeError):
            payload = None
        err = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(err, dict):
            code = err.get("code") if isinstance(err.get("code"), str) else None
            raw_message = err.get("message")
            message = self._redact(raw_message) if isinstance(raw_message, str) else None
            request_id = err.get("request_id") if isinstance(err.get("request_id"), str) else None
            details = err.get("details") if isinstance(err.get("details"), dict) else None
        elif isinstance(err, str):
            message = self._redact(err)
        elif isinstance(payload, str):
            # A bare JSON string body (the declared 416 body of the file download).
            message = self._redact(payload)
        return error_for_status(response.status_code)(
            response.status_code,
            code=code,
            message=message,
            request_id=request_id,
            details=details,
            retry_after=server_requested_delay(response.headers, now=time.time()),
            method=method,
            path=path,
        )

    # ------------------------------------------------------------ decoding

    def _json(self, response: httpx.Response, method: str, path: str) -> Any:
        try:
            return json.loads(response.content)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BandProtocolError(
                f"{method} {path}: HTTP {response.status_code} body is not JSON"
            ) from exc

    def _envelope(
        self, response: httpx.Response, method: str, path: str, *, optional: bool = False
    ) -> dict[str, Any]:
        payload = self._json(response, method, path)
        if not isinstance(payload, dict):
            raise BandProtocolError(f"{method} {path}: response is not a JSON object")
        if "data" not in payload and not optional:
            raise BandProtocolError(f"{method} {path}: response has no 'data'")
        return payload

    def _structure(self, data: Any, cls: type[T], method: str, path: str) -> T:
        try:
            return converter.structure(data, cls)
        except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
            if isinstance(exc, cattrs.BaseValidationError):
                reason = "; ".join(cattrs.transform_error(exc, path="data"))
            else:
                reason = f"{type(exc).__name__}: {exc}"
            raise BandProtocolError(
                f"{method} {path}: invalid {cls.__name__} in response: {reason}"
            ) from exc

    def _one(self, response: httpx.Response, cls: type[T], method: str, path: str) -> T:
        data = self._envelope(response, method, path)["data"]
        return self._structure(data, cls, method, path)

    def _items(self, data: Any, cls: type[T], method: str, path: str) -> tuple[T, ...]:
        if data is None:
            return ()
        if not isinstance(data, list):
            raise BandProtocolError(f"{method} {path}: 'data' is not a list")
        return tuple(self._structure(item, cls, method, path) for item in data)

    def _page(self, response: httpx.Response, cls: type[T], method: str, path: str) -> Page[T]:
        payload = self._envelope(response, method, path, optional=True)
        items = self._items(payload.get("data"), cls, method, path)
        raw_meta = payload.get("metadata")
        meta = (
            self._structure(raw_meta, PageMeta, method, path)
            if isinstance(raw_meta, dict)
            else PageMeta()
        )
        return Page(items=items, meta=meta)

    def _cursor_page(
        self,
        response: httpx.Response,
        cls: type[T],
        method: str,
        path: str,
        *,
        strict_meta: bool = True,
    ) -> CursorPage[T]:
        payload = self._envelope(response, method, path, optional=not strict_meta)
        items = self._items(payload.get("data"), cls, method, path)
        meta = payload.get("metadata")
        if meta is None and not strict_meta:
            meta = payload.get("meta")
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise BandProtocolError(f"{method} {path}: 'metadata' is not an object")
        has_more = meta.get("has_more", None if strict_meta else False)
        limit = meta.get("limit")
        next_cursor = meta.get("next_cursor")
        if type(has_more) is not bool:
            raise BandProtocolError(f"{method} {path}: metadata.has_more must be a boolean")
        if (strict_meta or limit is not None) and type(limit) is not int:
            raise BandProtocolError(f"{method} {path}: metadata.limit must be an integer")
        if next_cursor is not None and not isinstance(next_cursor, str):
            raise BandProtocolError(f"{method} {path}: metadata.next_cursor must be a string")
        return CursorPage(
            items=items, has_more=has_more, limit=limit, next_cursor=next_cursor, meta=meta
        )

    @staticmethod
    def _body(obj: Any) -> Any:
        return converter.unstructure(obj)

    # ---------------------------------------------------------- pagination

    async def _follow_pages(
        self, fetch: Callable[[int], Awaitable[Page[T]]], key: Callable[[T], str]
    ) -> AsyncIterator[T]:
        seen: set[str] = set()
        page_no = 1
        while True:
            page = await fetch(page_no)
            for item in page.items:
                k = key(item)
                if k not in seen:
                    seen.add(k)
                    yield item
            total = page.meta.total_pages
            if not page.items or total is None or page_no >= total or page_no >= MAX_PAGES:
                return
            page_no += 1

    async def _follow_cursor(
        self,
        fetch: Callable[[str | None], Awaitable[CursorPage[T]]],
        max_pages: int | None,
    ) -> AsyncIterator[T]:
        cursor: str | None = None
        used: set[str] = set()
        pages = 0
        while True:
            page = await fetch(cursor)
            pages += 1
            for item in page.items:
                yield item
            if not page.has_more or not page.next_cursor:
                return
            if page.next_cursor in used:
                raise BandProtocolError("the platform repeated a pagination cursor")
            if max_pages is not None and pages >= max_pages:
                return
            used.add(page.next_cursor)
            cursor = page.next_cursor

    # ===================================================== 1. agent profile

    async def get_me(self) -> AgentMe:
        """``GET /agent/me`` — the calling agent's profile (also checks the key)."""
        path = f"{API_PREFIX}/me"
        return self._one(await self._request("GET", path), AgentMe, "GET", path)

    # ============================================================ 2. peers

    async def list_peers(
        self,
        *,
        not_in_chat: str | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> Page[Peer]:
        """``GET /agent/peers`` — agents and users this agent can recruit.

        Args:
            not_in_chat: exclude agents already in this room.
            page: 1-based page number.
            page_size: rows per page.
        """
        path = f"{API_PREFIX}/peers"
        params = {"not_in_chat": not_in_chat, "page": page, "page_size": page_size}
        return self._page(await self._request("GET", path, params=params), Peer, "GET", path)

    def iter_peers(
        self, *, not_in_chat: str | None = None, page_size: int = 100
    ) -> AsyncIterator[Peer]:
        """Every peer, across pages (at most :data:`MAX_PAGES`), de-duplicated by id."""

        async def fetch(n: int) -> Page[Peer]:
            return await self.list_peers(not_in_chat=not_in_chat, page=n, page_size=page_size)

        return self._follow_pages(fetch, lambda p: p.id)

    # ======================================================= 3-6. chats

    async def list_chats(
        self, *, page: int = 1, page_size: int = 100, include_participants: bool = False
    ) -> Page[ChatRoom]:
        """``GET /agent/chats`` — rooms this agent participates in.

        Args:
            page: 1-based page number.
            page_size: rows per page.
            include_participants: ask for each room's roster (first 100 rows).
        """
        path = f"{API_PREFIX}/chats"
        params = {
            "page": page,
            "page_size": page_size,
            "include": ["participants"] if include_participants else None,
        }
        return self._page(await self._request("GET", path, params=params), ChatRoom, "GET", path)

    def iter_chats(
        self, *, page_size: int = 100, include_participants: bool = False
    ) -> AsyncIterator[ChatRoom]:
        """Every room across pages until ``total_pages`` (at most :data:`MAX_PAGES`).

        A missing ``total_pages`` stops after the first page, as the official
        SDK does. Rooms are de-duplicated by id (pages can shift while read).
        """

        async def fetch(n: int) -> Page[ChatRoom]:
            return await self.list_chats(
                page=n, page_size=page_size, include_participants=include_participants
            )

        return self._follow_pages(fetch, lambda r: r.id)

    async def create_chat(
        self, *, title: str | None = None, task_id: str | None = None
    ) -> ChatRoom:
        """``POST /agent/chats`` — create a room owned by this agent (never retried
        after an ambiguous failure)."""
        path = f"{API_PREFIX}/chats"
        body = {"chat": self._body(ChatRoomRequest(title=title, task_id=task_id))}
        return self._one(await self._request("POST", path, body=body), ChatRoom, "POST", path)

    async def get_chat(self, chat_id: str) -> ChatRoom:
        """``GET /agent/chats/{id}`` — one room this agent participates in."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}"
        return self._one(await self._request("GET", path), ChatRoom, "GET", path)

    async def update_chat(self, chat_id: str, *, title: str) -> ChatRoom:
        """``PATCH /agent/chats/{id}`` — rename a room (owner only).

        Setting a title is idempotent, so this call is retried like a PUT.
        """
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}"
        body = {"chat": self._body(ChatRoomRequest(title=title))}
        response = await self._request("PATCH", path, body=body, idempotent=True)
        return self._one(response, ChatRoom, "PATCH", path)

    # ================================================== 7-9. participants

    async def list_participants(self, chat_id: str) -> list[ChatParticipant]:
        """``GET /agent/chats/{id}/participants`` — the room's roster with presence."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/participants"
        payload = self._envelope(await self._request("GET", path), "GET", path)
        return list(self._items(payload["data"], ChatParticipant, "GET", path))

    async def add_participant(
        self, chat_id: str, participant_id: str, *, role: str | None = None
    ) -> ChatParticipant:
        """``POST /agent/chats/{id}/participants`` — add someone (``role``: owner,
        admin or member)."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/participants"
        body = {
            "participant": self._body(ParticipantRequest(participant_id=participant_id, role=role))
        }
        response = await self._request("POST", path, body=body)
        return self._one(response, ChatParticipant, "POST", path)

    async def remove_participant(self, chat_id: str, participant_id: str) -> ChatParticipant:
        """``DELETE /agent/chats/{id}/participants/{pid}`` — returns the removed participant."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/participants/{_seg(participant_id)}"
        return self._one(await self._request("DELETE", path), ChatParticipant, "DELETE", path)

    # ================================================ 10-17. messages

    async def list_messages(
        self,
        chat_id: str,
        *,
        status: str | None = None,
        cursor: str | None = None,
        sort_order: str | None = None,
        limit: int | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> CursorPage[ChatMessage]:
        """``GET /agent/chats/{id}/messages`` — messages delivered to this agent.

        Args:
            status: ``pending``, ``processing``, ``processed``, ``failed`` or
                ``all``; omitted = everything not processed.
            cursor: continue from a previous page's ``next_cursor``.
            sort_order: ``asc`` (default) or ``desc``.
            limit: rows per page (platform default 20, max 100).
            page: deprecated offset pagination (do not mix with ``cursor``).
            page_size: deprecated offset pagination.
        """
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/messages"
        params = {
            "status": status,
            "cursor": cursor,
            "sort_order": sort_order,
            "limit": limit,
            "page": page,
            "page_size": page_size,
        }
        response = await self._request("GET", path, params=params)
        return self._cursor_page(response, ChatMessage, "GET", path)

    def iter_messages(
        self,
        chat_id: str,
        *,
        status: str | None = None,
        sort_order: str | None = None,
        limit: int | None = 100,
        max_pages: int | None = None,
    ) -> AsyncIterator[ChatMessage]:
        """Every message of :meth:`list_messages`, following ``next_cursor`` while ``has_more``."""

        async def fetch(cursor: str | None) -> CursorPage[ChatMessage]:
            return await self.list_messages(
                chat_id, status=status, cursor=cursor, sort_order=sort_order, limit=limit
            )

        return self._follow_cursor(fetch, max_pages)

    async def send_message(
        self,
        chat_id: str,
        content: str,
        mentions: Sequence[MentionRequest],
        *,
        attachment_ids: Sequence[str] | None = None,
    ) -> MessageSent:
        """``POST /agent/chats/{id}/messages`` — send a text message.

        Never re-sent after an ambiguous failure (the message may exist).

        Args:
            chat_id: the room.
            content: the text (must contain a visible character).
            mentions: at least one; each with ``id`` or ``handle``.
            attachment_ids: ids of files uploaded to this room (at most 10).

        Raises:
            RoomExecutionStoppedError: the room's agent execution is stopped.
            UnprocessableEntityError: e.g. ``mentioned_participant_not_in_room``.
        """
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/messages"
        request = ChatMessageRequest(
            content=content,
            mentions=tuple(mentions),
            attachment_ids=tuple(attachment_ids) if attachment_ids is not None else None,
        )
        body = {"message": self._body(request)}
        try:
            response = await self._request("POST", path, body=body)
        except PermissionDeniedError as exc:
            raise self._maybe_stopped(exc, chat_id) from exc
        return self._one(response, MessageSent, "POST", path)

    @staticmethod
    def _maybe_stopped(exc: PermissionDeniedError, chat_id: str) -> Exception:
        if exc.message and _EXECUTION_STOPPED in exc.message.lower():
            return RoomExecutionStoppedError(chat_id)
        return exc

    async def next_message(self, chat_id: str) -> ChatMessage | None:
        """``GET /agent/chats/{id}/messages/next`` — the oldest actionable message.

        Returns:
            The message, or ``None`` (HTTP 204) when there is nothing to do —
            also the answer while the room's execution is stopped.
        """
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/messages/next"
        response = await self._request("GET", path)
        if response.status_code == 204:
            return None
        if response.status_code != 200:
            raise BandProtocolError(f"GET {path}: unexpected HTTP {response.status_code}")
        return self._one(response, ChatMessage, "GET", path)

    async def _mark(
        self, chat_id: str, message_id: str, which: str, body: Any, *, idempotent: bool
    ) -> MessageStatus:
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/messages/{_seg(message_id)}/{which}"
        response = await self._request("POST", path, body=body, idempotent=idempotent)
        if response.status_code == 204:
            raise RoomExecutionStoppedError(chat_id)
        if response.status_code != 200:
            raise BandProtocolError(f"POST {path}: unexpected HTTP {response.status_code}")
        return self._one(response, MessageStatus, "POST", path)

    async def mark_processing(self, chat_id: str, message_id: str) -> MessageStatus:
        """``POST .../messages/{id}/processing`` — claim a message (start an attempt).

        Idempotent while the message is already processing, so it is retried
        like a GET.

        Raises:
            RoomExecutionStoppedError: HTTP 204, the room's execution is stopped.
        """
        return await self._mark(chat_id, message_id, "processing", _NO_BODY, idempotent=True)

    async def mark_processed(self, chat_id: str, message_id: str) -> MessageStatus:
        """``POST .../messages/{id}/processed`` — complete the current attempt.

        Raises:
            RoomExecutionStoppedError: HTTP 204, the room's execution is stopped.
            UnprocessableEntityError: no active attempt (``details["/processing_attempt"]``).
            NotFoundError: the message is gone or not in this room.
        """
        return await self._mark(chat_id, message_id, "processed", _NO_BODY, idempotent=False)

    async def mark_failed(self, chat_id: str, message_id: str, error: str) -> MessageStatus:
        """``POST .../messages/{id}/failed`` — close the current attempt as failed.

        Raises:
            RoomExecutionStoppedError: HTTP 204, the room's execution is stopped.
            UnprocessableEntityError: no active attempt.
            NotFoundError: the message is gone or not in this room.
        """
        return await self._mark(chat_id, message_id, "failed", {"error": error}, idempotent=False)

    async def send_event(
        self,
        chat_id: str,
        content: str,
        message_type: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> EventCreated:
        """``POST /agent/chats/{id}/events`` — post a non-text event (never a turn).

        Args:
            chat_id: the room.
            content: human-readable text (≤ 16384 characters).
            message_type: ``tool_call``, ``tool_result``, ``thought``, ``error``,
                ``task`` or ``attention``.
            metadata: structured data (omitted when ``None``).

        Raises:
            RoomExecutionStoppedError: the room's agent execution is stopped.
        """
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/events"
        request = ChatEventRequest(content=content, message_type=message_type, metadata=metadata)
        try:
            response = await self._request("POST", path, body={"event": self._body(request)})
        except PermissionDeniedError as exc:
            raise self._maybe_stopped(exc, chat_id) from exc
        return self._one(response, EventCreated, "POST", path)

    async def get_context(
        self,
        chat_id: str,
        *,
        cursor: str | None = None,
        limit: int | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> CursorPage[ChatMessage]:
        """``GET /agent/chats/{id}/context`` — this agent's own messages and the text
        messages mentioning it, oldest first (``limit`` default 50, max 100)."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/context"
        params = {"cursor": cursor, "limit": limit, "page": page, "page_size": page_size}
        response = await self._request("GET", path, params=params)
        return self._cursor_page(response, ChatMessage, "GET", path)

    def iter_context(
        self, chat_id: str, *, limit: int | None = 50, max_pages: int | None = None
    ) -> AsyncIterator[ChatMessage]:
        """The whole context of a room, following ``next_cursor`` while ``has_more``."""

        async def fetch(cursor: str | None) -> CursorPage[ChatMessage]:
            return await self.get_context(chat_id, cursor=cursor, limit=limit)

        return self._follow_cursor(fetch, max_pages)

    # =================================================== 18. activity

    async def report_activity(
        self, chat_id: str, working: bool, activity: ActivityDetail | None = None
    ) -> bool:
        """``POST /agent/chats/{id}/activity`` — the "working" indicator.

        Short timeout (``RestConfig.activity_timeout``) and no retries.

        Returns:
            The state in effect: ``False`` after a ``working=True`` report means
            the platform stopped the execution.
        """
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/activity"
        body = self._body(ActivityRequest(working=working, activity=activity))
        response = await self._request(
            "POST", path, body=body, attempt_timeout=self._config.activity_timeout, retry=False
        )
        return self._one(response, ActivityState, "POST", path).working

    # ==================================================== 19-20. files

    async def upload_file(
        self,
        chat_id: str,
        data: bytes,
        *,
        filename: str,
        content_type: str = "application/octet-stream",
    ) -> Attachment:
        """``PUT /agent/chats/{id}/files`` — upload bytes (identical bytes dedupe).

        The SHA-256 header is computed here.

        Raises:
            ContentTooLargeError: the file is too large (HTTP 413).
        """
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/files"
        headers = {
            "x-file-name": filename,
            "x-file-sha256": hashlib.sha256(data).hexdigest(),
            "Content-Type": content_type,
        }
        response = await self._request("PUT", path, content=bytes(data), headers=headers)
        return self._one(response, Attachment, "PUT", path)

    async def download_file(
        self, chat_id: str, file_id: str, *, byte_range: str | None = None
    ) -> bytes:
        """``GET /agent/chats/{id}/files/{fid}`` — a file's bytes.

        Args:
            chat_id: the room.
            file_id: the attachment id.
            byte_range: an HTTP ``Range`` value, e.g. ``"bytes=0-99"``.

        Raises:
            RangeNotSatisfiableError: HTTP 416.
        """
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/files/{_seg(file_id)}"
        headers = {"Range": byte_range} if byte_range is not None else None
        response = await self._request("GET", path, headers=headers)
        return response.content

    # ============================================== 21-27. tasks, board

    async def list_tasks(
        self,
        chat_id: str,
        *,
        state: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> CursorPage[Task]:
        """``GET /agent/chats/{id}/tasks`` — ``state``: active (default), cancelled,
        superseded, archived or all."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/tasks"
        params = {"state": state, "cursor": cursor, "limit": limit}
        return self._cursor_page(await self._request("GET", path, params=params), Task, "GET", path)

    def iter_tasks(
        self, chat_id: str, *, state: str | None = None, limit: int | None = None
    ) -> AsyncIterator[Task]:
        """Every task of :meth:`list_tasks`, across cursor pages."""

        async def fetch(cursor: str | None) -> CursorPage[Task]:
            return await self.list_tasks(chat_id, state=state, cursor=cursor, limit=limit)

        return self._follow_cursor(fetch, None)

    async def create_task(
        self,
        chat_id: str,
        subject: str,
        *,
        detail: str | None = None,
        supersedes_id: str | int | None = None,
    ) -> Task:
        """``POST /agent/chats/{id}/tasks`` — ``supersedes_id`` (UUID or board number)
        replaces an active task."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/tasks"
        request = TaskCreateRequest(
            subject=subject,
            detail=detail,
            supersedes_id=supersedes_id,
        )
        response = await self._request("POST", path, body=self._body(request))
        return self._one(response, Task, "POST", path)

    async def get_task(
        self, chat_id: str, task_id: str | int, *, include_history: bool = False
    ) -> Task:
        """``GET /agent/chats/{id}/tasks/{task}`` — by UUID or board number."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/tasks/{_seg(task_id)}"
        params = {"include": ["history"] if include_history else None}
        return self._one(await self._request("GET", path, params=params), Task, "GET", path)

    async def update_task(
        self,
        chat_id: str,
        task_id: str | int,
        *,
        active_form: str | None = None,
        comment: str | None = None,
        detail: str | None = None,
        linked_native_id: str | None = None,
        state: str | None = None,
        status: str | None = None,
        subject: str | None = None,
    ) -> Task:
        """``POST /agent/chats/{id}/tasks/{task}`` — update a task (at least one field).

        Raises:
            BandConfigError: no field given (nothing is sent).
        """
        request = TaskUpdateRequest(
            active_form=active_form,
            comment=comment,
            detail=detail,
            linked_native_id=linked_native_id,
            state=state,
            status=status,
            subject=subject,
        )
        body = self._body(request)
        if not body:
            raise BandConfigError("update_task needs at least one field to change")
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/tasks/{_seg(task_id)}"
        return self._one(await self._request("POST", path, body=body), Task, "POST", path)

    async def get_task_history(
        self,
        chat_id: str,
        task_id: str | int,
        *,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> CursorPage[TaskEvent]:
        """``GET /agent/chats/{id}/tasks/{task}/history`` — oldest first."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/tasks/{_seg(task_id)}/history"
        params = {"cursor": cursor, "limit": limit}
        return self._cursor_page(
            await self._request("GET", path, params=params), TaskEvent, "GET", path
        )

    async def get_board(self, chat_id: str, *, include_history: bool = False) -> Board:
        """``GET /agent/chats/{id}/board`` — the room goal."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/board"
        params = {"include": ["history"] if include_history else None}
        return self._one(await self._request("GET", path, params=params), Board, "GET", path)

    async def set_board(
        self, chat_id: str, *, goal_title: str | None = None, goal_summary: str | None = None
    ) -> Board:
        """``PUT /agent/chats/{id}/board`` — upsert the goal title and/or summary."""
        path = f"{API_PREFIX}/chats/{_seg(chat_id)}/board"
        body = self._body(BoardUpdateRequest(goal_title=goal_title, goal_summary=goal_summary))
        return self._one(await self._request("PUT", path, body=body), Board, "PUT", path)

    # ================================================= 28-32. contacts

    async def list_contacts(
        self, *, page: int | None = None, page_size: int | None = None
    ) -> Page[AgentContact]:
        """``GET /agent/contacts`` — the agent's contacts with presence."""
        path = f"{API_PREFIX}/contacts"
        params = {"page": page, "page_size": page_size}
        return self._page(
            await self._request("GET", path, params=params), AgentContact, "GET", path
        )

    def iter_contacts(self, *, page_size: int = 100) -> AsyncIterator[AgentContact]:
        """Every contact across pages (at most :data:`MAX_PAGES`), de-duplicated by id."""

        async def fetch(n: int) -> Page[AgentContact]:
            return await self.list_contacts(page=n, page_size=page_size)

        return self._follow_pages(fetch, lambda c: c.id)

    async def add_contact(self, handle: str, *, message: str | None = None) -> ContactAddResult:
        """``POST /agent/contacts/add`` — send a contact request (``status`` pending,
        or approved when an inverse request existed)."""
        path = f"{API_PREFIX}/contacts/add"
        body = self._body(ContactAddRequest(handle=handle, message=message))
        return self._one(
            await self._request("POST", path, body=body), ContactAddResult, "POST", path
        )

    async def remove_contact(
        self, *, contact_id: str | None = None, handle: str | None = None
    ) -> ContactRemoveResult:
        """``POST /agent/contacts/remove`` — by ``contact_id`` or ``handle``.

        Raises:
            BandConfigError: neither was given (nothing is sent).
        """
        if contact_id is None and handle is None:
            raise BandConfigError("remove_contact needs contact_id or handle")
        path = f"{API_PREFIX}/contacts/remove"
        body = self._body(ContactRemoveRequest(contact_id=contact_id, handle=handle))
        return self._one(
            await self._request("POST", path, body=body), ContactRemoveResult, "POST", path
        )

    async def list_contact_requests(
        self,
        *,
        page: int | None = None,
        page_size: int | None = None,
        sent_status: str | None = None,
    ) -> ContactRequests:
        """``GET /agent/contacts/requests`` — received (pending) and sent requests.

        Args:
            page: 1-based page number.
            page_size: rows per direction (max 100).
            sent_status: ``pending`` (default), ``approved``, ``rejected``,
                ``cancelled`` or ``all``.
        """
        path = f"{API_PREFIX}/contacts/requests"
        params = {"page": page, "page_size": page_size, "sent_status": sent_status}
        payload = self._envelope(
            await self._request("GET", path, params=params), "GET", path, optional=True
        )
        data = payload.get("data") or {}
        if not isinstance(data, dict):
            raise BandProtocolError(f"GET {path}: 'data' is not an object")
        meta = payload.get("metadata") or {}
        if not isinstance(meta, dict):
            raise BandProtocolError(f"GET {path}: 'metadata' is not an object")
        return ContactRequests(
            received=self._items(data.get("received"), ReceivedContactRequest, "GET", path),
            sent=self._items(data.get("sent"), SentContactRequest, "GET", path),
            meta=meta,
            extra={k: v for k, v in data.items() if k not in ("received", "sent")},
        )

    async def respond_contact_request(
        self, action: str, *, handle: str | None = None, request_id: str | None = None
    ) -> ContactResponseResult:
        """``POST /agent/contacts/requests/respond`` — ``approve``/``reject`` a received
        request (handle = requester) or ``cancel`` a sent one (handle = recipient).

        Raises:
            BandConfigError: neither ``handle`` nor ``request_id`` was given.
        """
        if handle is None and request_id is None:
            raise BandConfigError("respond_contact_request needs handle or request_id")
        path = f"{API_PREFIX}/contacts/requests/respond"
        body = self._body(
            ContactRespondRequest(action=action, handle=handle, request_id=request_id)
        )
        return self._one(
            await self._request("POST", path, body=body), ContactResponseResult, "POST", path
        )

    # ================================================= 33-37. memories

    async def list_memories(
        self,
        *,
        cursor: str | None = None,
        limit: int | None = None,
        page: int | None = None,
        page_size: int | None = None,
        subject_id: str | None = None,
        scope: str | None = None,
        memory_scope: str | None = None,
        system: str | None = None,
        type: str | None = None,
        segment: str | None = None,
        content_query: str | None = None,
        status: str | None = None,
    ) -> CursorPage[AgentMemory]:
        """``GET /agent/memories`` — see protocol.md §4.4 #33 for the filters.

        ``has_more`` is ``False`` and ``limit`` ``None`` when the platform sent
        no cursor metadata (offset pagination); the raw metadata is in ``meta``.
        """
        path = f"{API_PREFIX}/memories"
        params = {
            "cursor": cursor,
            "limit": limit,
            "page": page,
            "page_size": page_size,
            "subject_id": subject_id,
            "scope": scope,
            "memory_scope": memory_scope,
            "system": system,
            "type": type,
            "segment": segment,
            "content_query": content_query,
            "status": status,
        }
        response = await self._request("GET", path, params=params)
        return self._cursor_page(response, AgentMemory, "GET", path, strict_meta=False)

    def iter_memories(
        self,
        *,
        limit: int | None = None,
        max_pages: int | None = None,
        subject_id: str | None = None,
        scope: str | None = None,
        memory_scope: str | None = None,
        system: str | None = None,
        type: str | None = None,
        segment: str | None = None,
        content_query: str | None = None,
        status: str | None = None,
    ) -> AsyncIterator[AgentMemory]:
        """Every memory matching the filters of :meth:`list_memories`, across cursor pages."""

        async def fetch(cursor: str | None) -> CursorPage[AgentMemory]:
            return await self.list_memories(
                cursor=cursor,
                limit=limit,
                subject_id=subject_id,
                scope=scope,
                memory_scope=memory_scope,
                system=system,
                type=type,
                segment=segment,
                content_query=content_query,
                status=status,
            )

        return self._follow_cursor(fetch, max_pages)

    async def create_memory(
        self,
        content: str,
        *,
        system: str,
        type: str,
        segment: str,
        thought: str,
        scope: str | None = None,
        subject_id: str | None = None,
        tags: Sequence[str] | None = None,
        references: Sequence[str] | None = None,
    ) -> AgentMemory:
        """``POST /agent/memories`` — store a memory (rules: protocol.md §4.4 #34)."""
        metadata = None
        if tags is not None or references is not None:
            metadata = MemoryMetadataRequest(
                tags=tuple(tags) if tags is not None else None,
                references=tuple(references) if references is not None else None,
            )
        request = AgentMemoryCreateRequest(
            content=content,
            system=system,
            type=type,
            segment=segment,
            thought=thought,
            scope=scope,
            subject_id=subject_id,
            metadata=metadata,
        )
        path = f"{API_PREFIX}/memories"
        response = await self._request("POST", path, body={"memory": self._body(request)})
        return self._one(response, AgentMemory, "POST", path)

    async def get_memory(self, memory_id: str) -> AgentMemory:
        """``GET /agent/memories/{id}``."""
        path = f"{API_PREFIX}/memories/{_seg(memory_id)}"
        return self._one(await self._request("GET", path), AgentMemory, "GET", path)

    async def supersede_memory(self, memory_id: str) -> AgentMemory:
        """``POST /agent/memories/{id}/supersede`` — soft delete (source agent only)."""
        path = f"{API_PREFIX}/memories/{_seg(memory_id)}/supersede"
        return self._one(await self._request("POST", path), AgentMemory, "POST", path)

    async def archive_memory(self, memory_id: str) -> AgentMemory:
        """``POST /agent/memories/{id}/archive`` — hide (source agent only)."""
        path = f"{API_PREFIX}/memories/{_seg(memory_id)}/archive"
        return self._one(await self._request("POST", path), AgentMemory, "POST", path)

    # ============================================== 38. delegation token

    async def exchange_delegation_token(self, audience: str, message_id: str) -> DelegationToken:
        """``POST /agent/delegation/token`` — a token bound to one triggering message.

        The answer is not wrapped in ``data``. The token never appears in a repr.

        Raises:
            RateLimitError: ``rate_limited`` (after the retry budget).
            APIStatusError: ``window_expired``, ``provider_not_connected``, ...
        """
        path = f"{API_PREFIX}/delegation/token"
        body = self._body(DelegationTokenRequest(audience=audience, message_id=message_id))
        response = await self._request("POST", path, body=body)
        payload = self._json(response, "POST", path)
        return self._structure(payload, DelegationToken, "POST", path)
