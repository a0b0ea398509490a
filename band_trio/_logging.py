"""Logging with the agent, room and message ids as fields of every record.

Every logger of band-trio is made by :func:`get_logger`, which attaches a
:class:`ContextFilter`: each record gets the attributes ``agent_id``,
``room_id`` and ``message_id`` (None where they do not apply), read from
context variables. The runtime sets them where the work starts (the agent's
``serve`` task, each room's task, each message's handling) with
:func:`log_context`; Trio tasks inherit context variables from the task that
started them, so a REST call, a tool call or a reconnect logs the ids of the
work it belongs to without being told.

:func:`configure_logging` installs one handler in the text or JSON format, for
programs that do not configure logging themselves. A program that does can
use the attributes in its own format (``%(room_id)s``) or add
:class:`ContextFilter` to its handlers so that records of other libraries
(an adapter, the model client) logged inside a turn carry the ids too.
"""

from __future__ import annotations

import contextvars
import datetime
import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any, Final, Literal

from band_trio.errors import BandConfigError

__all__ = [
    "CONTEXT_FIELDS",
    "ContextFilter",
    "JsonFormatter",
    "LogFormat",
    "TextFormatter",
    "configure_logging",
    "current_ids",
    "get_logger",
    "log_context",
]

LogFormat = Literal["text", "json"]

CONTEXT_FIELDS: Final = ("agent_id", "room_id", "message_id")
"""The record attributes :class:`ContextFilter` sets."""

ENV_LOG_LEVEL: Final = "BAND_LOG_LEVEL"
ENV_LOG_FORMAT: Final = "BAND_LOG_FORMAT"

_agent_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "band_trio_agent_id", default=None
)
_room_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "band_trio_room_id", default=None
)
_message_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "band_trio_message_id", default=None
)
_VARS: Final = {"agent_id": _agent_id, "room_id": _room_id, "message_id": _message_id}


@contextmanager
def log_context(
    *, agent_id: str | None = None, room_id: str | None = None, message_id: str | None = None
) -> Iterator[None]:
    """Set the given ids for the block (and for every task started inside it).

    Ids not given keep their current value. Use it in the task that does the
    work: the values are restored when the block ends.
    """
    tokens: list[tuple[contextvars.ContextVar[str | None], contextvars.Token[str | None]]] = []
    for name, value in (("agent_id", agent_id), ("room_id", room_id), ("message_id", message_id)):
        if value is not None:
            var = _VARS[name]
            tokens.append((var, var.set(value)))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def current_ids() -> dict[str, str]:
    """The ids set now (only those that are set)."""
    out: dict[str, str] = {}
    for name, var in _VARS.items():
        value = var.get()
        if value is not None:
            out[name] = value
    return out


class ContextFilter(logging.Filter):
    """Adds ``agent_id``, ``room_id`` and ``message_id`` to each record.

    A value the record already has (given with ``extra=``) is kept. The filter
    never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in _VARS.items():
            if getattr(record, name, None) is None:
                setattr(record, name, var.get())
        return True


_FILTER: Final = ContextFilter()


def get_logger(name: str) -> logging.Logger:
    """The logger ``name`` with the id fields attached to its records."""
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger


# --------------------------------------------------------------------------- formats

# The attributes every LogRecord has; anything else on a record was given by
# the caller (``extra=``) and goes into the JSON object as a field of its own.
_STANDARD_ATTRS: Final = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys()
    | {"message", "asctime", "taskName", *CONTEXT_FIELDS}
)


def _iso_time(created: float) -> str:
    moment = datetime.datetime.fromtimestamp(created, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line.

    Fields: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, then
    ``agent_id``, ``room_id`` and ``message_id`` when set, ``exception`` (the
    traceback) when there is one, and any field given with ``extra=`` whose
    value is a string, number, boolean or None.
    """

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": _iso_time(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                data[name] = value
        for key, value in vars(record).items():
            plain = value is None or isinstance(value, str | int | float | bool)
            if plain and key not in _STANDARD_ATTRS and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            data["exception"] = record.exc_text
        if record.stack_info:
            data["stack"] = self.formatStack(record.stack_info)
        return json.dumps(data, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``time level logger [agent=… room=… message=…] message`` (only the ids
    that are set appear)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(band_ids)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        parts = []
        for name, label in (("agent_id", "agent"), ("room_id", "room"), ("message_id", "message")):
            value = getattr(record, name, None)
            if value is not None:
                parts.append(f"{label}={value}")
        record.__dict__["band_ids"] = f" [{' '.join(parts)}]" if parts else ""
        try:
            return super().format(record)
        finally:
            del record.__dict__["band_ids"]


class _BandHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler :func:`configure_logging` installs (found again to replace it)."""


def _resolve_level(level: int | str | None, environ: Mapping[str, str]) -> int:
    source = "level"
    if level is None:
        raw = (environ.get(ENV_LOG_LEVEL) or "").strip()
        if not raw:
            return logging.INFO
        level, source = raw, ENV_LOG_LEVEL
    if isinstance(level, bool):
        raise BandConfigError(f"{source} must be a level name or number, got {level!r}")
    if isinstance(level, int):
        return level
    if isinstance(level, str):
        text = level.strip()
        if text.isdigit():
            return int(text)
        value = logging.getLevelName(text.upper())
        if isinstance(value, int):
            return value
    raise BandConfigError(
        f"{source} must be DEBUG, INFO, WARNING, ERROR, CRITICAL or a number, got {level!r}"
    )


def _resolve_format(fmt: str | None, environ: Mapping[str, str]) -> LogFormat:
    source = "format"
    if fmt is None:
        raw = (environ.get(ENV_LOG_FORMAT) or "").strip()
        if not raw:
            return "text"
        fmt, source = raw, ENV_LOG_FORMAT
    text = fmt.strip().lower() if isinstance(fmt, str) else fmt
    if text == "text":
        return "text"
    if text == "json":
        return "json"
    raise BandConfigError(f"{source} must be 'text' or 'json', got {fmt!r}")


_PER_REQUEST_LOGGERS = ("httpx", "httpcore")


def configure_logging(
    level: int | str | None = None,
    format: LogFormat | None = None,
    *,
    stream: IO[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> logging.Handler:
    """Send log records to ``stream`` in the text or JSON format.

    Installs one handler on the root logger (so the records of adapters and of
    your own code are formatted alike) with a ``ContextFilter``, and sets
    the root logger's level. httpx's per-request lines (loggers ``httpx`` and
    ``httpcore``) show only at ``DEBUG``. Calling it again replaces the handler it installed
    before; handlers installed by anything else are left alone.

    Each setting is taken from the argument, else from the environment
    (``BAND_LOG_LEVEL``, ``BAND_LOG_FORMAT``), else the default (``INFO``,
    ``"text"``).

    Args:
        level: a level name (``"DEBUG"``, ``"info"``...) or number.
        format: ``"text"`` (human readable, ids in brackets) or ``"json"`` (one
            object per line, the ids as fields).
        stream: where to write (default ``sys.stderr``).
        environ: the environment to read (default ``os.environ``).

    Returns:
        The installed handler.

    Raises:
        BandConfigError: an unknown level or format (the message names the
            argument or the variable).
    """
    env = os.environ if environ is None else environ
    resolved_level = _resolve_level(level, env)
    resolved_format = _resolve_format(format, env)
    handler = _BandHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if resolved_format == "json" else TextFormatter())
    handler.addFilter(_FILTER)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _BandHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(resolved_level)
    # httpx logs every request at INFO: those lines drown the agent's own, so
    # they show only at DEBUG.
    for name in _PER_REQUEST_LOGGERS:
        logging.getLogger(name).setLevel(
            logging.NOTSET if resolved_level <= logging.DEBUG else logging.WARNING
        )
    return handler
