"""The wire layer: typed WebSocket events, the Phoenix v2 link, and the REST client.

* :class:`BandLink` — one WebSocket to the platform (Phoenix Channels v2):
  joins, heartbeat, reconnect, typed :data:`PlatformEvent` pushes.
* :class:`RestClient` — one typed async method per ``/api/v1/agent`` endpoint.
* :func:`decode_event` / :func:`encode_event` — ``(topic, event, payload)`` to
  attrs-frozen events and back, with the validation rules of the platform.
"""

from band_trio.wire._converter import structure, unstructure
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

__all__ = [
    "AgentControl",
    "BandLink",
    "ContactAdded",
    "ContactEvent",
    "ContactRemoved",
    "ContactRequestReceived",
    "ContactRequestUpdated",
    "EventRejected",
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
    "RestClient",
    "RestConfig",
    "RestStatistics",
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
