"""``GET /metrics``: the Prometheus text format, written by ``prometheus_client``.

A custom collector reads ``Agent.statistics()`` at each scrape and yields the
metrics of :mod:`band_trio.observe.catalogue`; nothing is counted twice and
nothing runs between scrapes. Each agent has a registry of its own (never the
library's global one), so several agents in one process do not collide.

``prometheus_client`` is the optional extra ``band-trio[metrics]``; without
it, :func:`metrics_renderer` raises :class:`~band_trio.errors.MissingExtraError`
and the listener answers ``/metrics`` with 501 and the install command.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

from band_trio.errors import MissingExtraError
from band_trio.observe.catalogue import INSTRUMENTS, TURN_DURATION
from band_trio.runtime.agent_statistics import AgentStatistics
from band_trio.runtime.core.turn_durations import BUCKETS

__all__ = ["CONTENT_TYPE", "MetricsRenderer", "metrics_renderer"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
"""The classic text format, which every Prometheus version reads (the metric
names are all plain ASCII, so the text is the same in the newer format)."""

MetricsRenderer = Callable[[], tuple[bytes, str]]
"""Renders one scrape: the body and its content type."""


def metrics_renderer(statistics: Callable[[], AgentStatistics]) -> MetricsRenderer:
    """A function rendering the agent's metrics from ``statistics()``.

    Raises:
        MissingExtraError: ``prometheus_client`` is not installed.
    """
    try:
        # Lazy: the optional `metrics` extra.
        from prometheus_client import CollectorRegistry, generate_latest
    except ImportError as exc:
        raise MissingExtraError("metrics", "GET /metrics") from exc

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_AgentCollector(statistics))

    def render() -> tuple[bytes, str]:
        return generate_latest(registry), CONTENT_TYPE

    return render


class _AgentCollector:
    def __init__(self, statistics: Callable[[], AgentStatistics]) -> None:
        self._statistics = statistics

    def describe(self) -> list[Any]:
        return []  # the metrics are made at each scrape; nothing to check ahead

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (  # lazy: the optional `metrics` extra
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        stats = self._statistics()
        for instrument in INSTRUMENTS:
            family_type = CounterMetricFamily if instrument.kind == "counter" else GaugeMetricFamily
            family = family_type(instrument.name, instrument.help, labels=instrument.labels)
            for labels, value in instrument.read(stats):
                family.add_metric(list(labels), value)
            yield family
        durations = stats.turn_durations
        histogram = HistogramMetricFamily(TURN_DURATION, "Message turn durations")
        buckets: list[tuple[str, float]] = [
            (_bound(bound), float(n)) for bound, n in zip(BUCKETS, durations.buckets, strict=True)
        ]
        buckets.append(("+Inf", float(durations.count)))
        histogram.add_metric([], buckets, sum_value=durations.total)
        yield histogram


def _bound(bound: float) -> str:
    return repr(float(bound))
