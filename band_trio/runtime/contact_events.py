"""Contact events: configuration and the handler the engine calls for every
event on ``agent_contacts:<agent_id>``.

Strategies:

* ``DISABLED`` — events are only used for broadcasts (when enabled).
* ``CALLBACK`` — ``on_event(event, ContactTools)`` is awaited once per distinct
  event; a failure is logged and the same event is retried if redelivered.
* ``HUB_ROOM`` — events become synthetic messages in a dedicated hub room that
  the adapter handles like any other room (with the contact tools offered).

Better than the official runtime: the hub room is
found again after a restart instead of a new one being created each start, the
first event is delivered at once (no readiness wait), and ``broadcast_changes``
really reaches every active room's next turn as ``contacts_msg``, once per event.

The sans-io parts (de-dup keys, hub and broadcast texts, the LRUs) are plain
functions and classes; :class:`ContactEventHandler` is the thin Trio shell.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs
import trio

from band_trio._logging import get_logger
from band_trio.adapter.messages import PlatformMessage
from band_trio.errors import BandConfigError, BandError, NotFoundError
from band_trio.tools.contact_tools import ContactTools
from band_trio.wire.events import (
    ContactAdded,
    ContactEvent,
    ContactRemoved,
    ContactRequestReceived,
    ContactRequestUpdated,
)
from band_trio.wire.rest import RestClient

__all__ = [
    "HUB_ROOM_TITLE",
    "HUB_SENDER_ID",
    "HUB_SENDER_NAME",
    "HUB_SENDER_TYPE",
    "HUB_SYSTEM_PROMPT",
    "ContactEventConfig",
    "ContactEventHandler",
    "ContactHandlerStatistics",
    "ContactStrategy",
    "RequestDetails",
    "RoomSink",
    "broadcast_line",
    "contact_event_key",
    "contact_event_type",
    "render_hub_message",
]

logger = get_logger("band_trio.contacts")

HUB_ROOM_TITLE = "Contact requests (managed by the agent)"
"""The title of the hub room; a restart finds the room again by it."""

HUB_SENDER_ID = "contact-events"
HUB_SENDER_TYPE = "System"
HUB_SENDER_NAME = "Contact Events"

HUB_SYSTEM_PROMPT = (
    "Contact Management Mode: this room receives your contact events (requests, "
    "updates, new and removed contacts) as messages from Contact Events. Handle each "
    "one yourself with the contact tools: approve or reject requests with "
    "band_respond_contact_request, look things up with band_list_contact_requests "
    "and band_list_contacts. Do not delegate and do not add participants here. "
    "Record each decision and its reason with band_send_event (type 'thought'); "
    "there is nobody to reply to, so end the turn with band_no_reply when done."
)

_LRU_SIZE = 1000
_REQUEST_LOOKUP_PAGE_SIZE = 100
_HUB_ID_FILE = "contacts_hub_room"


class ContactStrategy(enum.Enum):
    """How contact events are handled."""

    DISABLED = "disabled"
    CALLBACK = "callback"
    HUB_ROOM = "hub_room"


ContactCallback = Callable[[ContactEvent, "ContactTools"], Awaitable[None] | None]


def _check_uuid(_: Any, __: Any, value: str | None) -> None:
    if value is None:
        return
    try:
        uuid.UUID(str(value))
    except ValueError:
        raise BandConfigError(f"hub_task_id must be a UUID, got {value!r}") from None


@attrs.frozen(kw_only=True)
class ContactEventConfig:
    """How the agent handles contact events.

    Attributes:
        strategy: DISABLED, CALLBACK or HUB_ROOM.
        on_event: for CALLBACK, called as ``on_event(event, contact_tools)`` (sync
            or async) once per distinct event.
        hub_task_id: for HUB_ROOM, an optional task id (a UUID) the hub room is
            created for.
        broadcast_changes: tell every active room about new and removed contacts
            (as ``contacts_msg`` on its next turn).

    Raises:
        BandConfigError: CALLBACK without ``on_event``, or a ``hub_task_id`` that
            is not a UUID.
    """

    strategy: ContactStrategy = attrs.field(
        default=ContactStrategy.DISABLED, converter=ContactStrategy
    )
    on_event: ContactCallback | None = None
    hub_task_id: str | None = attrs.field(default=None, validator=_check_uuid)
    broadcast_changes: bool = False

    def __attrs_post_init__(self) -> None:
        if self.strategy is ContactStrategy.CALLBACK and self.on_event is None:
            raise BandConfigError("ContactStrategy.CALLBACK needs an on_event callback")

    @property
    def subscribes(self) -> bool:
        """True when the agent must join ``agent_contacts:<id>`` (anything to do)."""
        return self.strategy is not ContactStrategy.DISABLED or self.broadcast_changes


# ----------------------------------------------------------------------- sans-io


def contact_event_type(event: ContactEvent) -> str:
    """The wire name of a contact event (``contact_added``, ...)."""
    return str(type(event).EVENT)


def contact_event_key(event: ContactEvent) -> str:
    """The de-duplication key of an event.

    A request update includes its status, so two updates of one request with
    different statuses are both handled.
    """
    if isinstance(event, ContactRequestReceived):
        return f"request_received:{event.id}"
    if isinstance(event, ContactRequestUpdated):
        return f"request_updated:{event.id}:{event.status}"
    if isinstance(event, ContactAdded):
        return f"contact_added:{event.id}"
    return f"contact_removed:{event.id}"


@attrs.frozen
class RequestDetails:
    """Who a contact request is from or to, remembered for later updates.

    Attributes:
        direction: ``"from"`` for a received request, ``"to"`` for a sent one.
        handle: the other side's handle (without ``@``), if known.
        name: the other side's display name, if known.
        message: the request's note, if any.
    """

    direction: str
    handle: str | None
    name: str | None
    message: str | None = None


def _at(handle: str | None) -> str:
    return f"@{handle.lstrip('@')}" if handle else "no handle"


def broadcast_line(event: ContactEvent) -> str | None:
    """The line every room is told for a contact change, or None (requests are
    never broadcast)."""
    if isinstance(event, ContactAdded):
        return f"{_at(event.handle)} ({event.name or 'Unknown contact'}) is now a contact"
    if isinstance(event, ContactRemoved):
        return f"Contact {event.id} was removed"
    return None


def render_hub_message(event: ContactEvent, details: RequestDetails | None = None) -> str:
    """The text of the synthetic hub message for ``event``."""
    if isinstance(event, ContactRequestReceived):
        lines = [
            f"[Contact Request] {event.from_name or 'Someone'} ({_at(event.from_handle)}) "
            "wants to connect."
        ]
        if event.message:
            lines.append(f'Message: "{event.message}"')
        lines.append(f"Request ID: {event.id}")
        return "\n".join(lines)
    if isinstance(event, ContactRequestUpdated):
        if details is None:
            return f"[Contact Request Update] Request {event.id} status changed to: {event.status}"
        return (
            f"[Contact Request Update] Request {details.direction} "
            f"{details.name or 'Unknown'} ({_at(details.handle)}) status changed to: "
            f"{event.status}\nRequest ID: {event.id}"
        )
    if isinstance(event, ContactAdded):
        return (
            f"[Contact Added] {event.name or 'Unknown contact'} ({_at(event.handle)}) is now "
            f"a contact.\nType: {event.type}\nID: {event.id}"
        )
    return f"[Contact Removed] Contact {event.id} was removed."


class _Lru:
    """A bounded ordered map; the oldest entry goes first."""

    def __init__(self, size: int = _LRU_SIZE) -> None:
        self._size = size
        self._items: OrderedDict[str, Any] = OrderedDict()

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> Any:
        return self._items.get(key)

    def put(self, key: str, value: Any = True) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)


# ------------------------------------------------------------------ the handler


@runtime_checkable
class RoomSink(Protocol):
    """What the contact handler needs from the engine (implemented by the engine).

    Both delivery methods are synchronous bookkeeping: they queue work for a
    room and return at once.
    """

    def active_room_ids(self) -> Collection[str]:
        """The rooms currently routed (their workers are running)."""
        ...

    def inject_system_message(self, room_id: str, text: str) -> None:
        """Queue ``text`` for the room's next turn, delivered as ``contacts_msg``
        (exactly once, by the per-room commit rule)."""
        ...

    def enqueue_synthetic(self, room_id: str, message: PlatformMessage) -> None:
        """Queue a synthetic message for the room: run as a turn with no claim,
        no lifecycle marks and no working state, and not judged."""
        ...


@attrs.frozen
class ContactHandlerStatistics:
    """Counters of a :class:`ContactEventHandler`.

    Attributes:
        handled: events handled (first delivery that succeeded).
        duplicates: redeliveries ignored.
        failed: events whose handling failed (a redelivery will retry them).
        broadcasts: broadcast lines injected (one per room per event).
        hub_messages: synthetic messages queued for the hub room.
    """

    handled: int
    duplicates: int
    failed: int
    broadcasts: int
    hub_messages: int


class ContactEventHandler:
    """Handles every contact event according to a :class:`ContactEventConfig`.

    The engine builds one per agent, calls :meth:`start` once the rooms are up
    (it finds or creates the hub room under HUB_ROOM and returns its id), then
    calls :meth:`handle` for each contact event, in order.

    Args:
        config: the contact configuration.
        rest: the agent's REST client.
        sink: where synthetic hub messages and broadcast lines go.
        state_dir: the agent's state directory; the hub room id is kept there so
            a restart reuses the room. Without it the hub is looked up by title.
    """

    def __init__(
        self,
        *,
        config: ContactEventConfig,
        rest: RestClient,
        sink: RoomSink,
        state_dir: Path | str | None = None,
    ) -> None:
        self._config = config
        self._rest = rest
        self._sink = sink
        self._state_dir = Path(state_dir) if state_dir is not None else None
        self._tools = ContactTools(rest)
        self._processed = _Lru()
        self._broadcast_done = _Lru()
        self._details = _Lru()
        self._hub_room_id: str | None = None
        self._hub_prompt_sent = False
        self._hub_lock = trio.Lock()
        self._handled = 0
        self._duplicates = 0
        self._failed = 0
        self._broadcasts = 0
        self._hub_messages = 0

    @property
    def config(self) -> ContactEventConfig:
        """The configuration in force."""
        return self._config

    @property
    def contact_tools(self) -> ContactTools:
        """The agent-level contact tools given to CALLBACK handlers."""
        return self._tools

    @property
    def hub_room_id(self) -> str | None:
        """The hub room id once known (HUB_ROOM only)."""
        return self._hub_room_id

    def statistics(self) -> ContactHandlerStatistics:
        """A snapshot of the handler's counters."""
        return ContactHandlerStatistics(
            handled=self._handled,
            duplicates=self._duplicates,
            failed=self._failed,
            broadcasts=self._broadcasts,
            hub_messages=self._hub_messages,
        )

    async def start(self) -> str | None:
        """Prepare handling; under HUB_ROOM find or create the hub room.

        Returns:
            The hub room id (HUB_ROOM), else None.

        Raises:
            APIStatusError, BandConnectionError: the hub room could not be found
                or created (the engine may retry; :meth:`handle` also retries
                lazily).
        """
        if self._config.strategy is ContactStrategy.HUB_ROOM:
            return await self._ensure_hub()
        return None

    # -- hub room -------------------------------------------------------------

    def _hub_file(self) -> Path | None:
        return None if self._state_dir is None else self._state_dir / _HUB_ID_FILE

    def _remembered_hub(self) -> str | None:
        path = self._hub_file()
        if path is None:
            return None
        try:
            text = path.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return text or None

    def _remember_hub(self, room_id: str) -> None:
        path = self._hub_file()
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(room_id, encoding="utf-8")
            tmp.replace(path)
        except OSError:
            logger.warning("could not persist the contacts hub room id in %s", path)

    async def _ensure_hub(self) -> str:
        async with self._hub_lock:
            if self._hub_room_id is not None:
                return self._hub_room_id
            room_id = await self._find_hub()
            if room_id is None:
                room = await self._rest.create_chat(
                    title=HUB_ROOM_TITLE, task_id=self._config.hub_task_id
                )
                room_id = room.id
                logger.info("created contacts hub room %s", room_id)
            self._remember_hub(room_id)
            self._hub_room_id = room_id
            return room_id

    async def _find_hub(self) -> str | None:
        remembered = self._remembered_hub()
        if remembered is not None:
            try:
                await self._rest.get_chat(remembered)
            except NotFoundError:
                logger.info("remembered hub room %s is gone; looking again", remembered)
            else:
                return remembered
        rooms = self._rest.iter_chats()
        try:
            async for room in rooms:
                if room.title == HUB_ROOM_TITLE and (
                    self._config.hub_task_id is None or room.task_id == self._config.hub_task_id
                ):
                    return room.id
        finally:
            # Leaving the loop early must close the generator inside this task.
            aclose = getattr(rooms, "aclose", None)
            if aclose is not None:
                await aclose()
        return None

    # -- events ---------------------------------------------------------------

    async def handle(self, event: ContactEvent) -> bool:
        """Handle one contact event.

        Never raises on a failed callback or platform call (the failure is
        logged and counted, and a redelivery of the same event is retried);
        only cancellation propagates.

        Returns:
            True when the event was handled now; False for a duplicate or a
            failure.
        """
        if not isinstance(
            event, ContactRequestReceived | ContactRequestUpdated | ContactAdded | ContactRemoved
        ):
            self._failed += 1
            logger.warning("ignoring a non-contact event: %s", type(event).__name__)
            return False
        key = contact_event_key(event)
        if key in self._processed:
            self._duplicates += 1
            return False
        if isinstance(event, ContactRequestReceived):
            self._details.put(
                event.id,
                RequestDetails("from", event.from_handle, event.from_name, event.message),
            )
        if self._config.strategy is ContactStrategy.HUB_ROOM and self._hub_room_id is None:
            # Know the hub before broadcasting, so the hub is never told about
            # its own events; a failure here is retried by the delivery below.
            with contextlib.suppress(BandError):
                await self._ensure_hub()
        if self._config.broadcast_changes and key not in self._broadcast_done:
            self._broadcast(event)
            self._broadcast_done.put(key)
        try:
            if self._config.strategy is ContactStrategy.CALLBACK:
                await self._run_callback(event)
            elif self._config.strategy is ContactStrategy.HUB_ROOM:
                await self._deliver_to_hub(event)
        except Exception:
            self._failed += 1
            logger.exception("handling %s failed; a redelivery will retry it", key)
            return False
        self._processed.put(key)
        self._handled += 1
        return True

    def _broadcast(self, event: ContactEvent) -> None:
        line = broadcast_line(event)
        if line is None:
            return
        for room_id in list(self._sink.active_room_ids()):
            if room_id == self._hub_room_id:
                continue
            self._sink.inject_system_message(room_id, f"[Contacts]: {line}")
            self._broadcasts += 1

    async def _run_callback(self, event: ContactEvent) -> None:
        callback = self._config.on_event
        assert callback is not None  # guaranteed by ContactEventConfig
        outcome = callback(event, self._tools)
        if inspect.isawaitable(outcome):
            await outcome

    async def _details_for(self, event: ContactRequestUpdated) -> RequestDetails | None:
        cached = self._details.get(event.id)
        if isinstance(cached, RequestDetails):
            return cached
        try:
            requests = await self._rest.list_contact_requests(
                page=1, page_size=_REQUEST_LOOKUP_PAGE_SIZE, sent_status="all"
            )
        except BandError:
            return None
        for r in requests.received:
            if r.id == event.id:
                return RequestDetails("from", r.from_handle, r.from_name, r.message)
        for s in requests.sent:
            if s.id == event.id:
                return RequestDetails("to", s.to_handle, s.to_name, s.message)
        return None

    async def _deliver_to_hub(self, event: ContactEvent) -> None:
        hub = await self._ensure_hub()
        details = (
            await self._details_for(event) if isinstance(event, ContactRequestUpdated) else None
        )
        content = render_hub_message(event, details)
        kind = contact_event_type(event)
        if not self._hub_prompt_sent:
            self._sink.inject_system_message(hub, HUB_SYSTEM_PROMPT)
            self._hub_prompt_sent = True
        message = PlatformMessage(
            id=str(uuid.uuid4()),
            room_id=hub,
            content=content,
            sender_id=HUB_SENDER_ID,
            sender_type=HUB_SENDER_TYPE,
            sender_name=HUB_SENDER_NAME,
            message_type="text",
            metadata={"contact_event_type": kind, "contact_event_id": event.id},
        )
        self._sink.enqueue_synthetic(hub, message)
        self._hub_messages += 1
        # A visible trace in the hub room; best effort, never fails the event.
        try:
            await self._rest.send_event(hub, content, "task", {"contact_event_type": kind})
        except BandError as exc:
            logger.warning("could not post the hub trace event: %s", exc)
