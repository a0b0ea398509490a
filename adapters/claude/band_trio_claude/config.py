"""``ClaudeAgentConfig``: the settings of a :class:`~band_trio_claude.ClaudeAgentAdapter`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from band_trio import BandConfigError

__all__ = [
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_INTERRUPT_TIMEOUT",
    "DEFAULT_MAX_BUFFER_SIZE",
    "DEFAULT_MAX_LIVE_CLIENTS",
    "DEFAULT_MODEL",
    "DEFAULT_TURN_TIMEOUT",
    "PERMISSION_MODES",
    "ClaudeAgentConfig",
]

DEFAULT_MODEL: Final = "claude-sonnet-5-5"
"""The model the CLI is pinned to unless the config names another (the CLI's own
default can change under a deployed agent)."""
DEFAULT_TURN_TIMEOUT: Final = 600.0
"""Seconds one turn may run before Claude is interrupted and the turn fails."""
DEFAULT_INTERRUPT_TIMEOUT: Final = 5.0
"""Seconds an interrupted CLI has to end its turn before it is killed."""
DEFAULT_CLOSE_TIMEOUT: Final = 5.0
"""Seconds a closing CLI has to exit after its input ends before it is killed."""
DEFAULT_IDLE_TIMEOUT: Final = 900.0
"""Seconds a room's CLI is kept without a turn."""
DEFAULT_MAX_LIVE_CLIENTS: Final = 16
"""CLI processes one agent keeps at most (least recently used room closed first)."""
DEFAULT_MAX_BUFFER_SIZE: Final = 10 * 1024 * 1024
"""Bytes of one line of CLI output: twice the largest inline image (the SDK's
1 MiB default ends the connection on one large image)."""

PERMISSION_MODES: Final = frozenset(
    {"default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"}
)
"""The CLI's permission modes."""


def _positive_seconds(name: str, *, optional: bool = False) -> Any:
    def check(_inst: object, _attr: object, value: object) -> None:
        if value is None and optional:
            return
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise BandConfigError(f"{name} must be a positive number of seconds; got {value!r}")

    return check


def _positive_int(name: str) -> Any:
    def check(_inst: object, _attr: object, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise BandConfigError(f"{name} must be a positive integer; got {value!r}")

    return check


def _optional_text(name: str) -> Any:
    def check(_inst: object, _attr: object, value: object) -> None:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise BandConfigError(f"{name} must be a non-empty string or None; got {value!r}")

    return check


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    try:
        names = tuple(value)
    except TypeError:
        raise BandConfigError(f"expected tool names; got {type(value).__name__}") from None
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise BandConfigError(f"tool names are non-empty strings; got {name!r}")
    return names


def _permission_mode(_inst: object, _attr: object, value: Any) -> None:
    if value is not None and value not in PERMISSION_MODES:
        raise BandConfigError(
            f"permission_mode must be one of {sorted(PERMISSION_MODES)} or None; got {value!r}"
        )


def _env(value: Any) -> Mapping[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise BandConfigError("env must map strings to strings")
    return dict(value)


def _path_or_none(value: Any) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str | Path):
        raise BandConfigError(f"expected a path; got {type(value).__name__}")
    return Path(value)


@attrs.frozen(kw_only=True)
class ClaudeAgentConfig:
    """Settings of a :class:`~band_trio_claude.ClaudeAgentAdapter` (immutable).

    Attributes:
        model: the Claude model the CLI uses.
        system_prompt: a complete system prompt replacing the rendered one
            (the Band section is then yours to write).
        custom_section: text added to the rendered system prompt.
        include_base_instructions: include the Band environment, security,
            activation, delegation and relaying sections.
        claude_tools: Claude Code's own tools to offer (``"Read"``,
            ``"Bash"``, ``"WebFetch"``, ...). Empty (the default): none, so
            the agent can act only through the Band tools.
        allowed_tools: tools that run without asking for permission, passed
            to the CLI (the Band tools are always allowed).
        disallowed_tools: tools the CLI must never use.
        permission_mode: the CLI's permission mode for the tools not allowed
            outright (None: the CLI's default, which refuses them here: no
            one is there to ask).
        cwd: the working directory of every room's CLI; None: the agent's
            working directory, unless ``workspace_for_room`` is given.
        workspace_for_room: the working directory of a room's CLI, from the
            room id (created when missing); not together with ``cwd``.
        cli_path: the ``claude`` executable (None: the one bundled with
            ``claude-agent-sdk``, else ``claude`` on ``PATH``).
        env: environment variables for the CLI only (``ANTHROPIC_API_KEY``,
            ``ANTHROPIC_BASE_URL``, ...).
        max_thinking_tokens: turn extended thinking on with this budget.
        max_buffer_size: the longest line of CLI output, in bytes.
        turn_timeout: seconds one turn may run before Claude is interrupted
            and the turn fails (None: no bound but the runtime's).
        interrupt_timeout: seconds an interrupted turn has to end before the
            CLI is killed (its conversation id is kept).
        close_timeout: seconds a closing CLI has to exit after its input
            ends before its process group is killed.
        idle_timeout: seconds a room's CLI is kept without a turn (None:
            until the room is left or the agent stops).
        max_live_clients: CLI processes kept at once; past it the least
            recently used idle room's CLI is closed (it resumes later).

    Raises:
        BandConfigError: a value of the wrong type or out of range, or both
            ``cwd`` and ``workspace_for_room``.
    """

    model: str | None = attrs.field(default=DEFAULT_MODEL, validator=_optional_text("model"))
    system_prompt: str | None = attrs.field(default=None, validator=_optional_text("system_prompt"))
    custom_section: str = ""
    include_base_instructions: bool = True
    claude_tools: tuple[str, ...] = attrs.field(default=(), converter=_names)
    allowed_tools: tuple[str, ...] = attrs.field(default=(), converter=_names)
    disallowed_tools: tuple[str, ...] = attrs.field(default=(), converter=_names)
    permission_mode: str | None = attrs.field(default=None, validator=_permission_mode)
    cwd: Path | None = attrs.field(default=None, converter=_path_or_none)
    workspace_for_room: Callable[[str], str | Path] | None = None
    cli_path: Path | None = attrs.field(default=None, converter=_path_or_none)
    env: Mapping[str, str] = attrs.field(factory=dict, converter=_env, repr=False)
    max_thinking_tokens: int | None = None
    max_buffer_size: int = attrs.field(
        default=DEFAULT_MAX_BUFFER_SIZE, validator=_positive_int("max_buffer_size")
    )
    turn_timeout: float | None = attrs.field(
        default=DEFAULT_TURN_TIMEOUT, validator=_positive_seconds("turn_timeout", optional=True)
    )
    interrupt_timeout: float = attrs.field(
        default=DEFAULT_INTERRUPT_TIMEOUT, validator=_positive_seconds("interrupt_timeout")
    )
    close_timeout: float = attrs.field(
        default=DEFAULT_CLOSE_TIMEOUT, validator=_positive_seconds("close_timeout")
    )
    idle_timeout: float | None = attrs.field(
        default=DEFAULT_IDLE_TIMEOUT, validator=_positive_seconds("idle_timeout", optional=True)
    )
    max_live_clients: int = attrs.field(
        default=DEFAULT_MAX_LIVE_CLIENTS, validator=_positive_int("max_live_clients")
    )

    def __attrs_post_init__(self) -> None:
        if self.cwd is not None and self.workspace_for_room is not None:
            raise BandConfigError("set either cwd or workspace_for_room, not both")
        if self.workspace_for_room is not None and not callable(self.workspace_for_room):
            raise BandConfigError("workspace_for_room must be a function of the room id")
        if self.max_thinking_tokens is not None:
            _positive_int("max_thinking_tokens")(self, None, self.max_thinking_tokens)

    def workdir(self, room_id: str) -> Path | None:
        """The working directory of ``room_id``'s CLI (created when missing), or None."""
        if self.workspace_for_room is not None:
            path = Path(self.workspace_for_room(room_id))
            path.mkdir(parents=True, exist_ok=True)
            return path
        return self.cwd
