"""WebSocket application events as attrs frozen classes.

Reference: docs/reference/protocol.rst (protocol, "Events and payloads").

Every push the platform sends on a channel is decoded into exactly one of the
classes below by :func:`decode_event`, which validates it the way band-sdk-core
6.1.1 does (protocol, "Validation rules common to all events", plus the
stricter rules of "Ambiguities" 9):

* the payload must be a JSON object;
* ``id``-like fields are non-empty strings; string fields reject numbers and
  booleans; nullable fields accept ``null``; some keys must be *present* even
  though their value may be ``null``; some optional keys reject an explicit
  ``null`` (omit them instead);
* unknown keys are kept, in each class's ``extra`` mapping;
* events that arrive on a per-room topic (``chat_room:<id>``,
  ``room_participants:<id>``) carry the ``room_id`` taken from the topic.

Anything wrong becomes an :class:`~band_trio.errors.InvalidEventError` and
nothing else: the link counts and logs it and keeps running. Error reasons name
fields and types, never payload values (which may hold secrets).

The two unions, :data:`PlatformEvent` and :data:`ContactEvent`, are registered on
the shared converter as cattrs tagged unions (the tag is the event name), so
``band_trio.wire.structure(data, PlatformEvent)`` works for any mapping that carries
the event name under :data:`EVENT_TAG`. Each class's cattrs functions are
generated once, on its first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final, Literal, TypeAlias, TypeVar, Union

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.strategies import configure_tagged_union

from band_trio._generated_source import forget_generated_source
from band_trio.errors import InvalidEventError
from band_trio.wire._converter import converter

__all__ = [
    "EVENT_TAG",
    "PER_ROOM_TOPIC_KINDS",
    "AgentControl",
    "ContactAdded",
    "ContactEvent",
    "ContactRemoved",
    "ContactRequestReceived",
    "ContactRequestUpdated",
    "Mention",
    "MessageCreated",
    "MessageMetadata",
    "MessageUpdated",
    "ParticipantAdded",
    "ParticipantRemoved",
    "PlatformEvent",
    "RoomAdded",
    "RoomDeleted",
    "RoomEventCreated",
    "RoomRemoved",
    "RoomUpdated",
    "Supersede",
    "TaskCreated",
    "TaskUpdated",
    "decode_event",
    "encode_event",
    "event_class",
    "topic_room_id",
]

EVENT_TAG: Final = "__band_event__"
"""Key under which the tagged unions expect the event name (never a real payload key)."""

PER_ROOM_TOPIC_KINDS: Final = frozenset({"chat_room", "room_participants"})
"""Topic kinds whose id is a room id (protocol, "Topics")."""

T = TypeVar("T")


class _Invalid(ValueError):
    """A rule of (protocol, "Events and payloads") was broken; the message names fields, never values."""


def _non_empty(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value:
        raise _Invalid(f"{attribute.name} must be a non-empty string")


def _non_empty_field() -> Any:
    return attrs.field(validator=_non_empty)


def _extra_field() -> Any:
    return attrs.field(factory=dict, repr=False)


# --------------------------------------------------------------------------- messages


@attrs.frozen(kw_only=True)
class Mention:
    """One entry of ``metadata.mentions`` (``id`` required; the rest optional)."""

    id: str = _non_empty_field()
    handle: str | None = None
    name: str | None = None
    username: str | None = None
    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class MessageMetadata:
    """A message's ``metadata``, normalised so ``mentions`` is always a tuple.

    ``status`` and ``delivery_status`` are passed through unchecked, as
    band-sdk-core does (protocol, "chat_room:<room_id>"): ``delivery_status`` is normally an
    object keyed by recipient agent id, but a consumer must check that before
    reading it. ``delegation`` and anything else land in ``extra``.
    """

    mentions: tuple[Mention, ...] = ()
    status: Any = None
    delivery_status: Any = None
    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class _MessageEvent:
    EVENT: ClassVar[str]
    PER_ROOM: ClassVar[bool] = True

    room_id: str = _non_empty_field()
    id: str = _non_empty_field()
    content: str
    message_type: str
    sender_id: str = _non_empty_field()
    sender_type: str
    sender_name: str | None = None
    chat_room_id: Any = None
    thread_id: Any = None
    inserted_at: str
    updated_at: str
    metadata: MessageMetadata = attrs.field(factory=MessageMetadata)
    # Items are not validated (protocol, "chat_room:<room_id>"); the REST Attachment shape in practice.
    attachments: tuple[Any, ...] = ()
    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class MessageCreated(_MessageEvent):
    """``message_created`` on ``chat_room:<room_id>``: a new message in a room."""

    EVENT: ClassVar[str] = "message_created"


@attrs.frozen(kw_only=True)
class MessageUpdated(_MessageEvent):
    """``message_updated`` on ``chat_room:<room_id>`` (same shape as ``message_created``).

    A frame may carry only the recipient whose delivery changed: merge, do not
    replace.
    """

    EVENT: ClassVar[str] = "message_updated"


@attrs.frozen(kw_only=True)
class RoomEventCreated:
    """``event_created``: no required fields; everything is kept in ``extra``.

    ``room_id`` is set when it arrived on a per-room topic, else ``None``.
    """

    EVENT: ClassVar[str] = "event_created"
    PER_ROOM: ClassVar[bool] = False

    room_id: str | None = None
    extra: Mapping[str, Any] = _extra_field()


# --------------------------------------------------------------------------- rooms


@attrs.frozen(kw_only=True)
class _RoomEvent:
    EVENT: ClassVar[str]
    PER_ROOM: ClassVar[bool] = False

    id: str = _non_empty_field()
    inserted_at: str
    updated_at: str
    title: str | None = None
    task_id: str | None = None
    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class RoomAdded(_RoomEvent):
    """``room_added`` (on ``agent_rooms:`` or ``user_rooms:``): ``id`` is the room."""

    EVENT: ClassVar[str] = "room_added"


@attrs.frozen(kw_only=True)
class RoomRemoved(_RoomEvent):
    """``room_removed`` (on ``agent_rooms:`` or ``user_rooms:``): ``id`` is the room."""

    EVENT: ClassVar[str] = "room_removed"


@attrs.frozen(kw_only=True)
class RoomUpdated:
    """``room_updated`` (human ``user_rooms:`` topic): a full room row, kept in ``extra``."""

    EVENT: ClassVar[str] = "room_updated"
    PER_ROOM: ClassVar[bool] = False

    id: str = _non_empty_field()
    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class RoomDeleted:
    """``room_deleted`` on ``room_participants:<room_id>``; treat like ``room_removed``."""

    EVENT: ClassVar[str] = "room_deleted"
    PER_ROOM: ClassVar[bool] = True

    room_id: str = _non_empty_field()
    id: str = _non_empty_field()
    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class ParticipantAdded:
    """``participant_added`` on ``room_participants:<room_id>``.

    ``handle`` may be absent but never ``null``. ``is_remote`` and its legacy
    alias ``is_external`` mirror each other when only one was sent.
    """

    EVENT: ClassVar[str] = "participant_added"
    PER_ROOM: ClassVar[bool] = True
    NULL_REJECTED: ClassVar[frozenset[str]] = frozenset({"handle"})

    room_id: str = _non_empty_field()
    id: str = _non_empty_field()
    name: str
    type: str
    handle: str | None = None
    description: str | None = None
    is_remote: bool | None = None
    is_external: bool | None = None
    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class ParticipantRemoved:
    """``participant_removed`` on ``room_participants:<room_id>``."""

    EVENT: ClassVar[str] = "participant_removed"
    PER_ROOM: ClassVar[bool] = True

    room_id: str = _non_empty_field()
    id: str = _non_empty_field()
    name: str
    type: str
    extra: Mapping[str, Any] = _extra_field()


# --------------------------------------------------------------------------- contacts


@attrs.frozen(kw_only=True)
class ContactRequestReceived:
    """``contact_request_received`` on ``agent_contacts:<agent_id>``."""

    EVENT: ClassVar[str] = "contact_request_received"
    PER_ROOM: ClassVar[bool] = False

    id: str = _non_empty_field()
    status: str
    inserted_at: str
    from_handle: str | None = None
    from_name: str | None = None
    message: str | None = None
    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class ContactRequestUpdated:
    """``contact_request_updated`` on ``agent_contacts:<agent_id>``."""

    EVENT: ClassVar[str] = "contact_request_updated"
    PER_ROOM: ClassVar[bool] = False

    id: str = _non_empty_field()
    status: str
    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class ContactAdded:
    """``contact_added`` on ``agent_contacts:<agent_id>``.

    ``handle`` and ``name`` keys are required (values may be ``null``);
    ``description`` may be absent but never ``null``; ``is_remote`` and
    ``is_external`` mirror each other.
    """

    EVENT: ClassVar[str] = "contact_added"
    PER_ROOM: ClassVar[bool] = False
    NULL_REJECTED: ClassVar[frozenset[str]] = frozenset({"description"})

    id: str = _non_empty_field()
    handle: str | None
    name: str | None
    type: str
    inserted_at: str
    description: str | None = None
    is_remote: bool | None = None
    is_external: bool | None = None
    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class ContactRemoved:
    """``contact_removed`` on ``agent_contacts:<agent_id>``."""

    EVENT: ClassVar[str] = "contact_removed"
    PER_ROOM: ClassVar[bool] = False

    id: str = _non_empty_field()
    extra: Mapping[str, Any] = _extra_field()


# --------------------------------------------------------------------------- control


@attrs.frozen(kw_only=True)
class Supersede:
    """``supersede`` on ``agent_control:<agent_id>``: a newer connection took over.

    ``retryable`` is normalised to ``False`` unless it is a boolean;
    ``retry_after`` to ``None`` unless it is an integer. The ``correlation_id``
    key is required (its value may be ``null``).
    """

    EVENT: ClassVar[str] = "supersede"
    PER_ROOM: ClassVar[bool] = False

    reason: str
    message: str
    retryable: bool = False
    retry_after: int | None = None
    target_socket_id: str | None = None
    correlation_id: str | None
    extra: Mapping[str, Any] = _extra_field()


ControlMode: TypeAlias = Literal["interrupt", "stop", "play"]
ControlScope: TypeAlias = Literal["agent", "room"]
_MODES: Final = frozenset({"interrupt", "stop", "play"})
_SCOPES: Final = frozenset({"agent", "room"})


@attrs.frozen(kw_only=True)
class AgentControl:
    """``agent.control`` on ``agent_control:<agent_id>``: interrupt, stop or play.

    ``execution_id`` and ``room_id`` keys are required (``null`` allowed; a null
    ``room_id`` means agent-wide); ``correlation_id`` is required and never
    ``null``; ``type`` and ``reason`` may be absent but never ``null``.
    """

    EVENT: ClassVar[str] = "agent.control"
    PER_ROOM: ClassVar[bool] = False
    NULL_REJECTED: ClassVar[frozenset[str]] = frozenset({"type", "reason"})

    mode: ControlMode
    scope: ControlScope
    agent_id: str = _non_empty_field()
    execution_id: str | None
    room_id: str | None
    correlation_id: str
    type: str | None = None
    reason: str | None = None
    extra: Mapping[str, Any] = _extra_field()


# --------------------------------------------------------------------------- tasks


@attrs.frozen(kw_only=True)
class TaskCreated:
    """``task_created`` (human ``tasks:`` topic): a raw map, kept whole in ``extra``."""

    EVENT: ClassVar[str] = "task_created"
    PER_ROOM: ClassVar[bool] = False

    extra: Mapping[str, Any] = _extra_field()


@attrs.frozen(kw_only=True)
class TaskUpdated:
    """``task_updated`` (human ``tasks:`` topic): a raw map, kept whole in ``extra``."""

    EVENT: ClassVar[str] = "task_updated"
    PER_ROOM: ClassVar[bool] = False

    extra: Mapping[str, Any] = _extra_field()


ContactEvent: TypeAlias = Union[  # noqa: UP007 - cattrs needs a typing.Union object
    ContactRequestReceived, ContactRequestUpdated, ContactAdded, ContactRemoved
]
"""The four events of the ``agent_contacts:`` topic."""

PlatformEvent: TypeAlias = Union[  # noqa: UP007 - cattrs needs a typing.Union object
    MessageCreated,
    MessageUpdated,
    RoomEventCreated,
    RoomAdded,
    RoomRemoved,
    RoomUpdated,
    RoomDeleted,
    ParticipantAdded,
    ParticipantRemoved,
    ContactRequestReceived,
    ContactRequestUpdated,
    ContactAdded,
    ContactRemoved,
    Supersede,
    AgentControl,
    TaskCreated,
    TaskUpdated,
]
"""Every application event the platform pushes (protocol, "Events and payloads")."""

_EVENT_CLASSES: Final[tuple[type[Any], ...]] = PlatformEvent.__args__  # type: ignore[attr-defined]
_BY_NAME: Final[dict[str, type[Any]]] = {cls.EVENT: cls for cls in _EVENT_CLASSES}


# --------------------------------------------------------------------------- hooks


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def _mirror_remote(data: dict[str, Any]) -> None:
    has_remote = "is_remote" in data
    has_external = "is_external" in data
    if has_remote and not has_external:
        data["is_external"] = data["is_remote"]
    elif has_external and not has_remote:
        data["is_remote"] = data["is_external"]


def _prepare_message(data: dict[str, Any]) -> None:
    metadata = data.get("metadata")
    if metadata is None:
        data["metadata"] = {}
    elif type(metadata) is not dict and not isinstance(metadata, Mapping):
        raise _Invalid("metadata must be an object or null")
    attachments = data.get("attachments")
    if attachments is None:
        data["attachments"] = ()
    elif type(attachments) is not list and type(attachments) is not tuple:
        raise _Invalid("attachments must be an array or null")


def _prepare_metadata(data: dict[str, Any]) -> None:
    mentions = data.get("mentions")
    if mentions is None:
        data["mentions"] = ()
    elif type(mentions) is not list and type(mentions) is not tuple:
        raise _Invalid("metadata.mentions must be an array or null")


def _prepare_supersede(data: dict[str, Any]) -> None:
    if not _is_bool(data.get("retryable")):
        data["retryable"] = False
    retry_after = data.get("retry_after")
    if retry_after is not None and type(retry_after) is not int:
        data["retry_after"] = None


def _prepare_control(data: dict[str, Any]) -> None:
    mode = data.get("mode")
    if type(mode) is not str or mode not in _MODES:
        raise _Invalid("mode must be one of 'interrupt', 'stop', 'play'")
    scope = data.get("scope")
    if type(scope) is not str or scope not in _SCOPES:
        raise _Invalid("scope must be one of 'agent', 'room'")


_PREPARE: Final[dict[type[Any], Callable[[dict[str, Any]], None]]] = {
    MessageCreated: _prepare_message,
    MessageUpdated: _prepare_message,
    MessageMetadata: _prepare_metadata,
    ParticipantAdded: _mirror_remote,
    ContactAdded: _mirror_remote,
    Supersede: _prepare_supersede,
    AgentControl: _prepare_control,
}


def _wire_names(cls: type[Any]) -> frozenset[str]:
    return frozenset(f.name for f in attrs.fields(cls) if f.name != "extra")


def _make_structure(cls: type[T]) -> Callable[[Any, Any], T]:
    """Structure hook: checks, normalisation, unknown keys into ``extra``, then cattrs."""
    known = _wire_names(cls)
    null_rejected: frozenset[str] = getattr(cls, "NULL_REJECTED", frozenset())
    prepare = _PREPARE.get(cls)
    # Valid payloads take the lean generated function; only a failure pays for
    # the detailed one, whose errors name the offending field paths. Both are
    # generated on first use (an agent decodes a handful of the event classes,
    # and rarely an invalid one), without keeping their source in linecache.
    fast: Callable[[Any, Any], T] | None = None
    detailed: Callable[[Any, Any], T] | None = None

    def structure(value: Any, _: Any) -> T:
        nonlocal fast, detailed
        if type(value) is not dict and not isinstance(value, Mapping):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        data = dict(value)
        data.pop(EVENT_TAG, None)
        for key in null_rejected:
            if key in data and data[key] is None:
                raise _Invalid(f"{key} must not be null (omit it instead)")
        if prepare is not None:
            prepare(data)
        if not data.keys() <= known:
            data["extra"] = {key: data.pop(key) for key in [k for k in data if k not in known]}
        if fast is None:
            fast = make_dict_structure_fn(
                cls, converter, _cattrs_detailed_validation=False, _cattrs_use_linecache=False
            )
        try:
            return fast(data, cls)
        except _Invalid:
            raise
        except Exception:
            if detailed is None:
                detailed = make_dict_structure_fn(
                    cls, converter, _cattrs_detailed_validation=True, _cattrs_use_linecache=False
                )
            return detailed(data, cls)

    return structure


def _make_unstructure(cls: type[T]) -> Callable[[T], dict[str, Any]]:
    """Unstructure hook: flat payload, ``extra`` merged back, no topic-derived fields."""
    omit: dict[str, Any] = {"extra": override(omit=True)}
    if getattr(cls, "PER_ROOM", False) or cls is RoomEventCreated:
        omit["room_id"] = override(omit=True)
    null_rejected: frozenset[str] = getattr(cls, "NULL_REJECTED", frozenset())
    base: Callable[[T], dict[str, Any]] | None = None  # generated on first use

    def unstructure(obj: T) -> dict[str, Any]:
        nonlocal base
        if base is None:
            base = make_dict_unstructure_fn(cls, converter, _cattrs_use_linecache=False, **omit)
        out: dict[str, Any] = base(obj)
        for key in null_rejected:
            if out.get(key, 0) is None:
                del out[key]
        for key, value in obj.extra.items():  # type: ignore[attr-defined]
            out.setdefault(key, value)
        return out

    return unstructure


for _cls in (Mention, MessageMetadata, *_EVENT_CLASSES):
    converter.register_structure_hook(_cls, _make_structure(_cls))
    converter.register_unstructure_hook(_cls, _make_unstructure(_cls))


def _tag(cls: type[Any]) -> str:
    return str(cls.EVENT)


configure_tagged_union(PlatformEvent, converter, tag_generator=_tag, tag_name=EVENT_TAG)
configure_tagged_union(ContactEvent, converter, tag_generator=_tag, tag_name=EVENT_TAG)

forget_generated_source(__name__)

_STRUCTURE_PLATFORM_EVENT: Final = converter.get_structure_hook(PlatformEvent)
_UNSTRUCTURE_BY_CLASS: Final[dict[type[Any], Callable[[Any], dict[str, Any]]]] = {
    cls: converter.get_unstructure_hook(cls) for cls in _EVENT_CLASSES
}


# --------------------------------------------------------------------------- API


def event_class(event: str) -> type[Any] | None:
    """The event class for an event name, or ``None`` if the name is unknown."""
    return _BY_NAME.get(event)


def topic_room_id(topic: str) -> str | None:
    """The room id of a per-room topic (``chat_room:<id>``, ``room_participants:<id>``).

    Returns ``None`` for any other topic.
    """
    kind, sep, ident = topic.partition(":")
    if sep and kind in PER_ROOM_TOPIC_KINDS:
        return ident
    return None


def _describe(exc: BaseException, typ: Any) -> str:
    # Only messages we wrote ourselves are echoed; they name fields and types.
    if isinstance(exc, _Invalid):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, TypeError | ValueError) and typ is not None:
        name = getattr(typ, "__name__", None) or repr(typ)
        return f"expected {name}"
    if isinstance(exc, AttributeError) and "'items'" in str(exc):
        return "expected an object"
    return f"invalid value ({type(exc).__name__})"


def _reason(exc: Exception) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(exc, path="payload", format_exception=_describe))
    return _describe(exc, None)


def decode_event(topic: str, event: str, payload: Any) -> PlatformEvent:
    """Validate and decode one application push.

    Args:
        topic: the Phoenix topic it arrived on; a per-room topic supplies
            ``room_id`` (required for per-room events).
        event: the event name (``message_created``, ``agent.control``, …).
        payload: the decoded JSON payload.

    Returns:
        The frozen event object.

    Raises:
        InvalidEventError: the event name is unknown, the payload is not an
            object, or a field breaks the rules of (protocol, "Events and payloads"). Never any
            other exception. The reason names fields and types, never values.
    """
    cls = _BY_NAME.get(event)
    if cls is None:
        raise InvalidEventError(topic, event, "unknown event")
    if not isinstance(payload, Mapping):
        raise InvalidEventError(topic, event, "payload is not an object")
    data = dict(payload)
    data[EVENT_TAG] = event
    if cls.PER_ROOM or cls is RoomEventCreated:
        room_id = topic_room_id(topic)
        if room_id is None and cls.PER_ROOM:
            raise InvalidEventError(topic, event, "event needs a per-room topic")
        if room_id is not None:
            data["room_id"] = room_id
        else:
            data.pop("room_id", None)
    try:
        return _STRUCTURE_PLATFORM_EVENT(data, PlatformEvent)  # type: ignore[no-any-return]
    except Exception as exc:  # any failure of a peer's payload is an invalid event
        raise InvalidEventError(topic, event, _reason(exc)) from None


def encode_event(ev: PlatformEvent) -> tuple[str, dict[str, Any]]:
    """The event name and JSON payload for an event (inverse of :func:`decode_event`).

    Fields taken from the topic (``room_id`` of per-room events) are not part of
    the payload; unknown keys kept in ``extra`` are merged back in. Optional
    fields that reject ``null`` are omitted when unset.

    Raises:
        TypeError: ``ev`` is not an event object.
    """
    hook = _UNSTRUCTURE_BY_CLASS.get(type(ev))
    if hook is None:
        raise TypeError(f"not a platform event: {type(ev).__name__}")
    return ev.EVENT, hook(ev)
