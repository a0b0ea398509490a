"""What ``/livez`` and ``/readyz`` answer, from a statistics snapshot.

Sans-io: each probe is a function of :class:`~band_trio.AgentStatistics`, the
agent's start-up state and the time, returning whether it passes and why.

* **Live** (``/livez``): the event loop answers (it computed this) and the
  WebSocket has not been down, or not yet up since the agent started, for
  longer than ``AgentConfig.health_link_down_limit``. A failing liveness probe
  asks the orchestrator for a restart: only a link that stays down beyond the
  reconnect policy's reach does.
* **Ready** (``/readyz``): started (connected, rooms listed and joined), the
  link up, no room joining, not draining. A failing readiness probe only says
  "not now": during start-up, a reconnect, or a graceful shutdown.
"""

from __future__ import annotations

import attrs

from band_trio.runtime.agent_statistics import AgentStatistics

__all__ = ["LIVEZ_PATH", "METRICS_PATH", "READYZ_PATH", "ProbeResult", "liveness", "readiness"]

LIVEZ_PATH = "/livez"
READYZ_PATH = "/readyz"
METRICS_PATH = "/metrics"


@attrs.frozen
class ProbeResult:
    """A probe's verdict: ``ok`` and a short reason (the response body)."""

    ok: bool
    reason: str


def liveness(
    stats: AgentStatistics, *, now: float, started_at: float, link_down_limit: float
) -> ProbeResult:
    """``/livez``: fails once the link has been down longer than the limit."""
    link = stats.link
    if link is not None and link.connected:
        return ProbeResult(True, "ok")
    since = started_at
    if link is not None and link.disconnected_since is not None:
        since = link.disconnected_since
    down = now - since
    if down > link_down_limit:
        return ProbeResult(False, f"link down for {down:.0f}s (limit {link_down_limit:g}s)")
    return ProbeResult(True, f"ok (link down for {down:.0f}s)")


def readiness(stats: AgentStatistics, *, started: bool) -> ProbeResult:
    """``/readyz``: started, connected, every room joined and not draining."""
    if stats.draining:
        return ProbeResult(False, "draining")
    if not started:
        return ProbeResult(False, "starting")
    if stats.link is None or not stats.link.connected:
        return ProbeResult(False, "link down")
    if stats.joining:
        return ProbeResult(False, f"{stats.joining} room(s) joining")
    return ProbeResult(True, "ok")
