"""Contacts and contact requests (agent ``/contacts...`` and the human ``/me/contacts``).

Every change pushes the contact events (``contact_added``, ``contact_removed``,
``contact_request_received``, ``contact_request_updated``) to the agents involved on
``agent_contacts:<agent id>``.
"""

from __future__ import annotations

from band_trio.local._input import Obj, Query
from band_trio.local._paging import offset_page
from band_trio.local.model import (
    JSON,
    AgentRecord,
    ContactRecord,
    ContactRequestRecord,
    Principal,
    new_id,
    now_ts,
)
from band_trio.local.refusal import bad_request, conflict, fail, forbidden, not_found
from band_trio.local.store import PlatformState

__all__ = [
    "add_contact",
    "agent_contacts",
    "agent_requests",
    "human_contacts",
    "human_create_request",
    "human_requests",
    "human_settle",
    "remove_contact",
    "request_json",
    "resolve_handle",
    "respond",
]

SENT_STATUSES = ("pending", "approved", "rejected", "cancelled", "all")
MAX_MESSAGE = 500


def _push_contact_event(state: PlatformState, principal_id: str, event: str, payload: JSON) -> None:
    if principal_id in state.agents:
        state.queue_push(f"agent_contacts:{principal_id}", event, payload, [principal_id])


def _target(state: PlatformState, handle: str, pointer: str) -> Principal:
    handle = handle.strip().lstrip("@")
    if not handle:
        raise bad_request(f"{pointer} is required")
    principal = state.by_handle(handle)
    if principal is None:
        raise not_found(f"@{handle}")
    return principal


def _contact_between(state: PlatformState, a: str, b: str) -> ContactRecord | None:
    for contact in state.contacts.values():
        if {contact.a_id, contact.b_id} == {a, b}:
            return contact
    return None


def _pending(state: PlatformState, requester: str, recipient: str) -> ContactRequestRecord | None:
    for request in state.contact_requests.values():
        if (
            request.requester_id == requester
            and request.recipient_id == recipient
            and request.status == "pending"
        ):
            return request
    return None


def _contact_added_payload(state: PlatformState, contact: ContactRecord, viewer_id: str) -> JSON:
    other = state.principal(contact.other(viewer_id))
    payload: JSON = {
        "id": contact.id,
        "handle": other.handle if other else None,
        "name": other.name if other else None,
        "type": other.kind if other else "User",
        "inserted_at": contact.inserted_at,
        "is_external": False,
    }
    if isinstance(other, AgentRecord):
        payload["description"] = other.description
    return payload


def _establish(state: PlatformState, a: str, b: str) -> ContactRecord:
    contact = ContactRecord(id=new_id(), a_id=a, b_id=b, inserted_at=now_ts())
    state.contacts[contact.id] = contact
    for side in (a, b):
        _push_contact_event(
            state, side, "contact_added", _contact_added_payload(state, contact, side)
        )
    return contact


def _set_status(state: PlatformState, request: ContactRequestRecord, status: str) -> None:
    request.status = status
    request.responded_at = now_ts()
    for side in (request.requester_id, request.recipient_id):
        _push_contact_event(
            state, side, "contact_request_updated", {"id": request.id, "status": status}
        )
    if status == "approved":
        _establish(state, request.requester_id, request.recipient_id)


def _send_request(
    state: PlatformState, actor: Principal, target: Principal, message: str | None
) -> ContactRequestRecord:
    if target.id == actor.id:
        raise bad_request("you can't add yourself as a contact")
    if _contact_between(state, actor.id, target.id) is not None:
        raise conflict("already a contact")
    if _pending(state, actor.id, target.id) is not None:
        raise conflict("a contact request is already pending")
    inverse = _pending(state, target.id, actor.id)
    if inverse is not None:
        _set_status(state, inverse, "approved")
        return inverse
    request = ContactRequestRecord(
        id=new_id(),
        requester_id=actor.id,
        recipient_id=target.id,
        status="pending",
        message=message,
        inserted_at=now_ts(),
    )
    state.contact_requests[request.id] = request
    payload: JSON = {
        "id": request.id,
        "status": "pending",
        "inserted_at": request.inserted_at,
        "from_handle": actor.handle,
        "from_name": actor.name,
        "message": message,
    }
    _push_contact_event(state, target.id, "contact_request_received", payload)
    return request


def add_contact(state: PlatformState, actor: Principal, body: Obj) -> JSON:
    """Send a contact request by handle (``POST /contacts/add``): ``pending``, or ``approved`` when
    the other side had already asked."""
    target = _target(state, body.str_("handle") or "", "handle")
    message = body.str_("message", max_len=MAX_MESSAGE)
    request = _send_request(state, actor, target, message)
    if request.requester_id != actor.id:
        return {"id": request.id, "status": "approved"}
    return {"id": request.id, "status": "pending"}


def remove_contact(state: PlatformState, actor: Principal, body: Obj) -> JSON:
    """Remove a contact by ``contact_id`` or ``handle`` (``POST /contacts/remove``); both directions go."""
    contact_id = body.str_("contact_id")
    handle = body.str_("handle")
    contact: ContactRecord | None = None
    if contact_id:
        contact = state.contacts.get(contact_id)
        if contact is not None and actor.id not in (contact.a_id, contact.b_id):
            contact = None
    elif handle:
        target = _target(state, handle, "handle")
        contact = _contact_between(state, actor.id, target.id)
    else:
        raise bad_request("contact_id or handle is required")
    if contact is None:
        raise not_found("contact")
    del state.contacts[contact.id]
    for side in (contact.a_id, contact.b_id):
        _push_contact_event(state, side, "contact_removed", {"id": contact.id})
    return {"status": "removed"}


def _agent_contact_json(state: PlatformState, contact: ContactRecord, viewer_id: str) -> JSON:
    other = state.principal(contact.other(viewer_id))
    out: JSON = {
        "id": contact.id,
        "inserted_at": contact.inserted_at,
        "type": other.kind if other else "User",
        "handle": other.handle if other else None,
        "name": other.name if other else None,
        "is_external": False,
        "online": state.is_online(other.id) if other else False,
    }
    if isinstance(other, AgentRecord):
        out["description"] = other.description
    return out


def _contacts_of(state: PlatformState, principal_id: str) -> list[ContactRecord]:
    return [c for c in state.contacts.values() if principal_id in (c.a_id, c.b_id)]


def agent_contacts(state: PlatformState, actor: Principal, query: Query) -> tuple[list[JSON], JSON]:
    """List contacts (``GET /contacts``) with PageMetaStrict."""
    page = query.int_("page", default=1)
    size = query.int_("page_size", default=50, maximum=100)
    rows, meta = offset_page(_contacts_of(state, actor.id), page, size)
    return [_agent_contact_json(state, c, actor.id) for c in rows], meta


def _received_json(state: PlatformState, request: ContactRequestRecord) -> JSON:
    requester = state.principal(request.requester_id)
    return {
        "id": request.id,
        "inserted_at": request.inserted_at,
        "status": request.status,
        "from_handle": requester.handle if requester else None,
        "from_name": requester.name if requester else None,
        "message": request.message,
    }


def _sent_json(state: PlatformState, request: ContactRequestRecord) -> JSON:
    recipient = state.principal(request.recipient_id)
    return {
        "id": request.id,
        "inserted_at": request.inserted_at,
        "status": request.status,
        "to_handle": recipient.handle if recipient else None,
        "to_name": recipient.name if recipient else None,
        "message": request.message,
    }


def agent_requests(state: PlatformState, actor: Principal, query: Query) -> tuple[JSON, JSON]:
    """Received (pending only) and sent requests (``GET /contacts/requests``) with RequestsMeta."""
    page = query.int_("page", default=1)
    size = query.int_("page_size", default=50, maximum=100)
    sent_status = query.str_("sent_status", choices=SENT_STATUSES, default="pending")
    received = [
        r
        for r in state.contact_requests.values()
        if r.recipient_id == actor.id and r.status == "pending"
    ]
    sent = [
        r
        for r in state.contact_requests.values()
        if r.requester_id == actor.id and (sent_status == "all" or r.status == sent_status)
    ]
    received_rows, received_meta = offset_page(received, page, size)
    sent_rows, sent_meta = offset_page(sent, page, size)
    data = {
        "received": [_received_json(state, r) for r in received_rows],
        "sent": [_sent_json(state, r) for r in sent_rows],
    }
    meta = {
        "page": page,
        "page_size": size,
        "received": {
            "total": received_meta["total_count"],
            "total_pages": received_meta["total_pages"],
        },
        "sent": {"total": sent_meta["total_count"], "total_pages": sent_meta["total_pages"]},
    }
    return data, meta


def _settle_request(
    state: PlatformState, actor: Principal, request: ContactRequestRecord, action: str
) -> JSON:
    if action in ("approve", "reject"):
        if request.recipient_id != actor.id:
            raise forbidden("only the recipient can approve or reject a contact request")
    elif request.requester_id != actor.id:
        raise forbidden("only the requester can cancel a contact request")
    if request.status != "pending":
        raise conflict(f"the contact request is already {request.status}")
    status = {"approve": "approved", "reject": "rejected", "cancel": "cancelled"}[action]
    _set_status(state, request, status)
    return {"id": request.id, "status": status}


def respond(state: PlatformState, actor: Principal, body: Obj) -> JSON:
    """Approve/reject a received request or cancel a sent one (``POST /contacts/requests/respond``)."""
    action = body.str_("action")
    if action not in ("approve", "reject", "cancel"):
        raise bad_request("action must be one of: approve, reject, cancel")
    request_id = body.str_("request_id")
    handle = body.str_("handle")
    request: ContactRequestRecord | None
    if request_id:
        request = state.contact_requests.get(request_id)
        if request is None or actor.id not in (request.requester_id, request.recipient_id):
            raise not_found("contact request")
    elif handle:
        other = _target(state, handle, "handle")
        if action == "cancel":
            request = _pending(state, actor.id, other.id)
        else:
            request = _pending(state, other.id, actor.id)
        if request is None:
            raise not_found("contact request")
    else:
        raise bad_request("request_id or handle is required")
    return _settle_request(state, actor, request, action)


# ---------------------------------------------------------------------- human side


def request_json(state: PlatformState, request: ContactRequestRecord) -> JSON:
    """ContactRequest (human)."""

    def party(principal_id: str) -> JSON:
        principal = state.principal(principal_id)
        if principal is None:
            return {"id": principal_id}
        return {"id": principal.id, "handle": principal.handle, "name": principal.name}

    requester = state.principal(request.requester_id)
    recipient = state.principal(request.recipient_id)
    return {
        "id": request.id,
        "inserted_at": request.inserted_at,
        "requester_id": request.requester_id,
        "recipient_id": request.recipient_id,
        "status": request.status,
        "message": request.message,
        "requester": party(request.requester_id),
        "recipient": party(request.recipient_id),
        "requester_type": requester.kind if requester else None,
        "recipient_type": recipient.kind if recipient else None,
        "responded_at": request.responded_at,
    }


def human_contacts(state: PlatformState, actor: Principal, query: Query) -> tuple[list[JSON], JSON]:
    """``GET /me/contacts``."""
    page = query.int_("page", default=1)
    size = query.int_("page_size", default=50, maximum=100)
    rows, meta = offset_page(_contacts_of(state, actor.id), page, size)
    out = []
    for contact in rows:
        other = state.principal(contact.other(actor.id))
        out.append(
            {
                "id": contact.id,
                "contact_id": contact.other(actor.id),
                "contact_type": other.kind if other else "User",
                "inserted_at": contact.inserted_at,
                "online": state.is_online(contact.other(actor.id)),
                "status": "active",
                "source": "request",
                "user": {"id": other.id, "handle": other.handle, "name": other.name}
                if other
                else {},
            }
        )
    return out, meta


def human_requests(
    state: PlatformState, actor: Principal, query: Query, *, sent: bool
) -> tuple[list[JSON], JSON]:
    """``GET /me/contacts/requests`` (received, pending) or ``.../sent``."""
    page = query.int_("page", default=1)
    size = query.int_("page_size", default=50, maximum=100)
    if sent:
        status = query.str_("status", choices=(*SENT_STATUSES, "expired"), default="pending")
        rows = [
            r
            for r in state.contact_requests.values()
            if r.requester_id == actor.id and (status == "all" or r.status == status)
        ]
    else:
        rows = [
            r
            for r in state.contact_requests.values()
            if r.recipient_id == actor.id and r.status == "pending"
        ]
    chunk, meta = offset_page(rows, page, size)
    return [request_json(state, r) for r in chunk], meta


def human_create_request(state: PlatformState, actor: Principal, body: Obj) -> JSON:
    """``POST /me/contacts/requests``."""
    req = body.req_obj("contact_request")
    handle = req.req_str("recipient_handle")
    message = req.str_("message", max_len=MAX_MESSAGE)
    target = _target(state, handle, "recipient_handle")
    request = _send_request(state, actor, target, message)
    return request_json(state, request)


def human_settle(state: PlatformState, actor: Principal, request_id: str, action: str) -> JSON:
    """Approve, reject or cancel a request by id (human endpoints)."""
    request = state.contact_requests.get(request_id)
    if request is None or actor.id not in (request.requester_id, request.recipient_id):
        raise not_found("contact request")
    if request.status != "pending":
        raise fail(409, f"the contact request is already {request.status}")
    return _settle_request(state, actor, request, action)


def resolve_handle(state: PlatformState, body: Obj) -> JSON:
    """``POST /me/contacts/resolve``."""
    handle = body.str_("handle")
    if not handle:
        raise bad_request("handle is required")
    principal = _target(state, handle, "handle")
    return {"type": principal.kind, "handle": principal.handle, "name": principal.name}
