"""The transport core of :class:`~band_trio.wire.rest.RestClient`.

Everything an endpoint method needs and nothing about any one endpoint: the
client's settings and counters, building a request (JSON bodies, query
encoding, escaped path segments), the retry loop (the policy is
:mod:`band_trio.wire.retry`), the connection limiter, the choice of pool
(band-trio's own keep-alive pool, :mod:`band_trio.wire._pool`, unless proxies
are configured), the mapping of every failure to a typed error, and the
decoding of the platform's envelopes and pages into models.

Secrets: the API key lives only in the underlying client's default headers.
It is never logged, never in a ``repr`` and never in an exception's text;
errors name the method and the *path* only. It is also stripped from any
redirect that leaves the base URL's origin.
"""

from __future__ import annotations

import json
import logging
import random
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Final, Self, TypeVar
from urllib.parse import quote
from urllib.request import getproxies

import attrs
import cattrs
import httpx
import trio

from band_trio._logging import get_logger
from band_trio._tracing import span
from band_trio._version import __version__
from band_trio.errors import (
    APIStatusError,
    BandConfigError,
    BandConnectionError,
    BandProtocolError,
    BandTimeoutError,
    OutcomeUnknownConnectionError,
    OutcomeUnknownTimeoutError,
    error_for_status,
    outcome_unknown_status_class,
)
from band_trio.wire._converter import converter
from band_trio.wire._key_guard import refuse_plaintext_key
from band_trio.wire._pool import PooledTransport
from band_trio.wire._tls import check_tls_verify, client_tls_context
from band_trio.wire.models import CursorPage, Page, PageMeta
from band_trio.wire.rest._routes import API_PREFIX, RouteCounts
from band_trio.wire.retry import (
    RetryPolicy,
    server_requested_delay,
    status_leaves_outcome_unknown,
)

__all__ = [
    "API_PREFIX",
    "MAX_PAGES",
    "NO_BODY",
    "RestClientCore",
    "RestConfig",
    "RestStatistics",
    "encode_query",
    "path_segment",
]

logger = get_logger("band_trio.wire.rest")
# httpx's own logger: a request sent past httpx's client still logs its line there.
_httpx_logger = logging.getLogger("httpx")

T = TypeVar("T")

MAX_PAGES: Final = 50
"""Offset-paginated listings stop after this many pages (the official SDK's cap)."""
MAX_POOL: Final = 64

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
    """Settings of a :class:`~band_trio.wire.rest.RestClient`; every knob has a default.

    Attributes:
        timeout: seconds one attempt of one call may take, end to end.
        activity_timeout: the timeout of :meth:`~band_trio.wire.rest.RestClient.report_activity`
            (which is never retried: a late "working" report is worthless).
        retry: the retry policy (budget 3 by default).
        max_connections: requests on the wire at once, hence connections open
            at most (1..64; 16 by default: in the benchmarks more gave no more
            throughput).
        max_keepalive_connections: idle connections kept open (defaults to
            ``max_connections``, so a busy agent does not churn connections).
        keepalive_expiry: seconds an idle pooled connection stays open.
        user_agent: the ``User-Agent`` header.
        allow_insecure_transport: send the API key over plain ``http://`` to a
            host that is not this machine (a private network you trust). Off by
            default: the client refuses such a base URL, since anyone on the
            path could read the key.
        tls_verify: check the platform's certificate and host name on
            ``https://`` (``True``, against the system's trust store), with
            your own trust (an :class:`ssl.SSLContext` that verifies; one that
            does not is refused), or not at all (``False``, which logs a
            warning whenever a client is created: anyone on the path could
            pose as the platform).
    """

    timeout: float = attrs.field(default=30.0, validator=_positive)
    activity_timeout: float = attrs.field(default=2.0, validator=_positive)
    retry: RetryPolicy = attrs.field(factory=RetryPolicy)
    max_connections: int = attrs.field(default=16, validator=_pool_size)
    max_keepalive_connections: int | None = attrs.field(default=None)
    keepalive_expiry: float = attrs.field(default=30.0, validator=_positive)
    user_agent: str = attrs.field(factory=_default_user_agent)
    allow_insecure_transport: bool = False
    tls_verify: bool | ssl.SSLContext = attrs.field(default=True)

    @tls_verify.validator
    def _check_tls_verify(self, _: attrs.Attribute[object], value: object) -> None:
        check_tls_verify(value, setting="RestConfig.tls_verify")

    @max_keepalive_connections.validator
    def _check_keepalive(self, attribute: attrs.Attribute[int | None], value: int | None) -> None:
        if value is not None and not 0 <= value <= MAX_POOL:
            raise BandConfigError(f"{attribute.name} must be within 0..{MAX_POOL}, got {value!r}")


@attrs.frozen
class RestStatistics:
    """Counters of a :class:`~band_trio.wire.rest.RestClient` (a snapshot).

    Attributes:
        calls: method calls made (one per endpoint call, however many attempts).
        attempts: HTTP requests sent (calls plus retries).
        retries: retries made after a retryable failure.
        errors: calls that ended in an exception.
        in_flight: requests on the wire now (at most ``max_connections``).
        queued: requests waiting for a free connection now.
        calls_by_route: ``(route class, outcome, calls)`` for every pair seen
            (route classes and outcomes as in ``band_trio.wire.rest._routes``:
            no ids, so a handful of pairs).
    """

    calls: int
    attempts: int
    retries: int
    errors: int
    in_flight: int = 0
    queued: int = 0
    calls_by_route: tuple[tuple[str, str, int], ...] = ()


def encode_query(params: Mapping[str, Any]) -> dict[str, str]:
    """Encode query parameters the way the platform expects.

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


def path_segment(value: str | int) -> str:
    """One path segment, escaped so an id can never change the route.

    Raises:
        BandConfigError: the id is not a string or an integer, or is empty.
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise BandConfigError(
            f"an id in a request path must be a string, got {type(value).__name__}"
        )
    text = str(value)
    if not text:
        raise BandConfigError("an id in a request path must not be empty")
    return quote(text, safe="")


NO_BODY: Final[Any] = object()
"""Marks a call without a body (``None`` is a JSON body: ``null``)."""


class RestClientCore:
    """The transport under every endpoint of :class:`~band_trio.wire.rest.RestClient`.

    Endpoint groups subclass it and call :meth:`_request`, then decode the
    answer with :meth:`_one`, :meth:`_page`, :meth:`_cursor_page` (and the
    smaller helpers); :class:`~band_trio.wire.rest.RestClient` composes them.
    See ``RestClient`` for the errors, concurrency and cancellation rules.
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
            BandConfigError: an empty key, a base URL that is not a plain
                ``http(s)://host[:port][/prefix]``, or an ``http://`` URL to
                another machine without ``config.allow_insecure_transport``.
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
        refuse_plaintext_key(
            url.scheme,
            url.host,
            allowed=config.allow_insecure_transport,
            setting="RestConfig.allow_insecure_transport",
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
        self._routes = RouteCounts()
        # At most max_connections requests enter httpx at once; the rest wait
        # here, in FIFO order (a Trio queue costs nothing while it waits).
        # Waiting here is not part of an attempt: the attempt timeout starts
        # once a connection is free. The transport opens a connection only
        # when no idle one is left, so this also bounds the connections.
        self._slots = trio.CapacityLimiter(config.max_connections)
        keepalive = config.max_keepalive_connections
        if keepalive is None:
            keepalive = config.max_connections
        tls_context = (
            client_tls_context(config.tls_verify, where=self._base_url)
            if url.scheme == "https"
            else None
        )
        proxied = any(scheme != "no" for scheme in getproxies())
        if transport is None and not proxied:
            transport = PooledTransport(
                max_keepalive=min(keepalive, config.max_connections),
                keepalive_expiry=config.keepalive_expiry,
                ssl_context=tls_context,
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
            verify=tls_context if tls_context is not None else True,
            follow_redirects=True,
            event_hooks={"request": [self._guard_key_on_redirect]},
        )
        # Requests go straight to this transport (see _send), unless proxies
        # are configured: then httpx picks the transport per URL.
        self._direct: httpx.AsyncBaseTransport | None = None if proxied else transport
        # Every path is appended to this (httpx's base URL ends with "/").
        self._url_prefix = str(self._client.base_url).rstrip("/")
        self._default_timeout = httpx.Timeout(config.timeout).as_dict()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._base_url}>"

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
            calls_by_route=self._routes.snapshot(),
        )

    async def aclose(self) -> None:
        """Close every pooled connection. The client cannot be used afterwards."""
        await self._client.aclose()

    async def __aenter__(self) -> Self:
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
        body: Any = NO_BODY,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        attempt_timeout: float | None = None,
        retry: bool = True,
    ) -> httpx.Response:
        """Send one call (with retries) and return its 2xx response, body read.

        With tracing on, the call is one span (``band.rest``) with the method,
        the path (ids only: the key travels in a header, never in a path) and
        the final status.
        """
        self._calls += 1
        with span(
            f"band.rest {method}", {"http.request.method": method, "url.path": path}
        ) as current:
            try:
                response = await self._request_with_retries(
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
            except Exception as exc:
                self._errors += 1
                self._routes.count(path, exc)
                raise
            self._routes.count(path, None)
            if current is not None:
                current.set_attribute("http.response.status_code", response.status_code)
            return response

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
            # A write that does not say otherwise is never repeated blindly.
            idempotent = method in ("GET", "HEAD", "OPTIONS")
        policy = self._config.retry if retry else attrs.evolve(self._config.retry, max_retries=0)
        per_attempt = attempt_timeout if attempt_timeout is not None else self._config.timeout
        send_headers = dict(headers or {})
        if body is not NO_BODY:
            try:
                text = json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise BandConfigError(
                    f"{method} {path}: the request body is not valid JSON ({exc})"
                ) from exc
            content = text.encode()
            send_headers["Content-Type"] = "application/json"
        query = encode_query(params) if params else None
        request = self._build_request(method, path, query, content, send_headers, per_attempt)
        # Only a path under the base URL skips httpx's client (an absolute
        # URL may need what the client does for it, such as its userinfo).
        direct = path[:1] == "/" and path[:2] != "//"
        attempt = 0
        while True:
            self._attempts += 1
            failure: httpx.HTTPError | None = None
            response: httpx.Response | None = None
            async with self._slots:
                with trio.move_on_after(per_attempt) as scope:
                    try:
                        response = await self._send(request, direct=direct)
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
                    # A write that may have reached the platform is not sent
                    # again: the caller learns its outcome is unknown.
                    unknown = (
                        not idempotent
                        and isinstance(failure, httpx.TransportError)
                        and not isinstance(failure, (*_NOT_SENT, *_NEVER_TRANSIENT))
                    )
                    error = self._transport_error(failure, method, path, outcome_unknown=unknown)
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
                    unknown = not idempotent and status_leaves_outcome_unknown(
                        response.status_code, response.headers, now=time.time()
                    )
                    raise self._status_error(response, method, path, outcome_unknown=unknown)
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

    def _build_request(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        content: bytes | None,
        headers: Mapping[str, str],
        per_attempt: float,
    ) -> httpx.Request:
        """The request ``httpx.AsyncClient.build_request`` would build, for less.

        httpx merges a relative path into its base URL by parsing the path,
        then the merged URL again; one parse of the whole URL gives the same
        URL. Cookies the platform set earlier, and a path that is not
        relative to the base URL, are left to httpx itself.
        """
        client = self._client
        timeout = (
            self._default_timeout
            if per_attempt == self._config.timeout
            else httpx.Timeout(per_attempt).as_dict()
        )
        if client.cookies or path[:1] != "/" or path[:2] == "//":
            return client.build_request(
                method,
                path,
                params=query,
                content=content,
                headers=headers,
                extensions={"timeout": timeout},
            )
        if headers:
            merged = httpx.Headers(client.headers)
            merged.update(headers)
        else:
            merged = client.headers
        return httpx.Request(
            method,
            httpx.URL(self._url_prefix + path),
            params=query,
            content=content,
            headers=merged,
            extensions={"timeout": timeout},
        )

    async def _send(self, request: httpx.Request, *, direct: bool) -> httpx.Response:
        """Send ``request`` and read the response, as ``httpx.AsyncClient.send`` does.

        The request goes straight to the transport: httpx's client adds an
        authentication flow, a redirect loop and hooks around every request,
        a large share of a request's cost in an agent that drains thousands
        of rooms. The request hooks (the key guard) run here as httpx runs
        them; a redirect is handed back to httpx's client, which follows it.

        Raises:
            httpx.HTTPError: as from ``httpx.AsyncClient.send``.
        """
        transport = self._direct
        client = self._client
        if transport is None or not direct:
            return await client.send(request)
        for hook in client.event_hooks["request"]:
            await hook(request)  # the key guard, as httpx runs it on every request
        try:
            response = await transport.handle_async_request(request)
        except httpx.RequestError as exc:
            exc.request = request
            raise
        response.request = request
        try:
            if "set-cookie" in response.headers:
                client.cookies.extract_cookies(response)
            if _httpx_logger.isEnabledFor(logging.INFO):
                _httpx_logger.info(
                    'HTTP Request: %s %s "%s %d %s"',
                    request.method,
                    request.url,
                    response.http_version,
                    response.status_code,
                    response.reason_phrase,
                )
            for response_hook in client.event_hooks["response"]:
                await response_hook(response)
            if response.has_redirect_location:
                follow = client._build_redirect_request(request, response)
                await response.aread()
                return await client.send(follow)
            await response.aread()
        except BaseException:
            await response.aclose()
            raise
        return response

    def _transport_error(
        self, exc: httpx.HTTPError, method: str, path: str, *, outcome_unknown: bool = False
    ) -> Exception:
        detail = self._redact(str(exc)) or type(exc).__name__
        text = f"{method} {path}: {type(exc).__name__}: {detail}"
        if outcome_unknown:
            text += " (the platform may have applied it)"
            if isinstance(exc, httpx.TimeoutException):
                return OutcomeUnknownTimeoutError(text, method=method, path=path)
            return OutcomeUnknownConnectionError(text, method=method, path=path)
        if isinstance(exc, httpx.TimeoutException):
            return BandTimeoutError(text)
        if isinstance(exc, httpx.UnsupportedProtocol):
            return BandConfigError(text)
        if isinstance(exc, httpx.DecodingError | httpx.TooManyRedirects):
            return BandProtocolError(text)
        return BandConnectionError(text)

    def _status_error(
        self, response: httpx.Response, method: str, path: str, *, outcome_unknown: bool = False
    ) -> APIStatusError:
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
        status = response.status_code
        cls = outcome_unknown_status_class(status) if outcome_unknown else error_for_status(status)
        return cls(
            status,
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
        self,
        fetch: Callable[[int], Awaitable[Page[T]]],
        key: Callable[[T], str],
        *,
        max_pages: int = MAX_PAGES,
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
            if not page.items or total is None or page_no >= total or page_no >= max_pages:
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
