"""The health, readiness and metrics listener of one agent.

:func:`serve_health` is what the agent starts in its own nursery when
``AgentConfig.health_port`` is set: ``GET /livez``, ``/readyz`` and
``/metrics`` (see :mod:`band_trio.observe.probes` and
:mod:`band_trio.observe.prometheus`) on ``health_host:health_port``.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import trio

from band_trio.errors import BandConfigError, MissingExtraError
from band_trio.observe.listener import ProbeResponse, serve_http
from band_trio.observe.probes import (
    LIVEZ_PATH,
    METRICS_PATH,
    READYZ_PATH,
    ProbeResult,
    liveness,
    readiness,
)
from band_trio.observe.prometheus import MetricsRenderer, metrics_renderer
from band_trio.runtime.agent_statistics import AgentStatistics
from band_trio.runtime.config import AgentConfig

__all__ = ["HealthState", "serve_health"]


@attrs.define
class HealthState:
    """What the probes need besides the statistics: when the agent started and
    whether its start-up finished (connected, rooms listed and joined)."""

    started_at: float
    started: bool = False


def _probe(result: ProbeResult) -> ProbeResponse:
    return ProbeResponse(200 if result.ok else 503, f"{result.reason}\n".encode())


def health_handler(
    config: AgentConfig,
    statistics: Callable[[], AgentStatistics],
    state: HealthState,
    render: MetricsRenderer | str,
) -> Callable[[str], ProbeResponse]:
    """The listener's handler; ``render`` is the metrics renderer, or the text
    to answer with 501 when metrics are unavailable."""

    def handle(path: str) -> ProbeResponse:
        if path == LIVEZ_PATH:
            return _probe(
                liveness(
                    statistics(),
                    now=trio.current_time(),
                    started_at=state.started_at,
                    link_down_limit=config.health_link_down_limit,
                )
            )
        if path == READYZ_PATH:
            return _probe(readiness(statistics(), started=state.started))
        if path == METRICS_PATH:
            if isinstance(render, str):
                return ProbeResponse(501, f"{render}\n".encode())
            body, content_type = render()
            return ProbeResponse(200, body, content_type)
        return ProbeResponse(404, b"not found: try /livez, /readyz or /metrics\n")

    return handle


async def serve_health(
    config: AgentConfig,
    statistics: Callable[[], AgentStatistics],
    state: HealthState,
    *,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the probes and the metrics on ``config.health_host:health_port``
    until cancelled; ``task_status.started((host, port))`` once listening.

    Raises:
        BandConfigError: the address cannot be listened on (the port is in
            use, the host is not an address of this machine).
    """
    assert config.health_port is not None
    render: MetricsRenderer | str
    try:
        render = metrics_renderer(statistics)
    except MissingExtraError as exc:
        render = str(exc)
    handler = health_handler(config, statistics, state, render)
    try:
        await serve_http(handler, config.health_host, config.health_port, task_status=task_status)
    except OSError as exc:
        raise BandConfigError(
            f"health listener cannot listen on {config.health_host}:{config.health_port}: {exc}"
        ) from None
