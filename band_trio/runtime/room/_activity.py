"""A room's ``working`` reports to the platform while a turn runs (Trio).

The platform shows a room's agent as working from activity reports. They run
beside the turn, never in its way: a slow activity endpoint must not delay a
turn, a report in flight must not be torn down mid-request (it would break a
pooled connection), and a failing endpoint is logged once, not per report.
"""

from __future__ import annotations

import trio

from band_trio._logging import get_logger
from band_trio.runtime.config import AgentConfig
from band_trio.runtime.room._rest import RoomRest
from band_trio.runtime.room._running_turn import RunningTurn

__all__ = ["ActivityReporter"]

# Part of the room's work: its lines go to the room's logger, where log
# filters and readers expect them.
logger = get_logger("band_trio.runtime.room")


class ActivityReporter:
    """Reports one room's activity.

    Args:
        room_id: the room.
        rest: where the reports go.
        config: the grace period, keep-alive, ceiling and request timeout.
    """

    def __init__(self, room_id: str, rest: RoomRest, config: AgentConfig) -> None:
        self._room_id = room_id
        self._rest = rest
        self._config = config
        self._warned = False

    @property
    def warned(self) -> bool:
        """True while reports fail and the failure was logged (later ones are
        logged at debug level until a report succeeds)."""
        return self._warned

    async def keep_working(self, turn: RunningTurn) -> None:
        """Report ``working: true`` once the turn outlasts the grace period, then
        every keep-alive until the turn ends.

        Run it concurrently with the turn. A turn that ends within
        ``working_grace`` sends no activity at all (nothing to clear). A report
        in flight is shielded (bounded by the REST activity timeout). When the
        platform answers "not working" the execution was stopped: the turn is
        told so. Failures are logged, never raised.
        """
        cfg = self._config
        started = trio.current_time()
        if cfg.working_grace > 0:
            with trio.move_on_after(cfg.working_grace):
                await turn.ended.wait()
        while not turn.ended.is_set():
            if (
                cfg.max_working_state is not None
                and trio.current_time() - started >= cfg.max_working_state
            ):
                return
            turn.working_reported = True
            working: bool | None = None
            with trio.CancelScope(shield=True) as shield:
                shield.deadline = trio.current_time() + cfg.working_request_timeout + 1
                try:
                    working = await self._rest.report_activity(self._room_id, True)
                except Exception as exc:
                    self._warn(exc)
                else:
                    self._warned = False
            if working is False and not turn.ended.is_set():
                # The platform echoed "not working": the execution was stopped.
                turn.execution_stopped()
                return
            with trio.move_on_after(cfg.working_keep_alive):
                await turn.ended.wait()

    async def report_idle(self) -> None:
        """Report ``working: false``; shielded so it lands even when the turn
        is being cancelled, and bounded. Failures are logged, never raised."""
        with trio.CancelScope(shield=True):
            with trio.move_on_after(self._config.working_request_timeout + 1):
                try:
                    await self._rest.report_activity(self._room_id, False)
                except Exception as exc:
                    self._warn(exc)

    def _warn(self, exc: BaseException) -> None:
        if not self._warned:
            self._warned = True
            logger.warning("room %s: activity report failed: %r", self._room_id, exc)
        else:
            logger.debug("room %s: activity report failed: %r", self._room_id, exc)
