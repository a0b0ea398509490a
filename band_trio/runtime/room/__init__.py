"""One room of a running agent: its worker, one message's way, and what the
agent's rooms share (the Trio shells of the room's cores).

:mod:`~band_trio.runtime.room._worker` is the :class:`Room` (inbox, the order
of its steps through :class:`~band_trio.runtime.core._room_machine.RoomMachine`,
reconcile passes, its pace); :mod:`~band_trio.runtime.room._turn_shell` one
message's admission, turn and settlement; the other modules are the helpers
they share (the inbox, the pacer, the settler, the running turn, reply
recovery, activity reports, hydration, the services and REST seams).
"""

from band_trio.runtime.room._worker import (
    ERROR_EVENT_TEXT,
    MISSING_REPLY_TEXT,
    ParticipantCallback,
    Room,
    RoomServices,
    RoomStatistics,
    ToolsFactory,
)

__all__ = [
    "ERROR_EVENT_TEXT",
    "MISSING_REPLY_TEXT",
    "ParticipantCallback",
    "Room",
    "RoomServices",
    "RoomStatistics",
    "ToolsFactory",
]
