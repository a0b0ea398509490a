"""The ``band-trio`` command line.

Each subcommand is registered by a small ``_add_<name>`` function that adds its
parser and sets ``handler`` (a callable taking the parsed arguments and
returning the exit status); add new subcommands the same way.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

import trio

from band_trio.errors import MissingExtraError

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace], int]


def _add_platform(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "platform",
        help="run the embedded local Band platform",
        description="Run the embedded local Band platform until Ctrl+C.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: 0, a free port)")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON line with URLs and credentials"
    )
    parser.set_defaults(handler=_run_platform)


def _platform_info(platform: object) -> dict[str, object]:
    from band_trio.local import LocalPlatform

    assert isinstance(platform, LocalPlatform)
    return {
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


def _print_info(info: dict[str, object], as_json: bool) -> None:
    if as_json:
        print(json.dumps(info, separators=(",", ":")), flush=True)
        return
    user = info["user"]
    assert isinstance(user, dict)
    lines = [
        "Local Band platform running (Ctrl+C to stop)",
        f"  REST URL:      {info['rest_url']}",
        f"  WebSocket URL: {info['ws_url']}",
        f"  User:          @{user['handle']} (id {user['id']})",
        f"  User API key:  {user['api_key']}",
    ]
    agents = info["agents"]
    assert isinstance(agents, list)
    for agent in agents:
        lines += [
            f"  Agent:         {agent['name']} @{agent['handle']}",
            f"    BAND_AGENT_ID={agent['id']}",
            f"    BAND_API_KEY={agent['api_key']}",
        ]
    print("\n".join(lines), flush=True)


async def _serve_platform(args: argparse.Namespace) -> None:
    from band_trio.local import LocalPlatform

    platform = LocalPlatform(host=args.host, port=args.port)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(platform.serve)
            _print_info(_platform_info(platform), args.json)
            async for _ in signals:
                break
            nursery.cancel_scope.cancel()


def _require_local() -> None:
    """Import the local platform now, outside Trio, so that a missing ``local``
    extra is one plain :class:`MissingExtraError` (reported by :func:`main`)."""
    import band_trio.local  # noqa: F401


def _run_platform(args: argparse.Namespace) -> int:
    _require_local()
    try:
        trio.run(_serve_platform, args)
    except KeyboardInterrupt:  # Ctrl+C before the signal handler was installed
        return 0
    except OSError as exc:
        print(f"band-trio platform: {exc}", file=sys.stderr)
        return 1
    except BaseExceptionGroup as group:
        errors, others = group.split(OSError)
        if errors is None or others is not None:
            raise
        print(f"band-trio platform: {_first_leaf(errors)}", file=sys.stderr)
        return 1
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
        "--log-level", default="WARNING", help="logging level of the agents (default: WARNING)"
    )
    parser.set_defaults(handler=_run_dev)


def _run_dev(args: argparse.Namespace) -> int:
    _require_local()
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
    parser.add_argument("--token", required=True, help="the user's API key")
    parser.add_argument("--room", default=None, help="room id to open (default: the latest)")
    parser.set_defaults(handler=_run_chat)


def _run_chat(args: argparse.Namespace) -> int:
    _require_local()
    from band_trio.devloop.session import run_chat

    return _run_trio("chat", partial(run_chat, args.url, args.token, room_id=args.room))


def _run_trio(command: str, fn: Callable[..., Awaitable[int]], *args: object) -> int:
    """Run ``fn`` under Trio; an OSError or a BandError is one line on stderr and status 1."""
    from band_trio.errors import BandError

    try:
        return trio.run(fn, *args)
    except KeyboardInterrupt:  # Ctrl+C before the signal handler was installed
        return 0
    except (OSError, BandError) as exc:
        print(f"band-trio {command}: {exc}", file=sys.stderr)
        return 1
    except BaseExceptionGroup as group:
        errors, others = group.split((OSError, BandError))
        if errors is None or others is not None:
            raise
        print(f"band-trio {command}: {_first_leaf(errors)}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="band-trio", description="Trio-native SDK for the Band platform."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    _add_platform(subparsers)
    _add_demo(subparsers)
    _add_dev(subparsers)
    _add_chat(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``band-trio``; returns the exit status.

    A subcommand that needs an optional extra which is not installed (``platform``,
    ``demo``, ``dev`` and ``chat`` need ``band-trio[local]``) prints the install command, without a
    traceback, and returns 2.
    """
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except MissingExtraError as exc:
        print(f"band-trio {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
