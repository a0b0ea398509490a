"""``CodexConfig``: the settings of a :class:`~band_trio_codex.CodexAdapter`."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from band_trio import BandConfigError

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


def _one_of(name: str, allowed: frozenset[str], *, optional: bool = False) -> Any:
    def check(_inst: object, _attr: object, value: object) -> None:
        if value is None and optional:
            return
        if value not in allowed:
            raise BandConfigError(f"{name} must be one of {sorted(allowed)}; got {value!r}")

    return check


def _optional_text(name: str) -> Any:
    def check(_inst: object, _attr: object, value: object) -> None:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise BandConfigError(f"{name} must be a non-empty string or None; got {value!r}")

    return check


def _string_map(name: str, value: Any) -> Mapping[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise BandConfigError(f"{name} must map strings to strings")
    return dict(value)


def _overrides(value: Any) -> Mapping[str, str]:
    return _string_map("config_overrides", value)


def _env(value: Any) -> Mapping[str, str]:
    return _string_map("env", value)


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


def _path_or_none(value: Any) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str | Path):
        raise BandConfigError(f"expected a path; got {type(value).__name__}")
    return Path(value)


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
    message in the room can grant or widen anything: the sandbox is the
    config's, and there is no approval command.

    Attributes:
        approvers: participant ids or handles whose requests are approved,
            besides the owner's.
        owner_approves: the room's owner's requests are approved.

    Raises:
        BandConfigError: a value of the wrong type, or nobody who could approve.
    """

    approvers: frozenset[str] = attrs.field(factory=frozenset, converter=_participants)
    owner_approves: bool = True

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.owner_approves, bool):
            raise BandConfigError("owner_approves must be a bool")
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
    codex_path: Path | None = attrs.field(default=None, converter=_path_or_none)
    config_overrides: Mapping[str, str] = attrs.field(factory=dict, converter=_overrides)
    env: Mapping[str, str] = attrs.field(factory=dict, converter=_env, repr=False)
    model: str | None = attrs.field(default=None, validator=_optional_text("model"))
    system_prompt: str | None = attrs.field(default=None, validator=_optional_text("system_prompt"))
    custom_section: str = ""
    include_base_instructions: bool = True
    cwd: Path | None = attrs.field(default=None, converter=_path_or_none)
    workspace_for_room: Callable[[str], str | Path] | None = None
    approval_policy: str = attrs.field(
        default="never", validator=_one_of("approval_policy", APPROVAL_POLICIES)
    )
    sandbox: str | None = attrs.field(
        default=None, validator=_one_of("sandbox", SANDBOX_MODES, optional=True)
    )
    approvals: ApprovalSettings | None = None
    turn_timeout: float = attrs.field(
        default=DEFAULT_TURN_TIMEOUT, validator=_positive_seconds("turn_timeout")
    )
    request_timeout: float = attrs.field(
        default=DEFAULT_REQUEST_TIMEOUT, validator=_positive_seconds("request_timeout")
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
    max_live_processes: int = attrs.field(
        default=DEFAULT_MAX_LIVE_PROCESSES, validator=_positive_int("max_live_processes")
    )
    max_line_bytes: int = attrs.field(
        default=16 * 1024 * 1024, validator=_positive_int("max_line_bytes")
    )
    event_buffer: int = attrs.field(default=256, validator=_positive_int("event_buffer"))
    stderr_path: Path | None = attrs.field(default=None, converter=_path_or_none)

    def __attrs_post_init__(self) -> None:
        if self.cwd is not None and self.workspace_for_room is not None:
            raise BandConfigError("set either cwd or workspace_for_room, not both")
        if self.workspace_for_room is not None and not callable(self.workspace_for_room):
            raise BandConfigError("workspace_for_room must be a function of the room id")
        if self.approvals is not None and not isinstance(self.approvals, ApprovalSettings):
            raise BandConfigError(
                f"approvals must be an ApprovalSettings; got {type(self.approvals).__name__}"
            )
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
        if self.workspace_for_room is not None:
            path = Path(self.workspace_for_room(room_id))
            path.mkdir(parents=True, exist_ok=True)
            return path
        return self.cwd
