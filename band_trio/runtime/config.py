"""Agent configuration: the runtime's knobs (:class:`AgentConfig`) and the
connection settings (:class:`AgentSettings`).

Both are frozen and validated when built, so a bad value fails at construction
with a :class:`~band_trio.errors.BandConfigError` naming the setting, never
later inside a running room.

Reference: docs/reference/official-runtime.rst, docs/reference/protocol.rst.
"""

from __future__ import annotations

import enum
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit, urlunsplit

import attrs

from band_trio.errors import BandConfigError

__all__ = [
    "DEFAULT_HEALTH_HOST",
    "DEFAULT_HEALTH_LINK_DOWN_LIMIT",
    "DEFAULT_MAX_WORKING_STATE",
    "DEFAULT_REST_URL",
    "DEFAULT_TURN_TIMEOUT",
    "DEFAULT_WS_URL",
    "IN_MEMORY",
    "USER_STATE_DIR",
    "WS_PATH",
    "AgentConfig",
    "AgentSettings",
    "ConflictPolicy",
    "StateDirDefault",
    "default_state_root",
    "derive_ws_url",
]

DEFAULT_REST_URL: Final = "https://app.band.ai"
"""The production REST origin."""

WS_PATH: Final = "/api/v1/socket/websocket"
"""Path of the platform's WebSocket endpoint."""

DEFAULT_WS_URL: Final = "wss://app.band.ai" + WS_PATH
"""The production WebSocket URL."""

DEFAULT_TURN_TIMEOUT: Final = 900.0
"""The default ``AgentConfig.turn_timeout``: 15 minutes.

A turn that hangs (a model call that never answers, a tool that never returns)
would otherwise hold its room forever while the room shows "working". The
bound sits above the model clients' own request timeouts (10 minutes by
default for both the Anthropic and the OpenAI Python clients), so a slow model
call is ended by its client first, with an error the adapter can report, and
this deadline only catches what nothing else does. Raise it for agents whose
turns legitimately run longer (long tool chains); None removes it.
"""

DEFAULT_MAX_WORKING_STATE: Final = 900.0
"""The default ``AgentConfig.max_working_state``: keep-alives of the "working"
state stop after 15 minutes, the default turn timeout, so a turn that outlives
its deadline (or a deployment with no turn timeout) never shows "working" for
ever."""

DEFAULT_HEALTH_HOST: Final = "127.0.0.1"
"""The default ``AgentConfig.health_host``: loopback only."""

DEFAULT_HEALTH_LINK_DOWN_LIMIT: Final = 300.0
"""The default ``AgentConfig.health_link_down_limit``: five minutes without a
WebSocket (the reconnect backoff tops out well below it) fails ``/livez``."""

IN_MEMORY: Final = ":memory:"
"""``AgentConfig(state_dir=IN_MEMORY)`` keeps the claims ledger in memory only."""


class StateDirDefault(enum.Enum):
    """Sentinel type for the default state directory."""

    USER_STATE_DIR = "user-state-dir"


USER_STATE_DIR: Final = StateDirDefault.USER_STATE_DIR
"""The default ``state_dir``: ``<user state dir>/band-trio/<agent_id>``."""

LEDGER_FILE_NAME: Final = "ledger.sqlite3"

_SAFE_PATH_PART = re.compile(r"[^A-Za-z0-9._-]")


def default_state_root(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user directory band-trio keeps agent state under.

    ``$XDG_STATE_HOME/band-trio`` when set, else ``~/.local/state/band-trio``
    (``%LOCALAPPDATA%\\band-trio`` on Windows).
    """
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_STATE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "band-trio"
    if os.name == "nt" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "band-trio"
    return Path.home() / ".local" / "state" / "band-trio"


# --------------------------------------------------------------------------- validators


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BandConfigError(f"{name} must be a number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise BandConfigError(f"{name} must be a finite number > 0, got {value!r}")


def _non_negative(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BandConfigError(f"{name} must be a number, got {value!r}")
    if not (math.isfinite(value) and value >= 0):
        raise BandConfigError(f"{name} must be a finite number >= 0, got {value!r}")


def _v_positive(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    _positive(attribute.name, value)


def _v_non_negative(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    _non_negative(attribute.name, value)


def _v_optional_positive(_: Any, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None:
        _positive(attribute.name, value)


def _v_count(minimum: int) -> Any:
    def check(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise BandConfigError(f"{attribute.name} must be an integer, got {value!r}")
        if value < minimum:
            raise BandConfigError(f"{attribute.name} must be >= {minimum}, got {value!r}")

    return check


def _v_bool(_: Any, attribute: attrs.Attribute[Any], value: bool) -> None:
    if not isinstance(value, bool):
        raise BandConfigError(f"{attribute.name} must be True or False, got {value!r}")


ConflictPolicy = Literal["supersede", "reject"]


def _v_policy(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if value not in ("supersede", "reject"):
        raise BandConfigError(f"{attribute.name} must be 'supersede' or 'reject', got {value!r}")


def _v_optional_port(_: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise BandConfigError(
            f"{attribute.name} must be a TCP port (0..65535) or None, got {value!r}"
        )


def _v_host(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise BandConfigError(f"{attribute.name} must be a host name or address, got {value!r}")


def _to_delays(value: Any) -> tuple[float, ...]:
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise BandConfigError(f"join_retry_delays must be a sequence of seconds, got {value!r}")
    delays = tuple(value)
    for d in delays:
        _non_negative("join_retry_delays", d)
    return tuple(float(d) for d in delays)


def _to_state_dir(value: Any) -> Path | StateDirDefault | None:
    if value is None or value == IN_MEMORY:
        return None
    if isinstance(value, StateDirDefault):
        return value
    if isinstance(value, str | os.PathLike):
        path = Path(value)
        if not str(path):
            raise BandConfigError("state_dir must not be empty")
        return path
    raise BandConfigError(f"state_dir must be a path, None or ':memory:', got {value!r}")


# --------------------------------------------------------------------------- AgentConfig


@attrs.frozen(kw_only=True)
class AgentConfig:
    """Every knob of the agent runtime, with defaults that suit production.

    Durations are in seconds. :meth:`from_env` reads any of them from a
    ``BAND_<FIELD>`` variable; :meth:`Agent.create <band_trio.Agent.create>`
    and ``open_agent`` do so when no ``config`` is given.

    Attributes:
        max_attempts: how many times one message may be run before it is marked
            failed for good and stepped past (attempts, not retries: 3 means one
            run plus two retries). Remembered across restarts.
        turn_timeout: cancel a turn (handler included) after this long and treat
            it as a failure; None means no limit. Default
            :data:`DEFAULT_TURN_TIMEOUT` (15 minutes, above the model clients'
            own 10-minute request timeouts).
        shutdown_timeout: ONE global deadline for running turns to finish when
            the agent shuts down; then they are cancelled.
        cleanup_timeout: deadline for one ``on_cleanup`` call (shielded).
        inbox_size: bounded per-room inbox; when full, the room reconciles from
            ``/messages/next`` instead (counted as an overflow).
        max_held_events: events kept for a room that is joining but not yet
            routed (oldest dropped beyond this).
        max_parallel_joins: rooms joined at the same time.
        max_parallel_drains: rooms running their start-up or reconnect
            reconcile pass at the same time (the most recently active first).
        max_parallel_history_loads: rooms reading their history (the first turn
            of a session) at the same time. The others wait before reading,
            so when many rooms start a turn at once they do not all hold a
            loaded history while their turns wait: the memory of loaded
            histories follows the turns in progress, not the number of
            rooms that started.
        join_retry_delays: waits between retries of a failed room join or of
            a lost agent topic's rejoin (control, rooms, contacts); once they
            are spent, the join is tried every ``idle_resync_interval`` and at
            each reconnect until it succeeds.
        idle_resync_interval: base interval of the periodic ``/next`` reconcile.
        idle_resync_max_interval: the interval doubles while ``/next`` is empty,
            up to this (raised to at least the base).
        stopped_resync_interval: probe interval while the room is stopped;
            None means the base interval.
        retry_delay: first wait before a deferred message (refused claim,
            unconfirmed ack, non-final failure) is tried again; it doubles up
            to ``max_retry_delay``.
        max_retry_delay: the longest wait before a deferred message is tried
            again (capped by ``idle_resync_interval``): a room never waits
            longer on a mark the platform did not confirm.
        unsure_post_timeout: seconds a write of the tools (a post, a room, a
            memory, a task, ...) whose outcome is unknown (a 5xx, a reset or a
            timeout after sending) is settled inside the tool call (read back,
            sent again only when absent) before the tool raises its error
            (docs: "Writes under faults").
        idle_reconcile_rate: the ceiling, in calls per second for the whole
            agent, of idle reconciles (the periodic ``/next`` checks of rooms
            with nothing to do), handed out stalest room first. A push a room
            missed is noticed at most ``idle_resync_max_interval + rooms /
            idle_reconcile_rate`` seconds after that room's previous reconcile.
        gc_freeze_min_rooms: once start-up has settled (every room joined
            and reconciled) with at least this many rooms, collect garbage once
            and then ``gc.freeze()`` the process, so the rooms' long-lived
            state is left out of every later collection (a full collection
            over ten thousand rooms stops the event loop for hundreds of
            milliseconds). It freezes anew once a reconnect's reconciles settled;
            it unfreezes when more than a quarter of the rooms frozen have
            been removed (and freezes again at the next settle), and when it
            stops serving. 0 turns this off. The operations guide ("The
            garbage collector") says how several agents in one process
            share it.
        enable_context_hydration: load room history on a session bootstrap.
        max_history_messages: at most this many history messages (the newest
            ones before the trigger) are given to the adapter.
        history_page_size: page size used on the context endpoint (1-100).
        max_history_pages: ceiling on context pages read for one bootstrap.
        enable_working_state: report "working" activity during message turns.
        working_grace: seconds a turn runs before the first ``working: true``;
            a turn that ends sooner sends no activity at all (0 reports at once).
        working_keep_alive: re-send ``working: true`` this often (must be < 5,
            half the platform's 10 s expiry).
        working_request_timeout: timeout of each activity POST (< keep-alive).
        max_working_state: stop keep-alives after this long; None means for the
            whole turn. Default :data:`DEFAULT_MAX_WORKING_STATE` (15 minutes);
            raise it together with ``turn_timeout``.
        report_turn_failures: post one generic ``error`` event in the room when
            a message fails for the last time.
        state_dir: where the durable claims ledger lives.
            :data:`USER_STATE_DIR` (default) means
            ``<user state dir>/band-trio/<agent_id>``; a path means that
            directory; None or ``":memory:"`` keeps the ledger in memory (a
            restart then forgets replies, acks and failed messages).
        completed_cache_size: completed message ids remembered per room (LRU).
        failed_cache_size: permanently failed ids remembered per room (oldest
            evicted first).
        released_cache_size: completed, failed and known-reply ids kept in all
            for the rooms the agent has left (so a room added again does not
            run its messages again); beyond it the least recently active left
            rooms lose theirs, whole rooms at a time. Served rooms never do.
            0 drops a room's ids when it is left.
        control_dedupe_size: control-signal correlation ids remembered (LRU).
        me_retry_delays: waits between retries of ``GET /agent/me`` on HTTP 429.
        conflict_policy: ``"supersede"`` (default: a new connection evicts an
            older one) or ``"reject"`` (ask the platform to refuse ours if
            another connection exists; first connect only).
        health_port: serve ``GET /livez``, ``/readyz`` and ``/metrics`` on this
            TCP port while the agent runs (0: a free port, see
            :attr:`Agent.health_address <band_trio.Agent.health_address>`);
            None (default) serves nothing. See :mod:`band_trio.observe`.
        health_host: the interface of that listener: loopback unless told
            otherwise (``0.0.0.0`` in a container whose probes come from
            outside it).
        health_link_down_limit: ``/livez`` fails once the WebSocket has been
            down (or not yet up, from the start) for longer than this; the
            reconnect policy keeps trying meanwhile, so this is what tells an
            orchestrator that a restart may help.
    """

    max_attempts: int = attrs.field(default=3, validator=_v_count(1))
    turn_timeout: float | None = attrs.field(
        default=DEFAULT_TURN_TIMEOUT, validator=_v_optional_positive
    )
    shutdown_timeout: float = attrs.field(default=30.0, validator=_v_non_negative)
    cleanup_timeout: float = attrs.field(default=10.0, validator=_v_positive)
    inbox_size: int = attrs.field(default=64, validator=_v_count(1))
    max_held_events: int = attrs.field(default=256, validator=_v_count(1))
    max_parallel_joins: int = attrs.field(default=8, validator=_v_count(1))
    max_parallel_drains: int = attrs.field(default=16, validator=_v_count(1))
    max_parallel_history_loads: int = attrs.field(default=16, validator=_v_count(1))
    join_retry_delays: tuple[float, ...] = attrs.field(
        default=(1.0, 2.0, 4.0, 8.0, 16.0), converter=_to_delays
    )
    idle_resync_interval: float = attrs.field(default=60.0, validator=_v_positive)
    idle_resync_max_interval: float = attrs.field(default=120.0, validator=_v_positive)
    stopped_resync_interval: float | None = attrs.field(
        default=None, validator=_v_optional_positive
    )
    retry_delay: float = attrs.field(default=1.0, validator=_v_positive)
    max_retry_delay: float = attrs.field(default=4.0, validator=_v_positive)
    unsure_post_timeout: float = attrs.field(default=60.0, validator=_v_positive)
    idle_reconcile_rate: float = attrs.field(default=4.0, validator=_v_positive)
    gc_freeze_min_rooms: int = attrs.field(default=1000, validator=_v_count(0))
    enable_context_hydration: bool = attrs.field(default=True, validator=_v_bool)
    max_history_messages: int = attrs.field(default=100, validator=_v_count(0))
    history_page_size: int = attrs.field(default=100, validator=_v_count(1))
    max_history_pages: int = attrs.field(default=50, validator=_v_count(1))
    enable_working_state: bool = attrs.field(default=True, validator=_v_bool)
    working_grace: float = attrs.field(default=1.0, validator=_v_non_negative)
    working_keep_alive: float = attrs.field(default=3.0, validator=_v_positive)
    working_request_timeout: float = attrs.field(default=2.0, validator=_v_positive)
    max_working_state: float | None = attrs.field(
        default=DEFAULT_MAX_WORKING_STATE, validator=_v_optional_positive
    )
    report_turn_failures: bool = attrs.field(default=True, validator=_v_bool)
    state_dir: Path | StateDirDefault | None = attrs.field(
        default=USER_STATE_DIR, converter=_to_state_dir
    )
    completed_cache_size: int = attrs.field(default=500, validator=_v_count(1))
    failed_cache_size: int = attrs.field(default=10_000, validator=_v_count(1))
    released_cache_size: int = attrs.field(default=10_000, validator=_v_count(0))
    control_dedupe_size: int = attrs.field(default=256, validator=_v_count(1))
    me_retry_delays: tuple[float, ...] = attrs.field(
        default=(1.0, 2.0, 4.0, 8.0, 16.0), converter=_to_delays
    )
    conflict_policy: ConflictPolicy = attrs.field(default="supersede", validator=_v_policy)
    health_port: int | None = attrs.field(default=None, validator=_v_optional_port)
    health_host: str = attrs.field(default=DEFAULT_HEALTH_HOST, validator=_v_host)
    health_link_down_limit: float = attrs.field(
        default=DEFAULT_HEALTH_LINK_DOWN_LIMIT, validator=_v_positive
    )

    def __attrs_post_init__(self) -> None:
        if self.history_page_size > 100:
            raise BandConfigError(
                f"history_page_size must be <= 100 (the platform's maximum), "
                f"got {self.history_page_size}"
            )
        if self.enable_working_state:
            if self.working_keep_alive >= 5:
                raise BandConfigError(
                    "working_keep_alive must be < 5 s (half the platform's 10 s expiry), "
                    f"got {self.working_keep_alive}"
                )
            if self.working_request_timeout >= self.working_keep_alive:
                raise BandConfigError(
                    "working_request_timeout must be shorter than working_keep_alive, "
                    f"got {self.working_request_timeout} >= {self.working_keep_alive}"
                )
        if self.idle_resync_max_interval < self.idle_resync_interval:
            # Raised to the base, as documented (never an error).
            object.__setattr__(self, "idle_resync_max_interval", self.idle_resync_interval)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> AgentConfig:
        """A config whose fields may come from ``BAND_<FIELD>`` variables.

        For example ``BAND_MAX_ATTEMPTS=5`` or ``BAND_TURN_TIMEOUT=120``.
        Explicit keyword arguments win; empty variables are ignored; names match
        case-insensitively. Unlike the official SDK, unprefixed names (such as
        ``MAX_ATTEMPTS``) are never read, so unrelated settings of the host
        process cannot collide (official runtime, "Weak spots" 15).

        Values: integers and numbers as usual; booleans as
        ``1/true/yes/on`` or ``0/false/no/off``; ``none`` for an optional
        duration (``BAND_TURN_TIMEOUT=none``); delays as comma-separated
        seconds; ``BAND_STATE_DIR`` a path or ``:memory:``.

        Raises:
            BandConfigError: a variable does not parse or its value is invalid;
                the message names the variable.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in attrs.fields(cls):
            if field.name in overrides:
                continue
            var = f"BAND_{field.name.upper()}"
            raw = _env_lookup(env, var)
            if raw is None:
                continue
            try:
                values[field.name] = _parse_env_value(field.name, raw)
            except ValueError as exc:
                raise BandConfigError(f"{var}: {exc}") from None
        values.update(overrides)
        try:
            return cls(**values)
        except BandConfigError as exc:
            text = str(exc)
            names = sorted((n for n in values if n in text and n not in overrides), key=text.find)
            if names:
                raise BandConfigError(f"BAND_{names[0].upper()}: {exc}") from None
            raise

    @property
    def effective_stopped_resync_interval(self) -> float:
        """The probe interval while stopped (the base interval when unset)."""
        if self.stopped_resync_interval is None:
            return self.idle_resync_interval
        return self.stopped_resync_interval

    @property
    def graceful_shutdown_bound(self) -> float:
        """The longest a graceful shutdown takes, in seconds: the drain
        (``shutdown_timeout``), the rooms' cleanups (concurrent), the adapter's
        ``cleanup_all``, and a second for each step's bookkeeping. Give a
        process manager a stop timeout above it (52 s with the defaults)."""
        return self.shutdown_timeout + 2 * self.cleanup_timeout + 2

    @property
    def in_memory(self) -> bool:
        """True when the claims ledger is kept in memory only."""
        return self.state_dir is None

    def resolve_state_dir(
        self, agent_id: str, *, environ: Mapping[str, str] | None = None
    ) -> Path | None:
        """The directory of this agent's durable state, or None for in-memory.

        The default is ``<default_state_root()>/<agent_id>`` (the agent id made
        safe for a file name). The directory is not created here.

        Raises:
            BandConfigError: ``agent_id`` is empty.
        """
        if self.state_dir is None:
            return None
        if isinstance(self.state_dir, Path):
            return self.state_dir
        if not agent_id:
            raise BandConfigError("agent_id must not be empty")
        return default_state_root(environ) / _SAFE_PATH_PART.sub("_", agent_id)

    def ledger_path(
        self, agent_id: str, *, environ: Mapping[str, str] | None = None
    ) -> Path | None:
        """The SQLite file of the claims ledger, or None when in memory."""
        directory = self.resolve_state_dir(agent_id, environ=environ)
        return None if directory is None else directory / LEDGER_FILE_NAME


_INT_FIELDS: Final = frozenset(
    {
        "max_attempts",
        "inbox_size",
        "max_held_events",
        "max_parallel_joins",
        "max_parallel_drains",
        "max_parallel_history_loads",
        "gc_freeze_min_rooms",
        "max_history_messages",
        "history_page_size",
        "max_history_pages",
        "completed_cache_size",
        "failed_cache_size",
        "released_cache_size",
        "control_dedupe_size",
        "health_port",
    }
)
_OPTIONAL_INT_FIELDS: Final = frozenset({"health_port"})
_OPTIONAL_FLOAT_FIELDS: Final = frozenset(
    {"turn_timeout", "stopped_resync_interval", "max_working_state"}
)
_BOOL_FIELDS: Final = frozenset(
    {
        "enable_context_hydration",
        "enable_working_state",
        "report_turn_failures",
    }
)
_DELAY_FIELDS: Final = frozenset({"join_retry_delays", "me_retry_delays"})
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})


def _parse_env_value(name: str, raw: str) -> Any:
    """Parse one ``BAND_<FIELD>`` value; ValueError says what is wrong."""
    text = raw.strip()
    if name in _OPTIONAL_INT_FIELDS and text.lower() == "none":
        return None
    if name in _INT_FIELDS:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"expected an integer, got {raw!r}") from None
    if name in _BOOL_FIELDS:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(f"expected true or false, got {raw!r}")
    if name in _DELAY_FIELDS:
        try:
            return tuple(float(part) for part in text.split(",") if part.strip())
        except ValueError:
            raise ValueError(f"expected comma-separated seconds, got {raw!r}") from None
    if name in ("state_dir", "health_host"):
        return text
    if name == "conflict_policy":
        return text.lower()
    if name in _OPTIONAL_FLOAT_FIELDS and text.lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"expected a number of seconds, got {raw!r}") from None


# --------------------------------------------------------------------------- AgentSettings

_ENV_AGENT_ID = "BAND_AGENT_ID"
_ENV_API_KEY = "BAND_API_KEY"
_ENV_REST_URL = "BAND_REST_URL"
_ENV_WS_URL = "BAND_WS_URL"


def _env_lookup(environ: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive lookup; an exact match wins; empty values count as unset."""
    value = environ.get(name)
    if value is None:
        upper = name.upper()
        for key, candidate in environ.items():
            if key.upper() == upper:
                value = candidate
                break
    if value is None:
        return None
    value = value.strip()
    return value or None


def _check_url(url: str, *, schemes: tuple[str, ...], source: str) -> str:
    parts = urlsplit(url)
    if parts.scheme.lower() not in schemes or not parts.netloc:
        wanted = " or ".join(f"{s}://" for s in schemes)
        raise BandConfigError(f"{source} must be a {wanted} URL with a host, got {url!r}")
    if parts.username is not None or parts.password is not None:
        # Credentials in a URL end up in logs; the API key travels in a header.
        raise BandConfigError(f"{source} must not contain user credentials")
    return url


def derive_ws_url(rest_url: str) -> str:
    """The WebSocket URL that goes with a REST origin (protocol, "URL").

    Same host and port; ``http`` becomes ``ws`` and ``https`` becomes ``wss``;
    the path is the platform's socket path.
    """
    parts = urlsplit(rest_url)
    scheme = {"http": "ws", "https": "wss"}[parts.scheme.lower()]
    return urlunsplit((scheme, parts.netloc, WS_PATH, "", ""))


def _derive_rest_url(ws_url: str) -> str:
    parts = urlsplit(ws_url)
    scheme = {"ws": "http", "wss": "https"}[parts.scheme.lower()]
    return urlunsplit((scheme, parts.netloc, "", "", ""))


@attrs.frozen(kw_only=True)
class AgentSettings:
    """Who the agent is and where the platform lives.

    Build it with :meth:`from_env` to read ``BAND_AGENT_ID``, ``BAND_API_KEY``,
    ``BAND_REST_URL`` and ``BAND_WS_URL``. The API key never appears in the repr.

    Attributes:
        agent_id: the agent's id.
        api_key: the agent's API key (kept out of reprs and errors).
        rest_url: REST origin, ``http(s)://host[:port]`` (no trailing slash).
        ws_url: WebSocket URL, ``ws(s)://host[:port]/api/v1/socket/websocket``.
    """

    agent_id: str
    api_key: str = attrs.field(repr=lambda _: "'***'")
    rest_url: str = DEFAULT_REST_URL
    ws_url: str = DEFAULT_WS_URL

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.agent_id, str) or not self.agent_id.strip():
            raise BandConfigError("agent_id must be a non-empty string")
        if not isinstance(self.api_key, str) or not self.api_key.strip():
            raise BandConfigError("api_key must be a non-empty string")
        _check_url(self.rest_url, schemes=("http", "https"), source="rest_url")
        _check_url(self.ws_url, schemes=("ws", "wss"), source="ws_url")
        object.__setattr__(self, "rest_url", self.rest_url.rstrip("/"))

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        agent_id: str | None = None,
        api_key: str | None = None,
        rest_url: str | None = None,
        ws_url: str | None = None,
    ) -> AgentSettings:
        """Settings from explicit arguments, then the environment, then defaults.

        Each value is resolved on its own: an explicit non-empty argument wins,
        then the environment variable (name matched case-insensitively; an
        empty value counts as unset). URLs then default as follows: when only
        the REST URL is known, the WebSocket URL is derived from it (same host,
        ``ws``/``wss``, the socket path); when only the WebSocket URL is known,
        the REST origin is derived from it; when neither is, the production
        URLs are used.

        Args:
            environ: the environment to read (default ``os.environ``).
            agent_id: overrides ``BAND_AGENT_ID``.
            api_key: overrides ``BAND_API_KEY``.
            rest_url: overrides ``BAND_REST_URL``.
            ws_url: overrides ``BAND_WS_URL``.

        Raises:
            BandConfigError: a required value is missing, or a URL is invalid;
                the message names the variable (never the key's value).
        """
        env = os.environ if environ is None else environ

        def pick(explicit: str | None, name: str) -> tuple[str | None, str]:
            if explicit is not None and explicit.strip():
                return explicit.strip(), name.lower().removeprefix("band_")
            return _env_lookup(env, name), name

        agent, _ = pick(agent_id, _ENV_AGENT_ID)
        key, _ = pick(api_key, _ENV_API_KEY)
        rest, rest_src = pick(rest_url, _ENV_REST_URL)
        ws, ws_src = pick(ws_url, _ENV_WS_URL)
        if agent is None:
            raise BandConfigError(f"missing agent id: pass agent_id or set {_ENV_AGENT_ID}")
        if key is None:
            raise BandConfigError(f"missing API key: pass api_key or set {_ENV_API_KEY}")
        if rest is not None:
            _check_url(rest, schemes=("http", "https"), source=rest_src)
        if ws is not None:
            _check_url(ws, schemes=("ws", "wss"), source=ws_src)
        if rest is None and ws is None:
            rest, ws = DEFAULT_REST_URL, DEFAULT_WS_URL
        elif ws is None:
            assert rest is not None
            ws = derive_ws_url(rest)
        elif rest is None:
            rest = _derive_rest_url(ws)
        return cls(agent_id=agent, api_key=key, rest_url=rest, ws_url=ws)

    def redacted(self) -> dict[str, str]:
        """The settings as a dict safe to log (the key replaced by ``***``)."""
        return {
            "agent_id": self.agent_id,
            "api_key": "***",
            "rest_url": self.rest_url,
            "ws_url": self.ws_url,
        }
