"""The same metrics as OpenTelemetry observable instruments.

band-trio speaks only the OpenTelemetry API (the optional extra
``band-trio[otel]``); the application configures the SDK. When a meter
provider is set (``opentelemetry.metrics.set_meter_provider``) as an agent
starts serving, the agent registers with :class:`OtelMetrics` for that
provider: one observable instrument per metric of
:mod:`band_trio.observe.catalogue` (``band_trio_turns_total`` becomes the
counter ``band_trio.turns``), whose callback reads ``statistics()`` of every
agent serving in the process, each with the attribute ``band_trio.agent_id``.
The turn duration histogram is reported as two counters,
``band_trio.turn_duration.count`` and ``band_trio.turn_duration.sum`` (in
seconds): the API has no observable histogram. Without the API, or with its
default provider, nothing is registered and nothing runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from band_trio._version import __version__
from band_trio.observe.catalogue import INSTRUMENTS, TURN_DURATION, Instrument
from band_trio.runtime.agent_statistics import AgentStatistics

__all__ = ["AGENT_ATTRIBUTE", "OtelMetrics", "otel_name", "registered"]

AGENT_ATTRIBUTE: Final = "band_trio.agent_id"

Source = Callable[[], AgentStatistics]


def otel_name(prometheus_name: str) -> str:
    """``band_trio_turns_total`` -> ``band_trio.turns`` (the unit and the
    ``_total`` suffix are the exporter's to add)."""
    name = prometheus_name.removesuffix("_total").removesuffix("_seconds")
    return "band_trio." + name.removeprefix("band_trio_")


class OtelMetrics:
    """Observable instruments on one meter provider, reading the agents added.

    Args:
        meter_provider: an OpenTelemetry ``MeterProvider``.
    """

    def __init__(self, meter_provider: Any) -> None:
        self._sources: dict[str, Source] = {}
        meter = meter_provider.get_meter("band_trio", __version__)
        for instrument in INSTRUMENTS:
            make = (
                meter.create_observable_counter
                if instrument.kind == "counter"
                else meter.create_observable_gauge
            )
            make(
                otel_name(instrument.name),
                callbacks=[self._callback(instrument)],
                description=instrument.help,
            )
        base = otel_name(TURN_DURATION)
        meter.create_observable_counter(
            base + ".count",
            callbacks=[self._durations(lambda s: s.turn_durations.count)],
            description="Message turns measured",
        )
        meter.create_observable_counter(
            base + ".sum",
            callbacks=[self._durations(lambda s: s.turn_durations.total)],
            unit="s",
            description="Seconds spent in message turns",
        )

    def add(self, agent_id: str, statistics: Source) -> None:
        """Report ``statistics()`` under ``agent_id`` until :meth:`discard`."""
        self._sources[agent_id] = statistics

    def discard(self, agent_id: str) -> None:
        """Stop reporting ``agent_id`` (nothing happens if it is not reported)."""
        self._sources.pop(agent_id, None)

    def _observations(self, read: Callable[[AgentStatistics], Iterable[Any]]) -> list[Any]:
        from opentelemetry.metrics import Observation  # lazy: the optional `otel` extra

        out = []
        for agent_id, statistics in list(self._sources.items()):
            for attributes, value in read(statistics()):
                out.append(Observation(value, {AGENT_ATTRIBUTE: agent_id, **attributes}))
        return out

    def _callback(self, instrument: Instrument) -> Callable[[Any], list[Any]]:
        def read(stats: AgentStatistics) -> Iterator[tuple[dict[str, str], float]]:
            for labels, value in instrument.read(stats):
                yield dict(zip(instrument.labels, labels, strict=True)), value

        return lambda _options: self._observations(read)

    def _durations(self, value: Callable[[AgentStatistics], float]) -> Callable[[Any], list[Any]]:
        return lambda _options: self._observations(lambda s: [({}, value(s))])


_by_provider: dict[int, tuple[Any, OtelMetrics]] = {}


def _configured_provider() -> Any:
    try:
        from opentelemetry import metrics  # lazy: the optional `otel` extra
        from opentelemetry.metrics import NoOpMeterProvider  # lazy: as above
    except ImportError:
        return None
    provider = metrics.get_meter_provider()
    if isinstance(provider, NoOpMeterProvider) or type(provider).__name__.startswith("_Proxy"):
        return None  # no SDK configured: the instruments would record nothing
    return provider


@contextlib.contextmanager
def registered(agent_id: str, statistics: Source) -> Iterator[OtelMetrics | None]:
    """Report an agent's metrics to the configured meter provider for the block
    (nothing when there is none)."""
    provider = _configured_provider()
    if provider is None:
        yield None
        return
    entry = _by_provider.get(id(provider))
    if entry is None or entry[0] is not provider:
        entry = (provider, OtelMetrics(provider))
        _by_provider[id(provider)] = entry
    metrics = entry[1]
    metrics.add(agent_id, statistics)
    try:
        yield metrics
    finally:
        metrics.discard(agent_id)
