"""Delegation token exchange (``POST /delegation/token``), simplified and deterministic.

The real platform exchanges a token with an MCP connector on behalf of the
human who triggered a message. The local platform keeps the documented checks
that need no external system, in the documented order, and answers with the
documented codes:

1. per-agent rate limit: more than :data:`RATE_LIMIT` exchanges in
   :data:`RATE_WINDOW` seconds -> 429 ``rate_limited`` (checked first);
2. the message exists in a room of the agent and was delivered to it -> else 404;
3. the message carries a delegation envelope (it crossed an ownership boundary)
   -> else 403 ``delegation_not_available``;
4. within :data:`PROCESSING_WINDOW` seconds of ``minted_at`` -> else 403
   ``window_expired`` (does not consume budget);
5. the originator is still a participant of the room -> else 403
   ``originator_not_participant``;
6. at most :data:`PER_MESSAGE_CAP` exchanges per message -> else 429 ``rate_limited``.

Simplified: there are no connectors, so consent and ``provider_not_connected``
are never checked; the access token is random and opaque and is not accepted
anywhere.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from band_trio.local._input import Obj
from band_trio.local.model import JSON, AgentRecord
from band_trio.local.refusal import fail, invalid, not_found
from band_trio.local.store import PlatformState

__all__ = ["PER_MESSAGE_CAP", "PROCESSING_WINDOW", "RATE_LIMIT", "RATE_WINDOW", "exchange"]

RATE_LIMIT = 30
RATE_WINDOW = 60.0
PER_MESSAGE_CAP = 5
PROCESSING_WINDOW = 15 * 60.0
TOKEN_LIFETIME = timedelta(minutes=10)


def _parse_ts(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def exchange(state: PlatformState, agent: AgentRecord, body: Obj) -> JSON:
    """Exchange a delegated token for ``body.message_id`` and ``body.audience``."""
    audience = body.req_str("audience", max_len=200)
    message_id = body.req_str("message_id", max_len=200)
    if not audience.strip():
        raise invalid(body.at("audience"), "can't be blank")
    now = state.clock()
    log = [t for t in state.delegation_log.get(agent.id, []) if now - t < RATE_WINDOW]
    state.delegation_log[agent.id] = log
    if len(log) >= RATE_LIMIT:
        raise fail(
            429,
            "delegation exchange rate limit reached",
            code="rate_limited",
            retry_after=RATE_WINDOW,
        )
    message = None
    room = None
    for candidate in state.rooms_of(agent.id):
        if message_id in candidate.by_id:
            room, message = candidate, candidate.by_id[message_id]
            break
    if message is None or room is None or agent.id not in message.deliveries:
        raise not_found("message")
    envelope = message.metadata.get("delegation")
    if not isinstance(envelope, dict) or "originator" not in envelope:
        raise fail(403, "this message carries no delegation", code="delegation_not_available")
    minted = _parse_ts(envelope["minted_at"])
    if (datetime.now(UTC) - minted).total_seconds() > PROCESSING_WINDOW:
        raise fail(403, "the delegation processing window has expired", code="window_expired")
    log.append(now)
    originator = envelope["originator"]
    if originator["uuid"] not in room.members:
        raise fail(
            403, "the originator is no longer a participant", code="originator_not_participant"
        )
    used = state.delegation_per_message.get(message.id, 0)
    if used >= PER_MESSAGE_CAP:
        raise fail(429, "per-message delegation cap reached", code="rate_limited")
    state.delegation_per_message[message.id] = used + 1
    expires = datetime.now(UTC) + TOKEN_LIFETIME
    return {
        "access_token": f"bdt_{secrets.token_urlsafe(32)}",
        "token_type": "bearer",
        "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "obo": {
            "agent_uuid": agent.id,
            "audience": audience,
            "originator_uuid": originator["uuid"],
            "originator_handle": originator.get("handle"),
        },
    }
