"""Reading a room's context for the first turn of a session (bounded memory)."""

from __future__ import annotations

from band_trio._logging import get_logger
from band_trio.adapter.messages import HistoryProvider
from band_trio.adapter.roster import Roster
from band_trio.errors import BandError
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.core._history import HistoryWindow, to_history_items
from band_trio.runtime.room._rest import RoomRest

__all__ = ["load_history"]

# Part of the room's work: its lines go to the room's logger, where log
# filters and readers expect them.
logger = get_logger("band_trio.runtime.room")


async def load_history(
    rest: RoomRest,
    *,
    room_id: str,
    trigger_id: str,
    roster: Roster,
    agent_id: str,
    config: AgentConfig,
) -> HistoryProvider:
    """The newest context messages strictly before the trigger, oldest first.

    The context endpoint pages oldest first, so pages are read in order up
    to the trigger while a sliding window keeps only the newest
    ``max_history_messages`` (bounded memory). A failure yields an empty
    history (a warning is logged) and the turn goes on.
    """
    if config.max_history_messages == 0:
        return HistoryProvider()
    window = HistoryWindow(trigger_id=trigger_id, limit=config.max_history_messages)
    try:
        page = await rest.get_context(room_id, limit=config.history_page_size)
        window.feed_forward(page.items)
        pages = 1
        while (
            page.has_more
            and page.next_cursor
            and not window.trigger_seen
            and pages < config.max_history_pages
        ):
            page = await rest.get_context(
                room_id, cursor=page.next_cursor, limit=config.history_page_size
            )
            window.feed_forward(page.items)
            pages += 1
    except BandError as exc:
        logger.warning("room %s: could not load history: %s", room_id, exc)
        return HistoryProvider()
    items = to_history_items(window.messages(), roster, agent_id=agent_id)
    return HistoryProvider(items)
