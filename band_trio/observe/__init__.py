"""Health, readiness and metrics for an agent run by an orchestrator.

With ``AgentConfig.health_port`` set (``BAND_HEALTH_PORT``, or
``band-trio run --health-port``), the agent serves, on Trio in its own
nursery and on loopback unless ``health_host`` says otherwise:

* ``GET /livez`` — 200 while the event loop answers and the WebSocket has not
  been down longer than ``health_link_down_limit``; else 503;
* ``GET /readyz`` — 200 once connected with every room listed and joined, 503
  during start-up, a reconnect or a graceful shutdown (``draining``);
* ``GET /metrics`` — the Prometheus text format, from ``Agent.statistics()``
  (needs ``band-trio[metrics]``; 501 with the install command without it).

The listener stops with the agent. With an OpenTelemetry meter provider
configured, the same metrics are OpenTelemetry instruments too
(:mod:`band_trio.observe.otel`).
"""

from band_trio.observe.catalogue import INSTRUMENTS, TURN_DURATION, Instrument
from band_trio.observe.probes import (
    LIVEZ_PATH,
    METRICS_PATH,
    READYZ_PATH,
    ProbeResult,
    liveness,
    readiness,
)
from band_trio.observe.prometheus import metrics_renderer
from band_trio.observe.service import HealthState, serve_health

__all__ = [
    "INSTRUMENTS",
    "LIVEZ_PATH",
    "METRICS_PATH",
    "READYZ_PATH",
    "TURN_DURATION",
    "HealthState",
    "Instrument",
    "ProbeResult",
    "liveness",
    "metrics_renderer",
    "readiness",
    "serve_health",
]
