"""The agent's own identity: its profile and delegated tokens."""

from __future__ import annotations

from band_trio.wire.models import AgentMe, DelegationToken, DelegationTokenRequest
from band_trio.wire.rest._client_core import API_PREFIX, RestClientCore

__all__ = ["IdentityEndpoints"]


class IdentityEndpoints(RestClientCore):
    """``GET /agent/me`` and ``POST /agent/delegation/token``."""

    async def get_me(self) -> AgentMe:
        """``GET /agent/me`` — the calling agent's profile (also checks the key)."""
        path = f"{API_PREFIX}/me"
        return self._one(await self._request("GET", path), AgentMe, "GET", path)

    async def exchange_delegation_token(self, audience: str, message_id: str) -> DelegationToken:
        """``POST /agent/delegation/token`` — a token bound to one triggering message.

        The answer is not wrapped in ``data``. The token never appears in a repr.

        Raises:
            RateLimitError: ``rate_limited`` (after the retry budget).
            APIStatusError: ``window_expired``, ``provider_not_connected``, ...
        """
        path = f"{API_PREFIX}/delegation/token"
        body = self._body(DelegationTokenRequest(audience=audience, message_id=message_id))
        # Not idempotent: every exchange mints a token and spends the rate limit.
        response = await self._request("POST", path, body=body, idempotent=False)
        payload = self._json(response, "POST", path)
        return self._structure(payload, DelegationToken, "POST", path)
