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
from collections.abc import Callable, Sequence

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
    # Lazy: the local platform is the optional `local` extra.
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
    # Lazy: the local platform is the optional `local` extra.
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
    import band_trio.local  # noqa: F401 - lazy: the optional `local` extra


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
    # Lazy: the demo runs on the local platform, the optional `local` extra.
    from band_trio.demo import main as demo_main

    return demo_main()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="band-trio", description="Trio-native SDK for the Band platform."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    _add_platform(subparsers)
    _add_demo(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``band-trio``; returns the exit status.

    A subcommand that needs an optional extra which is not installed (``platform``
    and ``demo`` need ``band-trio[local]``) prints the install command, without a
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
