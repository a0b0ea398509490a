"""`HumanClient`: a small httpx client of the human ``/api/v1/me`` API.

Used by tests, the demo and the chat tools to play the human side of a
conversation. Methods return the decoded ``data`` of each answer (plain JSON);
errors raise the :mod:`band_trio.errors` class for the status, with the
platform's code, message, request id and details. The API key never appears in
a repr or error. :meth:`HumanClient.stream` follows the local platform's live
feed of the user's rooms.
"""

from __future__ import annotations

import codecs
import json as jsonlib
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, cast

import h11
import httpx
import trio

from band_trio.errors import BandConnectionError, BandTimeoutError, error_for_status
from band_trio.local.accounts import AgentCredentials

__all__ = ["FeedItem", "HumanClient"]

FeedItem = tuple[str, str | None, dict[str, Any]]
"""One live feed event: ``(type, room_id, data)``."""

# The platform sends a keep-alive comment after 15 s of silence; a stream
# silent for four times that is taken as dead.
STREAM_READ_TIMEOUT = 60.0

_UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z"
)


def mention_item(target: str | Mapping[str, Any]) -> dict[str, Any]:
    """A mention entry: a UUID becomes ``{"id"}``, anything else ``{"handle"}``
    (a leading ``@`` is dropped); a mapping is sent as given."""
    if isinstance(target, Mapping):
        return dict(target)
    if _UUID_RE.match(target):
        return {"id": target}
    return {"handle": target.lstrip("@")}


class HumanClient:
    """Human-side client of a Band platform (``X-API-Key`` = a user key).

    Args:
        base_url: the REST origin, e.g. ``platform.rest_url``.
        api_key: a user API key.
        timeout: seconds per request.
        transport: an httpx transport (tests).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/api/v1/me",
            headers={"x-api-key": api_key},
            timeout=timeout,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"<HumanClient {self._http.base_url}>"

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> HumanClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        """One call; returns the whole decoded JSON document (None for 204).

        Raises:
            APIStatusError: (a subclass per status) for an error answer.
            BandConnectionError: the request could not be completed.
        """
        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = await self._http.request(method, path, json=json, params=query)
        except httpx.TimeoutException:
            raise BandTimeoutError(f"{method} {path} timed out") from None
        except httpx.HTTPError as exc:
            raise BandConnectionError(f"{method} {path} failed: {type(exc).__name__}") from None
        if response.status_code >= 400:
            _raise_for(response, method, path)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    async def _data(self, method: str, path: str, **kw: Any) -> Any:
        doc = await self.request(method, path, **kw)
        return None if doc is None else doc.get("data")

    async def _obj(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        return cast(dict[str, Any], await self._data(method, path, **kw))

    async def _rows(self, method: str, path: str, **kw: Any) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], await self._data(method, path, **kw))

    # ------------------------------------------------------------------ profile, agents

    async def profile(self) -> dict[str, Any]:
        """``GET /me/profile``."""
        return await self._obj("GET", "/profile")

    async def register_agent(self, name: str, description: str) -> AgentCredentials:
        """Register an agent; its key is shown once."""
        data = await self._data(
            "POST", "/agents/register", json={"agent": {"name": name, "description": description}}
        )
        agent = data["agent"]
        return AgentCredentials(
            id=agent["id"],
            api_key=data["credentials"]["api_key"],
            name=agent["name"],
            handle=agent.get("handle", ""),
        )

    async def list_agents(self) -> list[dict[str, Any]]:
        """Every agent the user owns."""
        return await self._all("/agents")

    async def _all(
        self, path: str, params: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            doc = await self.request(
                "GET", path, params={**(params or {}), "limit": 100, "cursor": cursor}
            )
            rows.extend(doc["data"])
            meta = doc.get("metadata") or {}
            cursor = meta.get("next_cursor")
            if not meta.get("has_more") or not cursor:
                return rows

    # ------------------------------------------------------------------ rooms

    async def create_room(self, title: str | None = None) -> dict[str, Any]:
        """Create a room owned by the user."""
        return await self._obj("POST", "/chats", json={"chat": {"title": title}})

    async def list_rooms(self) -> list[dict[str, Any]]:
        """Rooms the user is in."""
        return await self._all("/chats")

    async def get_room(self, room_id: str) -> dict[str, Any]:
        """One room."""
        return await self._obj("GET", f"/chats/{room_id}")

    async def add_participant(
        self, room_id: str, participant_id: str, role: str | None = None
    ) -> dict[str, Any]:
        """Add a user or agent (adding an agent pushes ``room_added`` to it)."""
        participant: dict[str, Any] = {"participant_id": participant_id}
        if role is not None:
            participant["role"] = role
        return await self._obj(
            "POST", f"/chats/{room_id}/participants", json={"participant": participant}
        )

    async def remove_participant(self, room_id: str, participant_id: str) -> dict[str, Any]:
        """Remove a participant (pushes ``room_removed`` to an agent)."""
        return await self._obj("DELETE", f"/chats/{room_id}/participants/{participant_id}")

    async def list_participants(self, room_id: str) -> list[dict[str, Any]]:
        """The room roster."""
        return await self._rows("GET", f"/chats/{room_id}/participants")

    # ------------------------------------------------------------------ messages

    async def post_message(
        self,
        room_id: str,
        content: str,
        mentions: Sequence[str | Mapping[str, Any]],
        *,
        attachment_ids: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Send a text message; ``mentions`` are handles (``alice/echo``), ids, or
        full mention objects. Returns ``{id, success, recipients}``."""
        message: dict[str, Any] = {
            "content": content,
            "mentions": [mention_item(m) for m in mentions],
        }
        if attachment_ids is not None:
            message["attachment_ids"] = list(attachment_ids)
        return await self._obj("POST", f"/chats/{room_id}/messages", json={"message": message})

    async def list_messages(
        self, room_id: str, *, message_type: str | None = None
    ) -> list[dict[str, Any]]:
        """Every message of the room, oldest first."""
        return await self._all(f"/chats/{room_id}/messages", {"message_type": message_type})

    # ------------------------------------------------------------------ live feed, control

    async def stream(self, room_id: str | None = None) -> AsyncIterator[FeedItem]:
        """Follow the live feed of the user's rooms (or of one room), as
        ``(type, room_id, data)`` tuples, until the platform ends the stream.

        The first event is ``("resync", None, {})``: list what you show then;
        every later change arrives as an event. Another ``resync`` means events
        were dropped because the reader fell behind: list again. Types:
        ``message_created`` (data: the message as :meth:`list_messages` returns
        it, events such as tool calls included), ``message_status``,
        ``agent_activity``, ``participant_added``, ``participant_removed``,
        ``room_added``, ``room_removed``, ``room_updated``.

        Close it when done (``async with contextlib.aclosing(client.stream())``)
        so the connection is released at once.

        Raises:
            APIStatusError: (a subclass per status) 404 for a room the user is not in.
            BandConnectionError: the stream could not be opened or broke.
            BandTimeoutError: nothing arrived for a minute (keep-alives included).
        """
        # Read with h11 on a plain Trio stream rather than httpx's streaming
        # iterators: those are nested async generators that a reader stopping
        # early (``break``) would leave unfinished.
        url = httpx.URL(
            str(self._http.base_url).rstrip("/") + "/stream",
            params={"room_id": room_id} if room_id is not None else None,
        )
        connect_timeout = self._http.timeout.connect or 30.0
        try:
            with trio.fail_after(connect_timeout):
                if url.scheme == "https":
                    sock: trio.abc.Stream = await trio.open_ssl_over_tcp_stream(
                        url.host, url.port or 443
                    )
                else:
                    sock = await trio.open_tcp_stream(url.host, url.port or 80)
        except trio.TooSlowError:
            raise BandTimeoutError("opening the live feed timed out") from None
        except OSError as exc:
            raise BandConnectionError(f"the live feed failed: {type(exc).__name__}") from None
        async with sock:
            conn = h11.Connection(h11.CLIENT)
            request = h11.Request(
                method="GET",
                target=url.raw_path,
                headers=[
                    (b"host", url.netloc),
                    (b"accept", b"text/event-stream"),
                    (b"x-api-key", self._http.headers["x-api-key"].encode()),
                ],
            )
            lines = _SseLines()
            try:
                await sock.send_all(
                    (conn.send(request) or b"") + (conn.send(h11.EndOfMessage()) or b"")
                )
                response: h11.Response | None = None
                error_body = b""
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        with trio.fail_after(STREAM_READ_TIMEOUT):
                            conn.receive_data(bytes(await sock.receive_some(65536)))
                    elif isinstance(event, h11.Response):
                        response = event
                    elif isinstance(event, h11.Data) and response is not None:
                        if response.status_code >= 400:
                            error_body += event.data
                        else:
                            for item in lines.feed(event.data):
                                yield item
                    elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                        break
                if response is not None and response.status_code >= 400:
                    _raise_for(
                        httpx.Response(
                            response.status_code,
                            headers=[(k.decode(), v.decode()) for k, v in response.headers],
                            content=error_body,
                        ),
                        "GET",
                        "/stream",
                    )
            except trio.TooSlowError:
                raise BandTimeoutError("the live feed went silent") from None
            except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
                raise BandConnectionError(f"the live feed failed: {type(exc).__name__}") from None

    async def control(self, room_id: str, action: str, agent_id: str | None = None) -> list[str]:
        """Send ``agent.control`` (``interrupt``, ``stop`` or ``play``) to one
        agent of the room, or to every agent in it; returns the agents told.

        Raises:
            NotFoundError: the user is not in the room, or the agent is not.
            UnprocessableEntityError: an unknown action.
        """
        body: dict[str, Any] = {"action": action}
        if agent_id is not None:
            body["agent_id"] = agent_id
        data = await self._obj("POST", f"/chats/{room_id}/control", json=body)
        return list(data["sent"])

    async def interrupt(self, room_id: str, agent_id: str | None = None) -> list[str]:
        """Interrupt the running turn of one agent of the room, or of every
        agent in it; returns the agents that had a turn running (empty: there
        was nothing to interrupt). The live feed's ``message_status`` of an
        interrupted turn carries ``"interrupted": true``.

        Raises:
            NotFoundError: the user is not in the room, or the agent is not.
        """
        body: dict[str, Any] = {"action": "interrupt"}
        if agent_id is not None:
            body["agent_id"] = agent_id
        data = await self._obj("POST", f"/chats/{room_id}/control", json=body)
        return list(data["running"])

    async def agent_status(self, room_id: str | None = None) -> list[dict[str, Any]]:
        """The user's agents (or the agents in ``room_id``): ``id``, ``name``,
        ``handle``, ``connected``, ``status`` (working or idle), ``stopped_rooms``
        and ``messages`` (delivery counts by status)."""
        return await self._rows(
            "GET", "/agents/status", params={"room_id": room_id} if room_id else None
        )

    # ------------------------------------------------------------------ peers, contacts

    async def peers(self, *, not_in_chat: str | None = None) -> list[dict[str, Any]]:
        """Agents and users the user can add to rooms."""
        return await self._rows(
            "GET", "/peers", params={"not_in_chat": not_in_chat, "page_size": 100}
        )

    async def contacts(self) -> list[dict[str, Any]]:
        """The user's contacts."""
        return await self._rows("GET", "/contacts", params={"page_size": 100})

    async def send_contact_request(self, handle: str, message: str | None = None) -> dict[str, Any]:
        """Ask ``handle`` to become a contact (pushes ``contact_request_received``
        to an agent)."""
        body: dict[str, Any] = {"recipient_handle": handle.lstrip("@")}
        if message is not None:
            body["message"] = message
        return await self._obj("POST", "/contacts/requests", json={"contact_request": body})

    async def contact_requests(self) -> list[dict[str, Any]]:
        """Pending requests received by the user."""
        return await self._rows("GET", "/contacts/requests", params={"page_size": 100})

    async def sent_contact_requests(self, status: str | None = None) -> list[dict[str, Any]]:
        """Requests the user sent (``status`` filter, default pending)."""
        return await self._rows(
            "GET", "/contacts/requests/sent", params={"status": status, "page_size": 100}
        )

    async def approve_contact_request(self, request_id: str) -> dict[str, Any]:
        """Approve a received request."""
        return await self._obj("POST", f"/contacts/requests/{request_id}/approve")

    async def reject_contact_request(self, request_id: str) -> dict[str, Any]:
        """Reject a received request."""
        return await self._obj("POST", f"/contacts/requests/{request_id}/reject")

    async def cancel_contact_request(self, request_id: str) -> dict[str, Any]:
        """Cancel a sent request."""
        return await self._obj("DELETE", f"/contacts/requests/{request_id}")

    async def remove_contact(
        self, *, handle: str | None = None, contact_id: str | None = None
    ) -> dict[str, Any]:
        """Remove a contact by handle or contact record id."""
        body = {k: v for k, v in (("handle", handle), ("contact_id", contact_id)) if v is not None}
        return await self._obj("POST", "/contacts/remove", json=body)

    async def resolve_handle(self, handle: str) -> dict[str, Any]:
        """``{type, handle, name}`` of a handle."""
        return await self._obj("POST", "/contacts/resolve", json={"handle": handle})

    # ------------------------------------------------------------------ memories

    async def memories(self, **filters: Any) -> list[dict[str, Any]]:
        """Memories visible to the user (filters as query parameters)."""
        return await self._all("/memories", filters)

    async def get_memory(self, memory_id: str) -> dict[str, Any]:
        """One memory."""
        return await self._obj("GET", f"/memories/{memory_id}")

    async def delete_memory(self, memory_id: str) -> None:
        """Hard-delete a memory."""
        await self.request("DELETE", f"/memories/{memory_id}")

    async def supersede_memory(self, memory_id: str) -> dict[str, Any]:
        """Mark a memory superseded."""
        return await self._obj("POST", f"/memories/{memory_id}/supersede")

    async def archive_memory(self, memory_id: str) -> dict[str, Any]:
        """Archive a memory."""
        return await self._obj("POST", f"/memories/{memory_id}/archive")

    async def restore_memory(self, memory_id: str) -> dict[str, Any]:
        """Restore an archived or superseded memory."""
        return await self._obj("POST", f"/memories/{memory_id}/restore")


def _raise_for(response: httpx.Response, method: str, path: str) -> None:
    error: dict[str, Any] = {}
    try:
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
    except ValueError:
        pass
    retry = response.headers.get("retry-after")
    raise error_for_status(response.status_code)(
        response.status_code,
        code=error.get("code"),
        message=error.get("message"),
        request_id=error.get("request_id"),
        details=error.get("details") if isinstance(error.get("details"), dict) else None,
        retry_after=float(retry) if retry and retry.isascii() and retry.isdigit() else None,
        method=method,
        path=path,
    )


class _SseLines:
    """Server-Sent Events bytes -> feed items (comments and other fields skipped)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""
        self._type = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[FeedItem]:
        items: list[FeedItem] = []
        *lines, self._partial = (self._partial + self._decoder.decode(chunk)).split("\n")
        for raw in lines:
            line = raw.removesuffix("\r")
            if line:
                field, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if field == "event":
                    self._type = value
                elif field == "data":
                    self._data.append(value)
                continue
            if self._data:
                doc = jsonlib.loads("\n".join(self._data))
                items.append(
                    (
                        str(doc.get("type") or self._type),
                        doc.get("room_id"),
                        dict(doc.get("data") or {}),
                    )
                )
            self._type, self._data = "", []
        return items
