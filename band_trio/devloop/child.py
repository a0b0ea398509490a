"""The agent's own process under ``band-trio dev``: import the target, serve it.

Run as ``python -m band_trio.devloop.child TARGET``. The dev process gives it
the agent's identity in the usual ``BAND_*`` variables and its state directory
through ``XDG_STATE_HOME`` (so every agent built here, by the user's code or
not, keeps its ledger there across restarts). A fresh process per start is
what makes a reload a clean re-import.

It talks to the dev process through lines on stdout that start with
:data:`~band_trio.devloop.reports.REPORT_PREFIX` and carry one JSON object:

* ``{"event": "watch", "files": [...]}`` — the user's source files it loaded
  (sent after loading, and after a failed load with the file that failed);
* ``{"event": "ready"}`` — connected and rooms joined;
* ``{"event": "error", "text": "..."}`` — the target could not be loaded; the
  process then exits with :data:`~band_trio.devloop.reports.EXIT_LOAD_ERROR`.

Any other output is the user's and is shown as it is. When its stdin reaches
end of file (the dev process is gone) the agent shuts down gracefully.

Its log records go to the terminal and, whole, to the agent's log file
(``<state home>/logs/<agent id>.log``). A failed turn is one line per attempt
on the terminal (its number and the error); the traceback is shown for the
first failed attempt of a message only, with the log file's path.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from band_trio.agent import Agent
from band_trio.devloop.reports import EXIT_LOAD_ERROR, LOG_LEVEL_VARIABLE, REPORT_PREFIX
from band_trio.devloop.targets import (
    Target,
    TargetError,
    build_agent,
    import_target,
    parse_target,
    resolve_target,
    user_source_files,
)

__all__ = ["TurnFailureFormatter", "describe_load_error", "log_file_path", "main"]

_FORMAT = "%(levelname)s %(name)s: %(message)s"
_TURN_FAILED = "turn failed after"

_OWN_FILES = (str(Path(__file__).resolve().parent), "<frozen importlib")


def _report(event: str, **fields: Any) -> None:
    sys.stdout.write(REPORT_PREFIX + json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def describe_load_error(exc: BaseException) -> str:
    """The text shown for a target that failed to load: the message alone for
    a :class:`TargetError`, else the traceback without the frames of this
    loader and of importlib (a ``SyntaxError`` shows its file, line and caret)."""
    if isinstance(exc, TargetError):
        return str(exc)
    report = traceback.TracebackException.from_exception(exc)
    report.stack = traceback.StackSummary.from_list(
        [frame for frame in report.stack if not frame.filename.startswith(_OWN_FILES)]
    )
    if not report.stack:
        return "".join(report.format_exception_only()).rstrip()
    return "".join(report.format()).rstrip()


def _failed_files(target: Target, exc: BaseException) -> list[str]:
    extra: list[str | None] = [str(target.path) if target.path else None]
    if isinstance(exc, SyntaxError):
        extra.append(exc.filename)
    extra += [frame.filename for frame in traceback.extract_tb(exc.__traceback__)]
    return user_source_files(target.root, extra)


async def _shutdown_when_parent_goes(agent: Agent) -> None:
    await trio.to_thread.run_sync(sys.stdin.buffer.read, abandon_on_cancel=True)
    agent.request_shutdown()


async def _serve(target: Target) -> int:
    try:
        module = import_target(target)
        resolved = resolve_target(module, target.attribute)
        agent = await build_agent(
            resolved, make_agent=lambda adapter: Agent.create(adapter=adapter)
        )
    except Exception as exc:
        _report("watch", files=_failed_files(target, exc))
        _report("error", text=describe_load_error(exc))
        return EXIT_LOAD_ERROR
    _report("watch", files=user_source_files(target.root, [str(target.path or "")]))

    async with trio.open_nursery() as nursery:

        async def serve(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            await agent.serve(task_status=task_status)
            nursery.cancel_scope.cancel()

        nursery.start_soon(_shutdown_when_parent_goes, agent)
        await nursery.start(serve)
        _report("ready")
    return 0


class TurnFailureFormatter(logging.Formatter):
    """The terminal's format: a failed turn's record is one line (the attempt
    and the error), with the traceback for the first failed attempt of each
    message only; every other record as ``LEVEL logger: message``."""

    def __init__(self, log_file: Path | None) -> None:
        super().__init__(_FORMAT)
        self._log_file = log_file
        self._shown: set[object] = set()

    def format(self, record: logging.LogRecord) -> str:
        exc = record.exc_info[1] if record.exc_info else None
        args = record.args if isinstance(record.args, tuple) else ()
        if exc is None or _TURN_FAILED not in str(record.msg) or len(args) < 2:
            return super().format(record)
        line = (
            f"{record.levelname} {record.name}: {record.getMessage()}: {type(exc).__name__}: {exc}"
        )
        message_id = args[1]
        if message_id in self._shown:
            return line
        self._shown.add(message_id)
        where = f" (every attempt's traceback: {self._log_file})" if self._log_file else ""
        return f"{line}{where}\n{self.formatException(record.exc_info).rstrip()}"  # type: ignore[arg-type]


def log_file_path(environ: dict[str, str] | None = None) -> Path | None:
    """The agent's log file under ``band-trio dev``: ``<XDG_STATE_HOME>/logs/<agent id>.log``."""
    env = os.environ if environ is None else environ
    home, agent_id = env.get("XDG_STATE_HOME"), env.get("BAND_AGENT_ID")
    if not home or not agent_id:
        return None
    return Path(home) / "logs" / f"{agent_id}.log"


def _configure_logging() -> None:
    level = os.environ.get(LOG_LEVEL_VARIABLE, "WARNING").upper()
    log_file = log_file_path()
    terminal = logging.StreamHandler()
    terminal.setFormatter(TurnFailureFormatter(log_file))
    handlers: list[logging.Handler] = [terminal]
    if log_file is not None:
        try:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            whole = logging.FileHandler(log_file, encoding="utf-8")
        except OSError:
            log_file = None
            terminal.setFormatter(TurnFailureFormatter(None))
        else:
            whole.setFormatter(logging.Formatter("%(asctime)s " + _FORMAT))
            # First: a record on the terminal is already in the file.
            handlers.insert(0, whole)
    logging.basicConfig(level=level, handlers=handlers)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the agent process; returns its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m band_trio.devloop.child TARGET", file=sys.stderr)
        return 2
    _configure_logging()
    try:
        target = parse_target(args[0])
    except TargetError as exc:
        _report("error", text=str(exc))
        return EXIT_LOAD_ERROR
    return trio.run(_serve, target)


if __name__ == "__main__":
    sys.exit(main())
