"""The WebSocket upgrade request of the link, and what its refusal means.

Sans-io: the URL (the agent's id and the protocol version in the query, never
the key) and the host/port/resource trio-websocket connects to; an HTTP refusal
of the upgrade becomes an :class:`~band_trio.errors.UpgradeRefusedError` that
says whether the backoff policy may try again.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import attrs
import trio_websocket

from band_trio.errors import BandConfigError, UpgradeRefusedError
from band_trio.wire.backoff import first_connect_status_is_terminal, reconnect_status_is_terminal

__all__ = ["UpgradeTarget", "build_ws_url", "upgrade_refusal", "upgrade_target"]

_STRIPPED_QUERY_KEYS: Final = frozenset({"vsn", "api_key", "token", "agent_id", "on_conflict"})


@attrs.frozen
class UpgradeTarget:
    """Where trio-websocket connects: host, port, resource (path and query), TLS."""

    host: str
    port: int
    resource: str
    use_ssl: bool


def build_ws_url(ws_url: str, agent_id: str, *, on_conflict_reject: bool = False) -> str:
    """The upgrade URL: ``ws_url`` with the Phoenix v2 query of the agent.

    Any ``vsn``, ``api_key``, ``token``, ``agent_id`` and ``on_conflict`` already
    in ``ws_url`` are removed, and so are a ``user:password@`` and a fragment;
    then ``vsn=2.0.0``, ``agent_id`` (URL-encoded) and, when asked,
    ``on_conflict=reject`` are appended. ``http``/``https`` schemes become
    ``ws``/``wss``.

    Raises:
        BandConfigError: not a ws/wss/http/https URL with a host.
    """
    parts = urlsplit(ws_url)
    scheme = {"ws": "ws", "wss": "wss", "http": "ws", "https": "wss"}.get(parts.scheme.lower())
    if scheme is None or not parts.hostname:
        raise BandConfigError("ws_url must be a ws:// or wss:// URL with a host")
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if k not in _STRIPPED_QUERY_KEYS
    ]
    # Userinfo in the URL would be a credential in plain sight: never kept.
    netloc = parts.netloc.rpartition("@")[2]
    query.append(("vsn", "2.0.0"))
    query.append(("agent_id", agent_id))
    if on_conflict_reject:
        query.append(("on_conflict", "reject"))
    return urlunsplit((scheme, netloc, parts.path or "/", urlencode(query, quote_via=quote), ""))


def upgrade_target(url: str) -> UpgradeTarget:
    """Where to connect for an upgrade URL made by :func:`build_ws_url`.

    Raises:
        BandConfigError: the URL's port is not a number in range.
    """
    parts = urlsplit(url)
    use_ssl = parts.scheme == "wss"
    try:
        port = parts.port or (443 if use_ssl else 80)
    except ValueError:
        raise BandConfigError("ws_url has an invalid port") from None
    resource = parts.path or "/"
    if parts.query:
        resource += "?" + parts.query
    return UpgradeTarget(parts.hostname or "", port, resource, use_ssl)


def _retry_after(headers: tuple[tuple[bytes, bytes], ...], body: Mapping[str, Any]) -> float | None:
    value = body.get("retry_after")
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    for name, raw in headers:
        if name.lower() != b"retry-after":
            continue
        text = raw.decode("latin-1").strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(text).timestamp()
            except (TypeError, ValueError, IndexError):
                return None
            return max(0.0, when - time.time())
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None


def upgrade_refusal(exc: trio_websocket.ConnectionRejected, *, first: bool) -> UpgradeRefusedError:
    """The typed error of a refused upgrade, retryable unless its status is terminal.

    Which statuses are terminal differs between the first connect and later
    reconnects (``first``); the wait the platform asks for comes from the
    body's ``retry_after`` or the ``Retry-After`` header.
    """
    body: Mapping[str, Any] = {}
    try:
        parsed = json.loads(exc.body or b"")
        if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            body = parsed["error"]
    except ValueError:
        pass
    status = exc.status_code
    code = body.get("code") if isinstance(body.get("code"), str) else None
    message = body.get("message") if isinstance(body.get("message"), str) else None
    terminal = (
        first_connect_status_is_terminal(status) if first else reconnect_status_is_terminal(status)
    )
    return UpgradeRefusedError(
        status,
        code=code,
        message=message,
        retry_after=_retry_after(exc.headers, body),
        retryable=not terminal,
    )
