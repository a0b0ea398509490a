"""The wire layer: typed WebSocket events, the Phoenix v2 link, and the REST client.

Its pinned surface (``__all__``) is what a program that talks to the platform
directly needs:

* :class:`BandLink` — one WebSocket to the platform (Phoenix Channels v2):
  joins, heartbeat, reconnect, typed :data:`PlatformEvent` pushes; configured
  by :class:`LinkConfig` (whose backoff is :class:`FirstConnectPolicy` and
  :class:`ReconnectPolicy`), it also sends :data:`LinkEvent` records
  (:class:`LinkReconnected`, :class:`EventRejected`, :class:`TopicLost`).
* :class:`RestClient` — one typed async method per ``/api/v1/agent`` endpoint,
  configured by :class:`RestConfig` (whose retry rules are :class:`RetryPolicy`).
* :func:`decode_event` / :func:`encode_event` — ``(topic, event, payload)`` to
  attrs-frozen events and back, with the validation rules of the platform.
* :func:`structure` / :func:`unstructure` — any wire object from and to its
  JSON-like form, by the layer's one converter (which stays private).

The REST models (requests, responses, pages) are in :mod:`band_trio.wire.models`.
"""

from band_trio.wire._converter import structure, unstructure
from band_trio.wire.backoff import FirstConnectPolicy, ReconnectPolicy
from band_trio.wire.events import (
    AgentControl,
    ContactAdded,
    ContactEvent,
    ContactRemoved,
    ContactRequestReceived,
    ContactRequestUpdated,
    Mention,
    MessageCreated,
    MessageMetadata,
    MessageUpdated,
    ParticipantAdded,
    ParticipantRemoved,
    PlatformEvent,
    RoomAdded,
    RoomDeleted,
    RoomEventCreated,
    RoomRemoved,
    RoomUpdated,
    Supersede,
    TaskCreated,
    TaskUpdated,
    decode_event,
    encode_event,
)
from band_trio.wire.link import (
    BandLink,
    EventRejected,
    LinkConfig,
    LinkEvent,
    LinkReconnected,
    LinkStatistics,
    TopicLost,
    room_topics,
)
from band_trio.wire.rest import RestClient, RestConfig, RestStatistics
from band_trio.wire.retry import RetryPolicy

__all__ = [
    "AgentControl",
    "BandLink",
    "ContactAdded",
    "ContactEvent",
    "ContactRemoved",
    "ContactRequestReceived",
    "ContactRequestUpdated",
    "EventRejected",
    "FirstConnectPolicy",
    "LinkConfig",
    "LinkEvent",
    "LinkReconnected",
    "LinkStatistics",
    "Mention",
    "MessageCreated",
    "MessageMetadata",
    "MessageUpdated",
    "ParticipantAdded",
    "ParticipantRemoved",
    "PlatformEvent",
    "ReconnectPolicy",
    "RestClient",
    "RestConfig",
    "RestStatistics",
    "RetryPolicy",
    "RoomAdded",
    "RoomDeleted",
    "RoomEventCreated",
    "RoomRemoved",
    "RoomUpdated",
    "Supersede",
    "TaskCreated",
    "TaskUpdated",
    "TopicLost",
    "decode_event",
    "encode_event",
    "room_topics",
    "structure",
    "unstructure",
]
