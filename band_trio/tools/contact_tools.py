"""``ContactTools``: the agent-level contact operations (not tied to a room).

Given to a contact-event callback, and used by the room-bound tools for the
contact tools a model calls.
"""

from __future__ import annotations

from typing import Any

from band_trio.errors import BandToolError
from band_trio.wire.rest import RestClient

__all__ = ["ContactTools"]


class ContactTools:
    """Agent-level contact operations for CALLBACK handlers (not tied to a room).

    Calls go through the REST client, so 429 and 503 answers are retried (the
    official ``ContactTools`` does not retry). Arguments left out are not sent.
    """

    def __init__(self, rest: RestClient) -> None:
        self._rest = rest

    async def list_contacts(self, page: int = 1, page_size: int = 50) -> dict[str, Any]:
        """``{"contacts": [{id, handle, name, type}], "metadata": {...}}``."""
        result = await self._rest.list_contacts(page=page, page_size=page_size)
        return {
            "contacts": [
                {"id": c.id, "handle": c.handle, "name": c.name, "type": c.type}
                for c in result.items
            ],
            "metadata": {
                "page": result.meta.page,
                "page_size": result.meta.page_size,
                "total_count": result.meta.total_count,
                "total_pages": result.meta.total_pages,
            },
        }

    async def add_contact(self, handle: str, message: str | None = None) -> dict[str, Any]:
        """Send a contact request: ``{id, status}`` (pending or approved)."""
        result = await self._rest.add_contact(handle, message=message)
        return {"id": result.id, "status": result.status}

    async def remove_contact(
        self, handle: str | None = None, contact_id: str | None = None
    ) -> dict[str, Any]:
        """Remove a contact by handle or id: ``{status}``.

        Raises:
            BandToolError: neither argument was given (no request is made).
        """
        if not handle and not contact_id:
            raise BandToolError("Either handle or contact_id must be provided")
        result = await self._rest.remove_contact(
            handle=handle or None, contact_id=contact_id or None
        )
        return {"status": result.status}

    async def list_contact_requests(
        self, page: int = 1, page_size: int = 50, sent_status: str = "pending"
    ) -> dict[str, Any]:
        """``{"received": [...], "sent": [...], "metadata": {...}}``."""
        result = await self._rest.list_contact_requests(
            page=page, page_size=page_size, sent_status=sent_status
        )
        return {
            "received": [
                {
                    "id": r.id,
                    "from_handle": r.from_handle,
                    "from_name": r.from_name,
                    "message": r.message,
                    "status": r.status,
                    "inserted_at": r.inserted_at,
                }
                for r in result.received
            ],
            "sent": [
                {
                    "id": s.id,
                    "to_handle": s.to_handle,
                    "to_name": s.to_name,
                    "message": s.message,
                    "status": s.status,
                    "inserted_at": s.inserted_at,
                }
                for s in result.sent
            ],
            "metadata": dict(result.meta),
        }

    async def respond_contact_request(
        self, action: str, handle: str | None = None, request_id: str | None = None
    ) -> dict[str, Any]:
        """Approve, reject or cancel a request: ``{id, status}``.

        Raises:
            BandToolError: an unknown action, or neither target was given (no
                request is made).
        """
        if action not in ("approve", "reject", "cancel"):
            raise BandToolError(f"action must be approve, reject or cancel; got {action!r}")
        if not handle and not request_id:
            raise BandToolError("Either handle or request_id must be provided")
        result = await self._rest.respond_contact_request(
            action, handle=handle or None, request_id=request_id or None
        )
        return {"id": result.id, "status": result.status}
