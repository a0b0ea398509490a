"""``CodexConfig``: the settings of a :class:`~band_trio_codex.CodexAdapter`."""

from __future__ import annotations

import shutil
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
    "APPROVAL_POLICIES",
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_INTERRUPT_TIMEOUT",
    "DEFAULT_MAX_LIVE_PROCESSES",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_TURN_TIMEOUT",
    "SANDBOX_MODES",
    "ApprovalSettings",
    "CodexConfig",
]

DEFAULT_TURN_TIMEOUT: Final = 180.0
"""Seconds one turn may run before Codex is interrupted and the turn fails
(the official adapter's default)."""
DEFAULT_REQUEST_TIMEOUT: Final = 30.0
"""Seconds any one JSON-RPC request to the app-server may take."""
DEFAULT_INTERRUPT_TIMEOUT: Final = 5.0
"""Seconds an interrupted turn has to end before the app-server is killed."""
DEFAULT_CLOSE_TIMEOUT: Final = 5.0
"""Seconds a closing app-server has after its input ends, and again after
SIGTERM, before its process group is killed."""
DEFAULT_IDLE_TIMEOUT: Final = 900.0
"""Seconds a room's app-server is kept without a turn."""
DEFAULT_MAX_LIVE_PROCESSES: Final = 16
"""App-server processes one agent keeps at most (least recently used room closed first)."""

APPROVAL_POLICIES: Final = frozenset({"never", "on-request", "untrusted"})
"""Codex's approval policies (``AskForApproval``)."""
SANDBOX_MODES: Final = frozenset({"read-only", "workspace-write", "danger-full-access"})
"""Codex's sandbox modes (``SandboxMode``)."""


def _command(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str | Path):
        value = (value,)
    try:
        parts = tuple(str(part) if isinstance(part, Path) else part for part in value)
    except TypeError:
        raise BandConfigError(f"command must be a sequence of strings; got {value!r}") from None
    if not parts or not all(isinstance(part, str) and part for part in parts):
        raise BandConfigError(f"command must be a non-empty sequence of strings; got {value!r}")
    return parts


def _participants(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        value = (value,)
    try:
        names = frozenset(value)
    except TypeError:
        raise BandConfigError(
            f"approvers must be participant ids or handles; got {value!r}"
        ) from None
    if not all(isinstance(name, str) and name.strip() for name in names):
        raise BandConfigError("approvers must be non-empty strings")
    return frozenset(name.lstrip("@") for name in names)


@attrs.frozen(kw_only=True)
class ApprovalSettings:
    """Whose messages may lead Codex to run what needs an approval.

    With the default approval policy ``"never"`` Codex asks nothing and these
    settings are not needed. Otherwise each approval request Codex makes in a
    turn is decided at once on the authority of the participant whose message
    the turn answers: accepted when that is the room's owner
    (``owner_approves``) or one of ``approvers`` (ids or handles), declined
    for anyone else, and posted in the room as a notice either way. No
    message in the room can widen the sandbox (it is the config's), and
    without ``approval_timeout`` there is no approval command.

    With ``approval_timeout`` set, a request made in a turn answering anyone
    else is not declined at once: the adapter posts a notice naming the
    request and a short id, mentioning who may decide, and waits at most
    ``approval_timeout`` seconds for ``/approve <id>`` or ``/deny <id>`` from
    one of them (recognised by participant id, never by display name; the
    same words from anyone else are ignored). The turn's own deadline
    (``turn_timeout``) is paused while an approval is decided, so the wait
    is bounded by ``approval_timeout`` alone; no answer in time declines.
    The reply, when the runtime later hands it over as a message, starts no
    Codex turn.

    Attributes:
        approvers: participant ids or handles whose requests are approved,
            besides the owner's, and who may answer an approval wait.
        owner_approves: the room's owner's requests are approved (and the
            owner may answer an approval wait).
        approval_timeout: seconds to wait for an authorised ``/approve`` or
            ``/deny``; None (the default): decline at once, no wait.

    Raises:
        BandConfigError: a value of the wrong type or out of range, or nobody
            who could approve.
    """

    approvers: frozenset[str] = attrs.field(factory=frozenset, converter=_participants)
    owner_approves: bool = attrs.field(default=True, validator=flag("owner_approves"))
    approval_timeout: float | None = attrs.field(
        default=None, validator=optional(seconds("approval_timeout"))
    )

    def __attrs_post_init__(self) -> None:
        if not self.owner_approves and not self.approvers:
            raise BandConfigError("approvals need the owner or at least one named approver")


@attrs.frozen(kw_only=True)
class CodexConfig:
    """Settings of a :class:`~band_trio_codex.CodexAdapter` (immutable).

    Attributes:
        command: the app-server command line (default: ``codex_path`` or
            ``codex`` on ``PATH``, then ``app-server``); a fake server in tests.
        codex_path: the ``codex`` executable (None: ``codex`` on ``PATH``).
        config_overrides: ``-c key=value`` settings given to ``codex`` (the
            model provider, say); values are TOML.
        env: environment variables for the app-server only, over the agent's
            (``OPENAI_API_KEY``, ``CODEX_HOME``, ...).
        model: the Codex model (None: the app-server's default).
        system_prompt: a complete system prompt replacing the rendered one.
        custom_section: text added to the rendered system prompt.
        include_base_instructions: include the Band environment, security,
            activation, delegation and relaying sections.
        cwd: the working directory of every room's app-server; None: the
            agent's, unless ``workspace_for_room`` is given.
        workspace_for_room: the working directory of a room's app-server,
            from the room id (created when missing); not together with ``cwd``.
        approval_policy: Codex's approval policy; ``"never"`` (the default)
            needs no human.
        sandbox: Codex's sandbox mode for new threads (None: Codex's default).
        approvals: whose requests Codex's approval requests are granted for
            (required unless the approval policy is ``"never"``).
        turn_timeout: seconds one turn may run before Codex is interrupted
            and the turn fails.
        request_timeout: seconds any one JSON-RPC request may take.
        interrupt_timeout: seconds an interrupted turn has to end before the
            app-server is killed (the thread id is kept).
        close_timeout: seconds a closing app-server has after its input ends,
            and again after SIGTERM, before its process group is killed.
        idle_timeout: seconds a room's app-server is kept without a turn
            (None: until the room is left or the agent stops).
        max_live_processes: app-servers kept at once; past it the least
            recently used idle room's is closed (its thread resumes later).
        max_line_bytes: the longest line of app-server output.
        event_buffer: server messages buffered for a turn before the reader
            stops reading (back-pressure: nothing is dropped).
        stderr_path: a file for the app-servers' standard error (None: discarded).

    Raises:
        BandConfigError: a value of the wrong type or out of range; approvals
            on without :class:`ApprovalSettings`; both ``cwd`` and
            ``workspace_for_room``.
    """

    command: tuple[str, ...] | None = attrs.field(default=None, converter=_command)
    codex_path: Path | None = attrs.field(
        default=None,
        converter=as_path,
        validator=optional(instance_of("codex_path", Path)),
    )
    config_overrides: Mapping[str, str] = attrs.field(
        factory=dict,
        converter=as_dict,
        validator=string_map("config_overrides"),
    )
    env: Mapping[str, str] = attrs.field(
        factory=dict, converter=as_dict, validator=string_map("env"), repr=False
    )
    model: str | None = attrs.field(default=None, validator=optional(text("model", blank=False)))
    system_prompt: str | None = attrs.field(
        default=None, validator=optional(text("system_prompt", blank=False))
    )
    custom_section: str = attrs.field(default="", validator=text("custom_section"))
    include_base_instructions: bool = attrs.field(
        default=True, validator=flag("include_base_instructions")
    )
    cwd: Path | None = attrs.field(
        default=None,
        converter=as_path,
        validator=optional(instance_of("cwd", Path)),
    )
    workspace_for_room: Callable[[str], str | Path] | None = attrs.field(
        default=None, validator=optional(function("workspace_for_room", of="the room id"))
    )
    approval_policy: str = attrs.field(
        default="never", validator=one_of("approval_policy", APPROVAL_POLICIES)
    )
    sandbox: str | None = attrs.field(
        default=None, validator=optional(one_of("sandbox", SANDBOX_MODES))
    )
    approvals: ApprovalSettings | None = attrs.field(
        default=None, validator=optional(instance_of("approvals", ApprovalSettings))
    )
    turn_timeout: float = attrs.field(
        default=DEFAULT_TURN_TIMEOUT, validator=seconds("turn_timeout")
    )
    request_timeout: float = attrs.field(
        default=DEFAULT_REQUEST_TIMEOUT, validator=seconds("request_timeout")
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
    max_live_processes: int = attrs.field(
        default=DEFAULT_MAX_LIVE_PROCESSES, validator=positive_int("max_live_processes")
    )
    max_line_bytes: int = attrs.field(
        default=16 * 1024 * 1024, validator=positive_int("max_line_bytes")
    )
    event_buffer: int = attrs.field(default=256, validator=positive_int("event_buffer"))
    stderr_path: Path | None = attrs.field(
        default=None,
        converter=as_path,
        validator=optional(instance_of("stderr_path", Path)),
    )

    def __attrs_post_init__(self) -> None:
        if self.cwd is not None and self.workspace_for_room is not None:
            raise BandConfigError("set either cwd or workspace_for_room, not both")
        if self.approval_policy != "never" and self.approvals is None:
            raise BandConfigError(
                f"approval_policy {self.approval_policy!r} needs approvals=ApprovalSettings(...) "
                "naming who may approve"
            )

    def argv(self) -> list[str]:
        """The app-server's command line.

        Raises:
            BandConfigError: no ``command`` and no ``codex`` executable found.
        """
        if self.command is not None:
            return list(self.command)
        codex = str(self.codex_path) if self.codex_path is not None else shutil.which("codex")
        if codex is None:
            raise BandConfigError(
                "the codex command was not found on PATH: install it with "
                "`npm install -g @openai/codex` or set CodexConfig(codex_path=...)"
            )
        argv = [codex, "app-server"]
        for key, value in self.config_overrides.items():
            argv += ["-c", f"{key}={value}"]
        return argv

    def workdir(self, room_id: str) -> Path | None:
        """The working directory of ``room_id``'s app-server (created when missing), or None."""
        return room_workdir(room_id, cwd=self.cwd, workspace_for_room=self.workspace_for_room)
