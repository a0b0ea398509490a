"""The agent's metrics, named once: what each one is and how it is read from
:class:`~band_trio.AgentStatistics`.

Both exporters use this list: the Prometheus scrape
(:mod:`band_trio.observe.prometheus`) and the OpenTelemetry observable
instruments (:mod:`band_trio.observe.otel`). Names and labels follow the
Prometheus conventions (``band_trio_…``, counters ending in ``_total``,
durations in ``_seconds``); no label carries a room or message id, so the
number of series stays fixed however many rooms an agent serves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final, Literal

import attrs

from band_trio.runtime.agent_statistics import AgentStatistics

__all__ = ["INSTRUMENTS", "TURN_DURATION", "Instrument", "Kind", "Sample"]

Kind = Literal["counter", "gauge"]
Sample = tuple[tuple[str, ...], float]
"""The label values (in the order of ``Instrument.labels``) and the value."""


@attrs.frozen
class Instrument:
    """One metric: its Prometheus name, kind, help text, labels and reader."""

    name: str
    kind: Kind
    help: str
    read: Callable[[AgentStatistics], Iterable[Sample]]
    labels: tuple[str, ...] = ()


TURN_DURATION: Final = "band_trio_turn_duration_seconds"
"""The histogram of message turn durations (read from ``turn_durations``)."""


def _one(read: Callable[[AgentStatistics], float]) -> Callable[[AgentStatistics], list[Sample]]:
    return lambda s: [((), float(read(s)))]


def _turns(s: AgentStatistics) -> list[Sample]:
    return [
        (("completed",), float(s.completed)),
        (("failed",), float(s.failures)),
        (("interrupted",), float(s.interrupted)),
    ]


def _rest_calls(s: AgentStatistics) -> list[Sample]:
    rest = s.rest
    if rest is None:
        return []
    return [((route, outcome), float(n)) for route, outcome, n in rest.calls_by_route]


def _ledger(s: AgentStatistics) -> list[Sample]:
    ledger = s.ledger
    if ledger is None:
        return []
    return [
        (("in_flight",), float(ledger.in_flight)),
        (("reply_sent",), float(ledger.reply_sent)),
        (("ack_pending",), float(ledger.ack_pending)),
        (("completed",), float(ledger.completed)),
        (("failed",), float(ledger.failed_final)),
        (("released",), float(ledger.released_entries)),
    ]


INSTRUMENTS: Final[tuple[Instrument, ...]] = (
    Instrument("band_trio_serving", "gauge", "1 while the agent serves", _one(lambda s: s.serving)),
    Instrument(
        "band_trio_draining", "gauge", "1 during a graceful shutdown", _one(lambda s: s.draining)
    ),
    Instrument("band_trio_rooms", "gauge", "Rooms served", _one(lambda s: s.rooms)),
    Instrument(
        "band_trio_rooms_joining", "gauge", "Rooms whose join is pending", _one(lambda s: s.joining)
    ),
    Instrument(
        "band_trio_turns_started_total", "counter", "Turns started", _one(lambda s: s.turns)
    ),
    Instrument("band_trio_turns_total", "counter", "Turns ended, by outcome", _turns, ("outcome",)),
    Instrument(
        "band_trio_messages_failed_total",
        "counter",
        "Messages marked failed after their last attempt",
        _one(lambda s: s.failed_for_good),
    ),
    Instrument(
        "band_trio_messages_waiting",
        "gauge",
        "Events waiting in the rooms' inboxes",
        _one(lambda s: s.inbox_depth),
    ),
    Instrument(
        "band_trio_inbox_overflows_total",
        "counter",
        "Room events not queued because an inbox was full (recovered from /next)",
        _one(lambda s: s.overflows),
    ),
    Instrument(
        "band_trio_resyncs_total", "counter", "Reconcile passes (/next)", _one(lambda s: s.resyncs)
    ),
    Instrument(
        "band_trio_rest_calls_total",
        "counter",
        "REST calls, by route class and outcome",
        _rest_calls,
        ("route", "outcome"),
    ),
    Instrument(
        "band_trio_rest_retries_total",
        "counter",
        "REST retries after a retryable failure",
        _one(lambda s: s.rest.retries if s.rest is not None else 0),
    ),
    Instrument(
        "band_trio_rest_requests_in_flight",
        "gauge",
        "REST requests on the wire",
        _one(lambda s: s.rest.in_flight if s.rest is not None else 0),
    ),
    Instrument(
        "band_trio_reconnects_total",
        "counter",
        "Times the WebSocket came back after a drop",
        _one(lambda s: s.reconnects),
    ),
    Instrument(
        "band_trio_link_connected",
        "gauge",
        "1 while the WebSocket is connected",
        _one(lambda s: s.link is not None and s.link.connected),
    ),
    Instrument(
        "band_trio_events_rejected_total",
        "counter",
        "Pushes rejected as invalid",
        _one(lambda s: s.rejected),
    ),
    Instrument(
        "band_trio_ledger_entries",
        "gauge",
        "Claims ledger entries, by state",
        _ledger,
        ("state",),
    ),
    Instrument(
        "band_trio_ledger_write_errors_total",
        "counter",
        "Durable ledger writes that failed",
        _one(lambda s: s.ledger.write_errors if s.ledger is not None else 0),
    ),
    Instrument(
        "band_trio_adapter_stuck_threads",
        "gauge",
        "Adapter threads that did not stop when asked",
        _one(lambda s: s.stuck_threads),
    ),
)
"""Every metric but the turn duration histogram, in exposition order."""
