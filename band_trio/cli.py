"""The ``band-trio`` command line.

Each subcommand is registered by a small ``_add_<name>`` function that adds its
parser and sets ``handler`` (a callable taking the parsed arguments and
returning the exit status); add new subcommands the same way.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from pathlib import Path

import trio

from band_trio._logging import ENV_LOG_FORMAT, ENV_LOG_LEVEL, configure_logging
from band_trio._terminal import terminal_safe
from band_trio._version import __version__
from band_trio.errors import BandConfigError, BandError, MissingExtraError

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace], int]


ENV_FILE_AGENT = "{agent}"
"""The placeholder of ``--env-file`` replaced by each agent's slug."""
CLI_AGENT_DESCRIPTION = "An agent registered with band-trio platform --agent."


def _add_platform(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "platform",
        help="run the embedded local Band platform",
        description=(
            "Run the embedded local Band platform until Ctrl+C. Without --state it "
            "lives in memory and every run mints new ids and keys; with --state DIR "
            "it keeps users, agents and their keys, rooms, messages (with each "
            "agent's delivery status), files, memories and contacts in DIR, so "
            "credentials exported once keep working."
        ),
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to bind (default: 127.0.0.1); another address than loopback "
        "prints a warning and keeps the keys out of the text output (use --env-file "
        "or --json to get them)",
    )
    parser.add_argument(
        "--admin",
        action="store_true",
        help="serve the operator's API /_local/admin (fault injection, control, "
        "socket drops) under an admin key of its own, printed at start; off by default",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=0,
        help="TCP port (default: 0, a free port; with --state, the previous run's "
        "port when it is free, so the URLs handed out stay valid)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON line with URLs and credentials"
    )
    parser.add_argument(
        "--state",
        metavar="DIR",
        default=None,
        help="keep the platform's state in DIR (SQLite) across restarts",
    )
    parser.add_argument(
        "--agent",
        metavar="NAME",
        action="append",
        default=[],
        dest="agents",
        help="register an agent called NAME instead of the demo agent (repeatable); "
        "with --state the same name keeps its id and key",
    )
    parser.add_argument(
        "--env-file",
        metavar="PATH",
        default=None,
        help="write BAND_AGENT_ID, BAND_API_KEY, BAND_REST_URL and BAND_WS_URL "
        "(KEY=value lines, for `set -a; . PATH` or any .env reader) for the --agent "
        "agents (else every agent) to PATH; with several agents PATH must contain "
        f"{ENV_FILE_AGENT}, replaced by each agent's slug (one file per agent)",
    )
    parser.set_defaults(handler=_run_platform)


def _platform_info(platform: object, env_files: Sequence[str] = ()) -> dict[str, object]:
    # Lazy: the local platform is the optional `local` extra.
    from band_trio.local import LocalPlatform
    from band_trio.local.server import is_loopback  # lazy: the `local` extra, as above

    assert isinstance(platform, LocalPlatform)
    info: dict[str, object] = {
        "rest_url": platform.rest_url,
        "ws_url": platform.ws_url,
        "user": {
            "id": platform.user.id,
            "api_key": platform.user.api_key,
            "handle": platform.user.handle,
        },
        "agents": [
            {"id": a.id, "api_key": a.api_key, "name": a.name, "handle": a.handle}
            for a in platform.agents
        ],
    }
    if platform.admin:
        info["admin_key"] = platform.admin_key
    if not is_loopback(platform.host):
        info["exposed"] = platform.host
    if platform.state_dir is not None:
        info["state_dir"] = str(platform.state_dir)
    if env_files:
        info["env_files"] = list(env_files)
    return info


def _print_info(
    info: dict[str, object], as_json: bool, chat_rooms: Mapping[str, str] | None = None
) -> None:
    exposed = info.get("exposed")
    if exposed is not None:
        from band_trio.local.server import exposure_warning  # lazy: the `local` extra

        # One warning, the one `band-trio dev` prints; on stderr, so that it is
        # seen even when stdout is piped.
        warning = exposure_warning(str(exposed), str(info["rest_url"]))
        print(
            f"band-trio platform: {warning}; --env-file writes an agent's to a 0600 file",
            file=sys.stderr,
            flush=True,
        )
    if as_json:
        print(json.dumps(info, separators=(",", ":")), flush=True)
        return

    def secret(value: object) -> str:
        return "(hidden: not bound to loopback)" if exposed is not None else str(value)

    user = info["user"]
    assert isinstance(user, dict)
    lines = [
        "Local Band platform running (Ctrl+C to stop)",
        f"  REST URL:      {info['rest_url']}",
        f"  WebSocket URL: {info['ws_url']}",
        f"  User:          @{user['handle']} (id {user['id']})",
        f"  User API key:  {secret(user['api_key'])}",
    ]
    if "admin_key" in info:
        lines.append(f"  Admin key:     {secret(info['admin_key'])}  (x-admin-key)")
    if "state_dir" in info:
        lines.append(f"  State:         {info['state_dir']}")
    agents = info["agents"]
    assert isinstance(agents, list)
    for agent in agents:
        lines += [
            f"  Agent:         {agent['name']} @{agent['handle']}",
            f"    BAND_AGENT_ID={agent['id']}",
            f"    BAND_API_KEY={secret(agent['api_key'])}",
        ]
        room_id = (chat_rooms or {}).get(agent["id"])
        if room_id is not None and exposed is None:
            # Lazy: the dev loop needs the `local` extra, as this command does.
            from band_trio.devloop.commands import band_trio_command

            chat = band_trio_command(
                "chat", "--url", str(info["rest_url"]), "--token", str(user["api_key"])
            )
            lines.append(f"    talk to it:   {chat} --room {room_id}")
    env_files = info.get("env_files", [])
    assert isinstance(env_files, list)
    lines += [f"  Env file:      {path}" for path in env_files]
    print("\n".join(lines), flush=True)


def _env_file_paths(pattern: str, slugs: Sequence[str]) -> list[str]:
    """Where ``--env-file`` puts each agent's settings.

    Raises:
        BandConfigError: several agents and no ``{agent}`` in ``pattern``, or
            two agents (of different owners) whose files would be the same.
    """
    if ENV_FILE_AGENT not in pattern:
        if len(slugs) > 1:
            raise BandConfigError(
                f"--env-file needs {ENV_FILE_AGENT} in its path for {len(slugs)} agents "
                f"(one file per agent), e.g. --env-file {ENV_FILE_AGENT}.env"
            )
        return [pattern] * len(slugs)
    paths = [pattern.replace(ENV_FILE_AGENT, slug) for slug in slugs]
    twice = sorted({path for path in paths if paths.count(path) > 1})
    if twice:
        # One file would end up holding another owner's agent key.
        raise BandConfigError(
            f"--env-file would write several agents to {', '.join(twice)} (agents of "
            "different owners with the same name): choose the agents with --agent NAME"
        )
    return paths


def _slug(handle: str) -> str:
    """The agent part of an agent handle (``demo/echo`` -> ``echo``)."""
    return handle.rsplit("/", 1)[-1]


def _write_env_file(path: str, settings: dict[str, str]) -> None:
    """Write ``KEY=value`` lines to ``path`` atomically, readable by its owner only
    (it holds an API key)."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    temporary = f"{path}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.writelines(f"{key}={value}\n" for key, value in settings.items())
    os.replace(temporary, path)


async def _serve_platform(
    args: argparse.Namespace, platform: object, targets: Sequence[object]
) -> None:
    # Lazy: the local platform is the optional `local` extra.
    from band_trio.local import AgentCredentials, LocalPlatform

    assert isinstance(platform, LocalPlatform)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(platform.serve)
            env_files: list[str] = []
            if args.env_file is not None:
                agents = [a for a in targets if isinstance(a, AgentCredentials)]
                env_files = _env_file_paths(args.env_file, [_slug(a.handle) for a in agents])
                for path, creds in zip(env_files, agents, strict=True):
                    _write_env_file(path, platform.agent_env(creds))
            chat_rooms = {} if args.json else await _chat_rooms(platform, targets)
            _print_info(_platform_info(platform, env_files), args.json, chat_rooms)
            async for _ in signals:
                break
            nursery.cancel_scope.cancel()


async def _chat_rooms(platform: object, targets: Sequence[object]) -> dict[str, str]:
    """A room of the user with each agent (found again by its title with
    ``--state``), for the printed chat commands; none off loopback."""
    # Lazy: the local platform is the optional `local` extra.
    from band_trio.devloop.session import ensure_room
    from band_trio.local import AgentCredentials, HumanClient, LocalPlatform  # lazy: `local` extra
    from band_trio.local.server import is_loopback  # lazy: the `local` extra

    assert isinstance(platform, LocalPlatform)
    if not is_loopback(platform.host):
        return {}
    rooms = {}
    async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
        for agent in targets:
            if isinstance(agent, AgentCredentials):
                room = await ensure_room(human, f"chat with {agent.name}", [agent.id])
                rooms[agent.id] = str(room["id"])
    return rooms


def _require_local() -> None:
    """Import the local platform now, outside Trio, so that a missing ``local``
    extra is one plain :class:`MissingExtraError` (reported by :func:`main`)."""
    import band_trio.local  # noqa: F401 - lazy: the optional `local` extra


def _run_platform(args: argparse.Namespace) -> int:
    _require_local()
    # Lazy: the local platform is the optional `local` extra.
    from band_trio.local import LocalPlatform

    try:
        platform = LocalPlatform(
            host=args.host,
            port=args.port,
            seed_demo=not args.agents,
            state_dir=args.state,
            admin=args.admin,
            warn_if_exposed=False,  # the banner's warning says it
        )
    except BandConfigError as exc:
        print(f"band-trio platform: {exc}", file=sys.stderr)
        return 1
    try:
        named = [platform.ensure_agent(name, CLI_AGENT_DESCRIPTION) for name in args.agents]
        targets = list(dict.fromkeys(named)) or list(platform.agents)
        if args.env_file is not None:
            # Refuse a path that cannot hold every agent before serving anything.
            _env_file_paths(args.env_file, [_slug(a.handle) for a in targets])
        trio.run(_serve_platform, args, platform, targets)
    except KeyboardInterrupt:  # Ctrl+C before the signal handler was installed
        return 0
    except BandConfigError as exc:
        print(f"band-trio platform: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"band-trio platform: {exc}", file=sys.stderr)
        return 1
    except BaseExceptionGroup as group:
        errors, others = group.split(OSError)
        if errors is None or others is not None:
            raise
        print(f"band-trio platform: {_first_leaf(errors)}", file=sys.stderr)
        return 1
    finally:
        platform.close()
    return 0


def _first_leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def _add_demo(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run a local platform, an echo agent and a human, and print the conversation",
        description="Run a whole Band conversation offline and exit.",
    )
    parser.set_defaults(handler=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    _require_local()
    # Lazy: the demo runs on the local platform, the optional `local` extra.
    from band_trio.demo import main as demo_main

    return demo_main()


def _add_dev(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "dev",
        help="run your agent(s) on the embedded platform and talk to them",
        description=(
            "Start the embedded platform, run each TARGET's agent in its own process, "
            "put them in a room with you and open the terminal chat. TARGET is "
            "path/to/file.py[:name] or package.module[:name], naming an adapter, an "
            "adapter class, a function returning an adapter or a band_trio.Agent, or "
            "a band_trio.Agent; without :name the module's one adapter is used."
        ),
    )
    parser.add_argument("targets", nargs="+", metavar="TARGET", help="the agent(s) to run")
    parser.add_argument(
        "--name",
        action="append",
        default=[],
        dest="names",
        help="agent name (its handle is you/<name>); once per TARGET, in order "
        "(default: the attribute, file or module name)",
    )
    parser.add_argument(
        "--reload", action="store_true", help="restart an agent when its source files change"
    )
    ui = parser.add_mutually_exclusive_group()
    ui.add_argument(
        "--web", action="store_true", help="open the browser playground instead of the chat"
    )
    ui.add_argument(
        "--no-chat", action="store_true", help="no UI: show the agents' output until Ctrl+C"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to bind (default: 127.0.0.1; anything else prints a warning)",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: 0, a free port)")
    parser.add_argument(
        "--json", action="store_true", help="print the start banner as one JSON line"
    )
    parser.add_argument(
        "--state",
        metavar="DIR",
        default=None,
        help="keep the platform (users, agents and keys, rooms, messages) and the "
        "agents' ledgers in DIR across runs (default: in memory)",
    )
    parser.add_argument(
        "--log-level", default="WARNING", help="logging level of the agents (default: WARNING)"
    )
    parser.set_defaults(handler=_run_dev)


def _run_dev(args: argparse.Namespace) -> int:
    _require_local()
    # Lazy: the dev loop runs on the local platform, the optional `local` extra.
    from band_trio.devloop.session import UI, DevOptions, run_dev

    options = DevOptions(
        targets=tuple(args.targets),
        names=tuple(args.names),
        host=args.host,
        port=args.port,
        reload=args.reload,
        ui=UI.WEB if args.web else UI.NONE if args.no_chat else UI.CHAT,
        as_json=args.json,
        log_level=args.log_level.upper(),
        state_dir=Path(args.state).resolve() if args.state else None,
    )
    return _run_trio("dev", run_dev, options)


def _add_chat(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "chat",
        help="chat as a human on a running local platform",
        description=(
            "Attach a terminal chat to a running local Band platform (the URL and the "
            "user token that band-trio platform or band-trio dev printed)."
        ),
    )
    parser.add_argument("--url", required=True, help="the platform's REST URL")
    parser.add_argument(
        "--token",
        default=None,
        help="the user's API key, or - to read it from stdin; default: "
        "$BAND_USER_TOKEN (prefer it or -: a command line is visible to every local "
        "user in the process list)",
    )
    parser.add_argument("--room", default=None, help="room id to open (default: the latest)")
    parser.set_defaults(handler=_run_chat)


def _run_chat(args: argparse.Namespace) -> int:
    _require_local()
    # Lazy: the chat talks to the local platform, the optional `local` extra.
    from band_trio.devloop.session import ENV_USER_TOKEN, run_chat

    token = _chat_token(args.token, ENV_USER_TOKEN)
    if not token:
        print(
            f"band-trio chat: give the user's key in ${ENV_USER_TOKEN}, or --token - "
            "to read it from stdin",
            file=sys.stderr,
        )
        return 2
    return _run_trio("chat", partial(run_chat, args.url, token, room_id=args.room))


def _chat_token(option: str | None, variable: str) -> str | None:
    """The user's key: ``--token``, one line of stdin for ``--token -`` (not
    echoed on a terminal), else the environment ``variable``."""
    if option == "-":
        if sys.stdin.isatty():
            return getpass.getpass("user key: ").strip() or None
        return sys.stdin.readline().strip() or None
    return option or os.environ.get(variable, "").strip() or None


def _run_trio(command: str, fn: Callable[..., Awaitable[int]], *args: object) -> int:
    """Run ``fn`` under Trio; an OSError or a BandError is one line on stderr and status 1."""

    try:
        return trio.run(fn, *args)
    except KeyboardInterrupt:  # Ctrl+C before the signal handler was installed
        return 0
    except (OSError, BandError) as exc:
        # The text may carry what a remote platform answered.
        print(terminal_safe(f"band-trio {command}: {exc}"), file=sys.stderr)
        return 1
    except BaseExceptionGroup as group:
        errors, others = group.split((OSError, BandError))
        if errors is None or others is not None:
            raise
        print(terminal_safe(f"band-trio {command}: {_first_leaf(errors)}"), file=sys.stderr)
        return 1


RUN_EPILOG = """\
exit status:
  0  drained: a graceful shutdown (SIGTERM or SIGINT) finished
  1  crashed: an unexpected error (see the log)
  2  bad configuration: the target does not load, a setting is missing or
     invalid, the key is refused, the health port cannot be bound
  3  superseded: another instance of this agent identity took over

environment:
  BAND_AGENT_ID, BAND_API_KEY, BAND_REST_URL, BAND_WS_URL  the identity
  BAND_<FIELD>          any AgentConfig field (BAND_STATE_DIR, BAND_SHUTDOWN_TIMEOUT...)
  BAND_HEALTH_PORT      serve /livez, /readyz and /metrics on this port
  BAND_HEALTH_HOST      the listener's interface (default 127.0.0.1)
  BAND_LOG_LEVEL        default INFO
  BAND_LOG_FORMAT       text or json (default: json when stdout is not a terminal)
"""


def _add_run(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="serve an agent in production (settings from BAND_* variables)",
        description=(
            "Serve TARGET's agent until SIGTERM or SIGINT (the first drains the running "
            "turns, a second cancels them). TARGET is path/to/file.py[:name] or "
            "package.module[:name], as for band-trio dev; the agent's identity and "
            "settings come from the BAND_* variables."
        ),
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", metavar="TARGET", help="the agent to serve")
    parser.add_argument(
        "--check",
        action="store_true",
        help="load the target and the settings, call GET /agent/me once, print what "
        "was found (never the key) and exit",
    )
    parser.add_argument("--json", action="store_true", help="with --check, print one JSON object")
    parser.add_argument(
        "--health-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve GET /livez, /readyz and /metrics on PORT (default: $BAND_HEALTH_PORT, "
        "else off)",
    )
    parser.add_argument(
        "--health-host",
        default=None,
        metavar="HOST",
        help="the listener's interface (default: $BAND_HEALTH_HOST, else 127.0.0.1)",
    )
    parser.add_argument(
        "--log-level",
        dest="run_log_level",
        metavar="LEVEL",
        default=None,
        help=f"default: ${ENV_LOG_LEVEL}, else INFO",
    )
    parser.add_argument(
        "--log-format",
        dest="run_log_format",
        choices=("text", "json"),
        default=None,
        help=f"default: ${ENV_LOG_FORMAT}, else json when stdout is not a terminal",
    )
    parser.set_defaults(handler=_run_run)


def _run_run(args: argparse.Namespace) -> int:
    # Lazy: the agent runtime is loaded only by the command that serves one.
    from band_trio.production import EXIT_BAD_CONFIG, ProductionOptions, run_agent

    level = args.run_log_level or args.log_level
    if level is None and not os.environ.get(ENV_LOG_LEVEL, "").strip():
        level = "INFO"
    log_format = args.run_log_format or args.log_format
    if log_format is None and not os.environ.get(ENV_LOG_FORMAT, "").strip():
        log_format = "text" if sys.stdout.isatty() else "json"
    try:
        configure_logging(level, log_format)
    except BandConfigError as exc:
        print(f"band-trio run: {exc}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    options = ProductionOptions(
        target=args.target,
        check=args.check,
        health_port=args.health_port,
        health_host=args.health_host,
        as_json=args.json,
    )
    return run_agent(options)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="band-trio", description="Trio-native SDK for the Band platform."
    )
    parser.add_argument("--version", action="version", version=f"band-trio {__version__}")
    parser.add_argument(
        "--log-level",
        metavar="LEVEL",
        default=None,
        help=f"DEBUG, INFO, WARNING (default), ERROR or CRITICAL; default from ${ENV_LOG_LEVEL}",
    )
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=None,
        help=f"text (default) or json (one object per line); default from ${ENV_LOG_FORMAT}",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    _add_platform(subparsers)
    _add_demo(subparsers)
    _add_dev(subparsers)
    _add_chat(subparsers)
    _add_run(subparsers)
    return parser


def _configure_logging(args: argparse.Namespace) -> None:
    """Log to stderr: the options first, then ``BAND_LOG_LEVEL`` /
    ``BAND_LOG_FORMAT``, then WARNING in text (a command's own output stays
    readable unless more is asked for)."""
    level = args.log_level
    if level is None and not os.environ.get(ENV_LOG_LEVEL, "").strip():
        level = "WARNING"
    configure_logging(level, args.log_format)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``band-trio``; returns the exit status.

    Logging is configured first (``--log-level``, ``--log-format``, else
    ``BAND_LOG_LEVEL`` / ``BAND_LOG_FORMAT``, else warnings as text on stderr).
    A subcommand that needs an optional extra which is not installed (``platform``,
    ``demo``, ``dev`` and ``chat`` need ``band-trio[local]``) prints the install command, without a
    traceback, and returns 2.
    """
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        _configure_logging(args)
    except BandConfigError as exc:
        print(f"band-trio: {exc}", file=sys.stderr)
        return 2
    try:
        return handler(args)
    except MissingExtraError as exc:
        print(f"band-trio {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
