"""``band-trio run TARGET``: serve one agent in production.

The target is named as for ``band-trio dev`` (``path/to/file.py[:name]`` or
``package.module[:name]``, see :mod:`band_trio.devloop.targets`); an adapter
is made into an agent with :meth:`Agent.create <band_trio.Agent.create>`, so
its identity and settings come from ``BAND_*`` variables. The agent handles
SIGTERM and SIGINT: the first drains (running turns get
``shutdown_timeout``), a second cancels the running turns at once.

The exit status says why the process ended (an orchestrator restarts on some
and not on others):

====  ===================================================================
0     drained: a graceful shutdown (SIGTERM, SIGINT) finished
1     crashed: an unexpected error (the platform unreachable for good, a
      bug); the log says which
2     bad configuration: a target that does not load, a missing or invalid
      setting, a refused key, a health port that cannot be bound; found
      before the agent serves, and restarting will not help
3     superseded: another instance of the same agent identity took over
      (or holds its state directory)
====  ===================================================================

``band-trio run --check`` loads the target, reads the settings, calls
``GET /agent/me`` once, prints what it found (never the key) and exits with
0, or with the status above.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final

import attrs
import trio

from band_trio._logging import get_logger
from band_trio.agent import Agent
from band_trio.devloop.child import describe_load_error
from band_trio.devloop.targets import (
    ResolvedTarget,
    Target,
    TargetError,
    build_agent,
    import_target,
    parse_target,
    resolve_target,
)
from band_trio.errors import (
    AgentAlreadyRunningError,
    AuthenticationError,
    BandConfigError,
    PermissionDeniedError,
    SupersededError,
)

__all__ = [
    "EXIT_BAD_CONFIG",
    "EXIT_CRASHED",
    "EXIT_DRAINED",
    "EXIT_SUPERSEDED",
    "ProductionOptions",
    "exit_status",
    "run_agent",
]

logger = get_logger("band_trio.run")

EXIT_DRAINED: Final = 0
EXIT_CRASHED: Final = 1
EXIT_BAD_CONFIG: Final = 2
EXIT_SUPERSEDED: Final = 3


@attrs.frozen
class ProductionOptions:
    """What ``band-trio run`` was asked to do.

    Attributes:
        target: the target as given.
        check: validate, reach ``/agent/me`` once, print, exit.
        health_port: overrides ``AgentConfig.health_port`` when not None.
        health_host: overrides ``AgentConfig.health_host`` when not None.
        as_json: ``--check`` prints one JSON object.
    """

    target: str
    check: bool = False
    health_port: int | None = None
    health_host: str | None = None
    as_json: bool = False


def exit_status(error: BaseException | None) -> int:
    """The exit status for a run that ended with ``error`` (None: drained)."""
    if error is None:
        return EXIT_DRAINED
    if isinstance(error, SupersededError | AgentAlreadyRunningError):
        return EXIT_SUPERSEDED
    if isinstance(error, BandConfigError | AuthenticationError | PermissionDeniedError):
        return EXIT_BAD_CONFIG
    return EXIT_CRASHED


def run_agent(options: ProductionOptions) -> int:
    """Load the target, build its agent and serve it (or check it); returns
    the exit status (see the module docstring)."""
    try:
        target = parse_target(options.target)
        resolved = resolve_target(import_target(target), target.attribute)
    except Exception as exc:
        return _load_failed(options, exc)
    try:
        return trio.run(_main, options, target, resolved)
    except KeyboardInterrupt:  # a signal before the agent's handler was installed
        return EXIT_DRAINED


def _load_failed(options: ProductionOptions, exc: BaseException) -> int:
    print(
        f"band-trio run: cannot load {options.target}: {describe_load_error(exc)}", file=sys.stderr
    )
    return EXIT_BAD_CONFIG


async def _build(options: ProductionOptions, resolved: ResolvedTarget) -> Agent:
    agent = await build_agent(
        resolved, make_agent=lambda adapter: Agent.create(adapter=adapter, handle_signals=True)
    )
    if agent.handle_signals is None:
        agent.handle_signals = True
    changes: dict[str, Any] = {}
    if options.health_port is not None:
        changes["health_port"] = options.health_port
    if options.health_host is not None:
        changes["health_host"] = options.health_host
    if changes:
        agent.runtime.config = attrs.evolve(agent.runtime.config, **changes)
    return agent


async def _main(options: ProductionOptions, target: Target, resolved: ResolvedTarget) -> int:
    try:
        agent = await _build(options, resolved)
    except TargetError as exc:
        return _load_failed(options, exc)
    except BandConfigError as exc:
        print(f"band-trio run: {exc}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    except Exception as exc:
        return _load_failed(options, exc)
    if options.check:
        return await _check(options, target, resolved, agent)
    try:
        await agent.serve()
    except Exception as exc:
        status = exit_status(exc)
        if status == EXIT_CRASHED:
            logger.exception("the agent crashed")
        else:
            logger.error("the agent stopped: %s", exc)
        print(f"band-trio run: {exc}", file=sys.stderr)
        return status
    return EXIT_DRAINED


async def _check(
    options: ProductionOptions, target: Target, resolved: ResolvedTarget, agent: Agent
) -> int:
    runtime = agent.runtime
    try:
        async with runtime.open_rest() as rest:
            me = await rest.get_me()
    except Exception as exc:
        print(f"band-trio run --check: {exc}", file=sys.stderr)
        return exit_status(exc)
    cfg = runtime.config
    state_dir = cfg.resolve_state_dir(runtime.agent_id)
    found: dict[str, Any] = {
        "target": target.spec,
        "object": f"{resolved.name} ({resolved.kind.value})",
        "adapter": type(agent.adapter).__name__,
        "agent_id": me.id,
        "name": me.name,
        "handle": me.handle,
        "description": me.description,
        "rest_url": runtime.settings.rest_url,
        "ws_url": runtime.settings.ws_url,
        "state_dir": str(state_dir) if state_dir is not None else "(in memory)",
        "health": f"{cfg.health_host}:{cfg.health_port}" if cfg.health_port is not None else None,
        "shutdown_timeout": cfg.shutdown_timeout,
    }
    if options.as_json:
        print(json.dumps(found), flush=True)
    else:
        width = max(len(k) for k in found) + 2
        for key, value in found.items():
            print(f"{key + ':':<{width}}{'(off)' if value is None else value}", flush=True)
    return EXIT_DRAINED
