"""Peers and contacts: whom this agent can recruit, and its contact book."""

from __future__ import annotations

from collections.abc import AsyncIterator

from band_trio.errors import BandConfigError, BandProtocolError
from band_trio.wire.models import (
    AgentContact,
    ContactAddRequest,
    ContactAddResult,
    ContactRemoveRequest,
    ContactRemoveResult,
    ContactRequests,
    ContactRespondRequest,
    ContactResponseResult,
    Page,
    Peer,
    ReceivedContactRequest,
    SentContactRequest,
)
from band_trio.wire.rest._client_core import API_PREFIX, RestClientCore

__all__ = ["ContactEndpoints"]


class ContactEndpoints(RestClientCore):
    """``/agent/peers`` and ``/agent/contacts...``."""

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
        # Not idempotent: a repeat sends the request again or meets a 409.
        response = await self._request("POST", path, body=body, idempotent=False)
        return self._one(response, ContactAddResult, "POST", path)

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
        # Not idempotent: a repeat after a removal that landed answers 404,
        # reporting a success as a failure.
        response = await self._request("POST", path, body=body, idempotent=False)
        return self._one(response, ContactRemoveResult, "POST", path)

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
        # Not idempotent: the request is answered once; a repeat meets 404/409.
        response = await self._request("POST", path, body=body, idempotent=False)
        return self._one(response, ContactResponseResult, "POST", path)
