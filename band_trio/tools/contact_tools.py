"""``ContactTools``: the agent-level contact operations (not tied to a room).

Given to a contact-event callback, and used by the room-bound tools for the
contact tools a model calls.
"""

from __future__ import annotations

from typing import Any

from band_trio.errors import BandToolError
from band_trio.tools.settled_writes import CannotTellError, collect, read_patiently
from band_trio.tools.unsure_posts import DEFAULT_UNSURE_POST_POLICY, UnsurePostPolicy, settle_write
from band_trio.wire.models import ReceivedContactRequest, SentContactRequest
from band_trio.wire.rest import RestClient

_REQUEST_PAGES = 50


def _handle(value: str | None) -> str:
    return (value or "").strip().lstrip("@").casefold()


__all__ = ["ContactTools"]


class ContactTools:
    """Agent-level contact operations for CALLBACK handlers (not tied to a room).

    Calls go through the REST client, so 429 and 503 answers are retried (the
    official ``ContactTools`` does not retry). Arguments left out are not sent.
    A write whose outcome is unknown is settled inside the call: the agent's
    contacts and requests are read back (docs/faults.rst says how for each).

    Args:
        rest: the REST client.
        policy: how long and how often an unknown outcome is looked up.
    """

    def __init__(
        self, rest: RestClient, *, policy: UnsurePostPolicy = DEFAULT_UNSURE_POST_POLICY
    ) -> None:
        self._rest = rest
        self._policy = policy

    async def _has_contact(self, handle: str | None, contact_id: str | None = None) -> bool:
        wanted = _handle(handle)
        found = await collect(
            self._rest.iter_contacts(),
            lambda c: c.id == contact_id or bool(wanted and _handle(c.handle) == wanted),
        )
        return bool(found)

    async def _requests(
        self, sent_status: str
    ) -> tuple[list[ReceivedContactRequest], list[SentContactRequest]]:
        """Every received (pending) request and every sent one in ``sent_status``."""
        received: list[ReceivedContactRequest] = []
        sent: list[SentContactRequest] = []
        for page in range(1, _REQUEST_PAGES + 1):
            result = await self._rest.list_contact_requests(
                page=page, page_size=100, sent_status=sent_status
            )
            received.extend(result.received)
            sent.extend(result.sent)
            if len(result.received) < 100 and len(result.sent) < 100:
                break
        return received, sent

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
        wanted = _handle(handle)

        async def requested() -> dict[str, Any] | None:
            # Stored, the request is pending; or it met the other side's
            # pending request and the two are contacts (that request's id is
            # not listed any more).
            _, sent = await self._requests("pending")
            mine = next((r for r in sent if _handle(r.to_handle) == wanted), None)
            if mine is not None:
                return {"id": mine.id, "status": "pending"}
            if await self._has_contact(handle):
                return {"id": None, "status": "approved"}
            return None

        async def add() -> dict[str, Any]:
            result = await self._rest.add_contact(handle, message=message)
            return {"id": result.id, "status": result.status}

        return await settle_write(
            add, verify=requested, policy=self._policy, what="contact request"
        )

    async def remove_contact(
        self, handle: str | None = None, contact_id: str | None = None
    ) -> dict[str, Any]:
        """Remove a contact by handle or id: ``{status}``.

        Raises:
            BandToolError: neither argument was given (no request is made).
        """
        if not handle and not contact_id:
            raise BandToolError("Either handle or contact_id must be provided")

        async def gone() -> dict[str, Any] | None:
            if await self._has_contact(handle or None, contact_id or None):
                return None
            return {"status": "removed"}

        async def remove() -> dict[str, Any]:
            result = await self._rest.remove_contact(
                handle=handle or None, contact_id=contact_id or None
            )
            return {"status": result.status}

        return await settle_write(remove, verify=gone, policy=self._policy, what="contact removal")

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

        async def respond() -> dict[str, Any]:
            result = await self._rest.respond_contact_request(
                action, handle=handle or None, request_id=request_id or None
            )
            return {"id": result.id, "status": result.status}

        # The pending request as it stands: its id and the other side's
        # handle tell what the answer changed.
        received, sent = await read_patiently(
            lambda: self._requests("pending"), policy=self._policy, what="contact requests"
        )
        wanted = _handle(handle)
        pending: list[tuple[str, str | None]] = (
            [(r.id, r.to_handle) for r in sent]
            if action == "cancel"
            else [(r.id, r.from_handle) for r in received]
        )
        target = next(
            (
                (rid, other)
                for rid, other in pending
                if (rid == request_id if request_id else _handle(other) == wanted)
            ),
            None,
        )
        if target is None:
            # Not pending: the platform refuses the answer (nothing to settle).
            return await respond()
        target_id, other = target
        status = {"approve": "approved", "reject": "rejected", "cancel": "cancelled"}[action]

        async def answered() -> dict[str, Any] | None:
            received, sent = await self._requests("all" if action == "cancel" else "pending")
            if action == "cancel":
                now = next((r.status for r in sent if r.id == target_id), None)
            elif any(r.id == target_id for r in received):
                now = "pending"
            else:
                now = "approved" if await self._has_contact(other) else "rejected"
            if now == "pending":
                return None
            if now != status:
                raise CannotTellError(f"the contact request is {now} now")
            return {"id": target_id, "status": status}

        return await settle_write(
            respond, verify=answered, policy=self._policy, what="contact request answer"
        )
