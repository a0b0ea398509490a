"""Optional OpenTelemetry spans: one per turn, one per REST call, one per tool call.

band-trio speaks only the OpenTelemetry *API* (``opentelemetry-api``, the
optional extra ``band-trio[otel]``); the application chooses and configures
the SDK and its exporters. Spans are made only when a tracer provider is
configured (``opentelemetry.trace.set_tracer_provider``): without the package,
or with the API's default provider, :func:`span` returns one shared no-op
context manager and nothing else runs.

Every span carries the ids of the work it belongs to (``band.agent_id``,
``band.room_id``, ``band.message_id``, read from the logging context), never a
key, a header or a message's text. Trio tasks inherit context variables from
the task that starts them, and OpenTelemetry keeps the current span in one, so
a REST call or a tool call made during a turn is a child of that turn's span.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Final

from band_trio._logging import current_ids
from band_trio._version import __version__

__all__ = ["INSTRUMENTATION_NAME", "span", "tracing_enabled"]

INSTRUMENTATION_NAME: Final = "band_trio"

_NO_SPAN: Final = contextlib.nullcontext(None)

# The API module once imported (or False when it is not installed), and the
# tracer made from the provider last seen (providers are set once per process
# in practice, so this is a cache hit after the first call).
_api: Any = None
_tracer_for: tuple[object, Any] | None = None


def _trace_api() -> Any:
    global _api
    if _api is None:
        try:
            from opentelemetry import trace  # lazy: the optional `otel` extra
        except ImportError:
            _api = False
        else:
            _api = trace
    return _api


def _tracer() -> Any:
    global _tracer_for
    api = _trace_api()
    if api is False:
        return None
    provider = api.get_tracer_provider()
    if isinstance(provider, api.ProxyTracerProvider | api.NoOpTracerProvider):
        return None  # no SDK configured: spans would record nothing
    if _tracer_for is None or _tracer_for[0] is not provider:
        _tracer_for = (provider, provider.get_tracer(INSTRUMENTATION_NAME, __version__))
    return _tracer_for[1]


def tracing_enabled() -> bool:
    """True when spans are being made (the API is installed and a provider set)."""
    return _tracer() is not None


def span(
    name: str, attributes: Mapping[str, str | int | float | bool] | None = None
) -> contextlib.AbstractContextManager[Any]:
    """A span named ``name`` around the block, current for the tasks it starts.

    The block receives the span (to add attributes) or None when tracing is
    off. The ids of the current work are added as attributes; an exception
    leaving the block is recorded on the span.
    """
    tracer = _tracer()
    if tracer is None:
        return _NO_SPAN
    attrs: dict[str, Any] = {f"band.{key}": value for key, value in current_ids().items()}
    if attributes:
        attrs.update(attributes)
    return tracer.start_as_current_span(name, attributes=attrs)  # type: ignore[no-any-return]
