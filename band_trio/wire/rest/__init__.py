"""``RestClient``: the Band agent REST API (``/api/v1/agent``, all 38 endpoints) on Trio.

One :class:`httpx.AsyncClient` (on Trio; its transport is band-trio's own
keep-alive pool, :mod:`band_trio.wire._pool`) admitting at most
``max_connections`` requests at once, one typed async method per endpoint,
pagination helpers, a typed error for every failure, and retries that never repeat a write the
platform may already have done (see :mod:`band_trio.wire.retry`).

The transport lives in ``_client_core`` and the endpoints, grouped by subject,
in one module each (``_identity_endpoints``, ``_room_endpoints``,
``_message_endpoints``, ``_file_endpoints``, ``_task_endpoints``,
``_contact_endpoints``, ``_memory_endpoints``); :class:`RestClient` composes
them and is the only client class.

Secrets: the API key lives only in the underlying client's default headers.
It is never logged, never in a ``repr`` and never in an exception's text;
errors name the method and the *path* only. It is also stripped from any
redirect that leaves the base URL's origin.
"""

from __future__ import annotations

from band_trio.wire.rest._client_core import MAX_PAGES, RestConfig, RestStatistics, encode_query
from band_trio.wire.rest._contact_endpoints import ContactEndpoints
from band_trio.wire.rest._file_endpoints import FileEndpoints
from band_trio.wire.rest._identity_endpoints import IdentityEndpoints
from band_trio.wire.rest._memory_endpoints import MemoryEndpoints
from band_trio.wire.rest._message_endpoints import MessageEndpoints
from band_trio.wire.rest._room_endpoints import RoomEndpoints
from band_trio.wire.rest._task_endpoints import TaskEndpoints

__all__ = ["MAX_PAGES", "RestClient", "RestConfig", "RestStatistics", "encode_query"]


class RestClient(
    IdentityEndpoints,
    RoomEndpoints,
    MessageEndpoints,
    FileEndpoints,
    TaskEndpoints,
    ContactEndpoints,
    MemoryEndpoints,
):
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
