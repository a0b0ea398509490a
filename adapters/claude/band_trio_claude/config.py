"""``ClaudeAgentConfig``: the settings of a :class:`~band_trio_claude.ClaudeAgentAdapter`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from band_trio import BandConfigError
from band_trio.adapter import (
    as_dict,
    as_path,
    flag,
    function,
    instance_of,
    one_of,
    optional,
    positive_int,
    room_workdir,
    seconds,
    string_map,
    text,
)

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

    model: str | None = attrs.field(
        default=DEFAULT_MODEL, validator=optional(text("model", blank=False))
    )
    system_prompt: str | None = attrs.field(
        default=None, validator=optional(text("system_prompt", blank=False))
    )
    custom_section: str = attrs.field(default="", validator=text("custom_section"))
    include_base_instructions: bool = attrs.field(
        default=True, validator=flag("include_base_instructions")
    )
    claude_tools: tuple[str, ...] = attrs.field(default=(), converter=_names)
    allowed_tools: tuple[str, ...] = attrs.field(default=(), converter=_names)
    disallowed_tools: tuple[str, ...] = attrs.field(default=(), converter=_names)
    permission_mode: str | None = attrs.field(
        default=None, validator=optional(one_of("permission_mode", PERMISSION_MODES))
    )
    cwd: Path | None = attrs.field(
        default=None,
        converter=as_path,
        validator=optional(instance_of("cwd", Path)),
    )
    workspace_for_room: Callable[[str], str | Path] | None = attrs.field(
        default=None, validator=optional(function("workspace_for_room", of="the room id"))
    )
    cli_path: Path | None = attrs.field(
        default=None,
        converter=as_path,
        validator=optional(instance_of("cli_path", Path)),
    )
    env: Mapping[str, str] = attrs.field(
        factory=dict, converter=as_dict, validator=string_map("env"), repr=False
    )
    max_thinking_tokens: int | None = attrs.field(
        default=None, validator=optional(positive_int("max_thinking_tokens"))
    )
    max_buffer_size: int = attrs.field(
        default=DEFAULT_MAX_BUFFER_SIZE, validator=positive_int("max_buffer_size")
    )
    turn_timeout: float | None = attrs.field(
        default=DEFAULT_TURN_TIMEOUT, validator=optional(seconds("turn_timeout"))
    )
    interrupt_timeout: float = attrs.field(
        default=DEFAULT_INTERRUPT_TIMEOUT, validator=seconds("interrupt_timeout")
    )
    close_timeout: float = attrs.field(
        default=DEFAULT_CLOSE_TIMEOUT, validator=seconds("close_timeout")
    )
    idle_timeout: float | None = attrs.field(
        default=DEFAULT_IDLE_TIMEOUT, validator=optional(seconds("idle_timeout"))
    )
    max_live_clients: int = attrs.field(
        default=DEFAULT_MAX_LIVE_CLIENTS, validator=positive_int("max_live_clients")
    )

    def __attrs_post_init__(self) -> None:
        if self.cwd is not None and self.workspace_for_room is not None:
            raise BandConfigError("set either cwd or workspace_for_room, not both")

    def workdir(self, room_id: str) -> Path | None:
        """The working directory of ``room_id``'s CLI (created when missing), or None."""
        return room_workdir(room_id, cwd=self.cwd, workspace_for_room=self.workspace_for_room)
