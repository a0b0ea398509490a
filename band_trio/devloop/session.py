"""``band-trio dev`` and ``band-trio chat``: the sessions behind the two commands.

``dev`` starts the embedded platform, registers one agent per target, creates
a room with the user and every agent, runs each agent in its own process
(:class:`~band_trio.devloop.supervisor.AgentProcess`) and opens the chosen UI:
the terminal chat, the browser playground, or none. With a state directory
the platform remembers everything across runs, the agents keep their ids and
keys, and the same room is opened again. Leaving the UI (``/quit``,
end of input, Ctrl+C or SIGTERM) stops the agents first, then the platform.
"""

from __future__ import annotations

import contextlib
import enum
import ipaddress
import json
import shutil
import signal
import sys
import tempfile
import webbrowser
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import trio

from band_trio.devloop.chat import TerminalChat, install_completion
from band_trio.devloop.commands import band_trio_command
from band_trio.devloop.console import Console
from band_trio.devloop.supervisor import AgentIdentity, AgentProcess
from band_trio.devloop.targets import Target, TargetError, check_target_exists, parse_target

__all__ = [
    "DEV_USER_HANDLE",
    "ENV_USER_TOKEN",
    "UI",
    "DevOptions",
    "ensure_room",
    "is_loopback",
    "run_chat",
    "run_dev",
]

DEV_USER_HANDLE = "you"
"""The handle of the human ``dev`` creates (agents are ``@you/<name>``)."""
DEV_USER_NAME = "You"
ENV_USER_TOKEN = "BAND_USER_TOKEN"
"""Where ``band-trio chat`` reads the user's key when ``--token`` is not given."""
HIDDEN_TOKEN = "(hidden: not bound to loopback; --json prints it)"
HOLD_LIMIT = 60.0
"""Seconds a message typed during a restart waits for the agent before it is sent anyway."""
AGENT_STATE_SUBDIR = "agents"
"""Where, under ``--state DIR``, the agents' ledgers live."""


class UI(enum.Enum):
    """What ``dev`` shows once everything runs."""

    CHAT = "chat"
    """The terminal chat (the default)."""
    WEB = "web"
    """Open the browser playground; print the agents' output."""
    NONE = "none"
    """No UI: print the agents' output until Ctrl+C."""


@attrs.frozen
class DevOptions:
    """The settings of one ``band-trio dev`` run.

    Attributes:
        targets: the targets, in order (see :mod:`band_trio.devloop.targets`).
        names: agent names for the first targets (the rest get their default).
        host: interface the platform binds.
        port: its TCP port (0: a free one).
        reload: restart an agent when its source changes.
        ui: the UI.
        as_json: print the start banner as one JSON line.
        log_level: logging level of the agent processes.
        stop_timeout: seconds an agent may take to stop gracefully.
        state_dir: keep the platform's state (users, agents and their keys,
            rooms, messages) and the agents' ledgers in this directory across
            runs; None keeps the platform in memory and the ledgers in a
            temporary directory removed at the end.
    """

    targets: tuple[str, ...]
    names: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    port: int = 0
    reload: bool = False
    ui: UI = UI.CHAT
    as_json: bool = False
    log_level: str = "WARNING"
    stop_timeout: float = 5.0
    state_dir: Path | None = None

    def parsed_targets(self) -> list[Target]:
        """The parsed targets, each naming a file or module that exists.

        Raises:
            TargetError: a malformed target, a missing file or module, or more
                names than targets.
        """
        if not self.targets:
            raise TargetError("give at least one TARGET (path/to/file.py or package.module:name)")
        if len(self.names) > len(self.targets):
            raise TargetError(f"{len(self.names)} --name for {len(self.targets)} target(s)")
        targets = [parse_target(t) for t in self.targets]
        for target in targets:
            check_target_exists(target)
        names = [n.lower() for n in self.agent_names(targets)]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise TargetError(
                f"two targets would be the same agent ({', '.join(twice)}): tell them "
                "apart with --name, once per TARGET in order"
            )
        return targets

    def agent_names(self, targets: list[Target]) -> list[str]:
        """Each target's agent name: its ``--name``, else its default name."""
        return [
            self.names[i] if i < len(self.names) else target.default_name
            for i, target in enumerate(targets)
        ]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def playground_url(rest_url: str, token: str) -> str:
    """The browser playground's address, with the human's token."""
    return f"{rest_url}/playground?token={token}"


@contextlib.contextmanager
def _terminal_restored() -> Iterator[None]:
    """Put the terminal back as it was (a line editor may be interrupted mid-line)."""
    try:
        # POSIX only: there is no terminal state to restore elsewhere.
        import termios

        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except Exception:  # not a terminal, or no termios on this platform
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


async def _until_signal(scope: trio.CancelScope) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return


def _banner(
    platform: Any, room: dict[str, Any], agents: list[tuple[Target, Any]], options: DevOptions
) -> str:
    user = platform.user
    if options.as_json:
        info = {
            "rest_url": platform.rest_url,
            "ws_url": platform.ws_url,
            "user": {"id": user.id, "api_key": user.api_key, "handle": user.handle},
            "room_id": room["id"],
            "agents": [
                {"id": c.id, "name": c.name, "handle": c.handle, "target": t.spec}
                for t, c in agents
            ],
        }
        return json.dumps(info, separators=(",", ":"))
    lines = [
        f"band-trio dev: local Band platform at {platform.rest_url} (Ctrl+C to stop)",
        f"  room {room.get('title')!r} with you (@{user.handle}) and:",
    ]
    lines += [f"    @{c.handle}  <- {t.spec}" for t, c in agents]
    lines.append("  reload on save: " + ("on" if options.reload else "off (--reload turns it on)"))
    # Beyond loopback the key is a network secret: kept out of the text, as
    # `band-trio platform` does (--json gives it).
    token = user.api_key if is_loopback(options.host) else HIDDEN_TOKEN
    if options.ui is UI.WEB:
        lines.append(f"  playground: {playground_url(platform.rest_url, token)}")
    else:
        # In the environment, not in argv: a command line is visible to every
        # local user in the process list.
        chat = band_trio_command("chat", "--url", platform.rest_url)
        lines.append(f"  another terminal: {ENV_USER_TOKEN}={token} {chat}")
    return "\n".join(lines)


async def run_dev(
    options: DevOptions,
    *,
    console: Console | None = None,
    read_line: Callable[[str], str] = input,
    open_browser: Callable[[str], object] = webbrowser.open,
) -> int:
    """Run ``band-trio dev`` until the UI is left or a signal arrives.

    Returns:
        The exit status: 0, or 2 for a bad target or option.

    Raises:
        OSError: the platform's address could not be bound.
    """
    # Lazy: the optional `local` extra (checked by the command line first).
    from band_trio.local import HumanClient, open_local_platform
    from band_trio.local.server import exposure_warning  # lazy: the same extra

    console = console if console is not None else Console()
    try:
        targets = options.parsed_targets()
    except TargetError as exc:
        print(f"band-trio dev: {exc}", file=sys.stderr)
        return 2
    if options.state_dir is not None:
        state_home = options.state_dir / AGENT_STATE_SUBDIR
    else:
        state_home = Path(tempfile.mkdtemp(prefix="band-trio-dev-"))
    try:
        async with open_local_platform(
            host=options.host,
            port=options.port,
            seed_demo=False,
            user_name=DEV_USER_NAME,
            user_handle=DEV_USER_HANDLE,
            state_dir=options.state_dir,
            warn_if_exposed=False,
        ) as platform:
            if not is_loopback(options.host):
                # One warning, the one `band-trio platform` prints, on stderr.
                warning = exposure_warning(options.host, platform.rest_url)
                print(f"band-trio dev: {warning}", file=sys.stderr, flush=True)
            agents = []
            for target, name in zip(targets, options.agent_names(targets), strict=True):
                # With a state directory, the same name finds the agent (its id,
                # key and ledger) of the previous run.
                creds = platform.ensure_agent(name, f"Runs {target.spec} under band-trio dev")
                agents.append((target, creds))
            processes = [
                AgentProcess(
                    target,
                    AgentIdentity(
                        agent_id=creds.id,
                        api_key=creds.api_key,
                        handle=creds.handle,
                        rest_url=platform.rest_url,
                        ws_url=platform.ws_url,
                    ),
                    state_home=state_home,
                    say=console.print,
                    reload=options.reload,
                    stop_timeout=options.stop_timeout,
                    log_level=options.log_level,
                )
                for target, creds in agents
            ]
            async with HumanClient(
                base_url=platform.rest_url, api_key=platform.user.api_key
            ) as human:
                title = "dev: " + ", ".join(creds.name for _, creds in agents)
                room = await ensure_room(human, title, [creds.id for _, creds in agents])
                console.print(_banner(platform, room, agents, options))
                async with trio.open_nursery() as nursery:
                    for process in processes:
                        await nursery.start(process.run)
                    with trio.CancelScope() as ui_scope:
                        nursery.start_soon(_until_signal, ui_scope)
                        if options.ui is UI.CHAT:
                            chat = TerminalChat(
                                human,
                                console,
                                room_id=room["id"],
                                new_room_invites=[c.id for _, c in agents],
                                read_line=read_line,
                                before_post=partial(_hold_while_restarting, processes, console),
                            )
                            install_completion(chat.completions)
                            with _terminal_restored():
                                await chat.run()
                        else:
                            if options.ui is UI.WEB:
                                url = playground_url(platform.rest_url, platform.user.api_key)
                                await trio.to_thread.run_sync(open_browser, url)
                            await trio.sleep_forever()
                    nursery.cancel_scope.cancel()
    finally:
        if options.state_dir is None:
            shutil.rmtree(state_home, ignore_errors=True)
    return 0


async def _hold_while_restarting(processes: list[AgentProcess], console: Console) -> None:
    """Hold a message while an agent restarts, so that the new code answers it
    (an agent that failed to load is not waited for: the message waits on the
    platform and its next start answers it)."""
    restarting = [p for p in processes if p.restarting]
    if not restarting:
        return
    labels = ", ".join(p.label for p in restarting)
    console.print(f"* your message waits until {labels} is running")
    with trio.move_on_after(HOLD_LIMIT) as waited:
        for process in restarting:
            await process.wait_restarted()
    if waited.cancelled_caught:
        console.print(f"* {labels} still not running after {HOLD_LIMIT:.0f} s: sent anyway")


async def ensure_room(human: Any, title: str, agent_ids: Sequence[str]) -> dict[str, Any]:
    """The room called ``title`` from an earlier run (a remembered platform),
    else a new one; every agent is made a participant."""
    rooms = [r for r in await human.list_rooms() if r.get("title") == title]
    if rooms:
        room: dict[str, Any] = max(rooms, key=lambda r: r.get("updated_at") or "")
        present = {p["id"] for p in await human.list_participants(room["id"])}
    else:
        room, present = await human.create_room(title), set()
    for agent_id in agent_ids:
        if agent_id not in present:
            await human.add_participant(room["id"], agent_id)
    return room


async def run_chat(
    url: str,
    token: str,
    *,
    room_id: str | None = None,
    console: Console | None = None,
    read_line: Callable[[str], str] = input,
) -> int:
    """Run ``band-trio chat`` against the platform at ``url`` as the user ``token``.

    Returns:
        The exit status: 0 after ``/quit``, end of input or a signal.

    Raises:
        BandError: the platform could not be reached or refused the token.
    """
    # Lazy: the optional `local` extra (checked by the command line first).
    from band_trio.local import HumanClient

    console = console if console is not None else Console()
    async with HumanClient(base_url=url, api_key=token) as human:
        chat = TerminalChat(human, console, room_id=room_id, read_line=read_line)
        install_completion(chat.completions)
        async with trio.open_nursery() as nursery:
            with trio.CancelScope() as ui_scope:
                nursery.start_soon(_until_signal, ui_scope)
                with _terminal_restored():
                    await chat.run()
            nursery.cancel_scope.cancel()
    return 0
