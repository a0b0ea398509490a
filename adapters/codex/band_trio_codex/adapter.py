"""``CodexAdapter``: a band-trio agent that is a Codex agent (``codex app-server``).

Each room gets its own app-server process (:class:`~band_trio_codex.rpc.CodexProcess`),
started on the room's first turn in a process group of its own, reused across
turns, and closed (stdin closed, SIGTERM, SIGKILL of the group, each step
bounded) when the room is left, when the agent stops, after ``idle_timeout``
without a turn (the adapter's background work watches the clock), or when
the agent holds more than ``max_live_processes``. The
room's Codex thread id is recorded in the room (a ``task`` event with
``codex_thread_id`` metadata, where the official adapter keeps it), so a closed
process or a restarted agent resumes the thread; the system prompt and the
platform history go only into a new thread.

The platform tools are the thread's Codex *dynamic tools*; Codex calls one
with an ``item/tool/call`` request, which runs on Trio in the room's turn
(the turn's cancel scope, ledger and events). Every server request gets an
answer: a tool's output, an approval decision, or an explicit error.
Nothing reaches the room except through the Band tools: Codex's final text is
never posted, and a turn that neither replied nor declined is judged like
every adapter's.
"""

from __future__ import annotations

import logging
import math
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs
import trio

from band_trio import (
    AgentFailure,
    AgentToolsProtocol,
    BandError,
    Capability,
    CustomTools,
    Emit,
    HistoryConverter,
    PlatformMessage,
    SimpleAdapter,
)
from band_trio.adapter import (
    PromptSettings,
    Residents,
    ResidentsStatistics,
    ToolCategory,
    config_or_default,
    report_failure,
)
from band_trio_codex.config import CodexConfig
from band_trio_codex.history import (
    CodexHistory,
    CodexHistoryConverter,
    turn_input,
)
from band_trio_codex.rpc import CodexProcess, Incoming
from band_trio_codex.turn import CodexTurn, TurnOutcome, UsageAnchor

__all__ = [
    "CLIENT_NAME",
    "PROVIDER",
    "CodexAdapter",
    "CodexAdapterStatistics",
    "CodexTurnError",
    "approval_reply",
]

logger = logging.getLogger("band_trio_codex")

PROVIDER: Final = "codex"
"""The ``provider`` of the adapter's failure reports."""
CLIENT_NAME: Final = "band_trio_codex"
"""The ``clientInfo.name`` the adapter gives the app-server."""
_APPROVAL_REPLY: Final = re.compile(r"(?<!\S)/(approve|deny)\s+`?([0-9a-f]{6})\b", re.IGNORECASE)
_POLL_FIRST: Final = 0.25  # seconds before the first re-read of an approval wait
_POLL_MAX: Final = 5.0  # the longest pause between two reads
_THREADS: Final = CodexHistoryConverter()  # records a room's thread id


class CodexTurnError(BandError):
    """A Codex turn failed: the app-server could not start, ended the turn
    with an error, timed out, or exited before the turn's end. The room was
    shown the generic failure text; the details are in the message and the
    logs."""


@attrs.frozen
class CodexAdapterStatistics:
    """What :meth:`CodexAdapter.statistics` reports.

    Attributes:
        processes: the rooms' app-server processes (live, busy, opened,
            closed idle or over the limit).
        killed: app-servers killed because they did not end a turn in time.
        turns: turns that reached Codex's ``turn/completed``.
        server_requests: server requests answered (tools, approvals, errors).
        live_readers: reader tasks still running (zero once every process is closed).
    """

    processes: ResidentsStatistics
    killed: int
    turns: int
    server_requests: int
    live_readers: int


class CodexAdapter(SimpleAdapter[CodexHistory]):
    """Answers Band messages with Codex, one ``codex app-server`` per room.

    Args:
        config: the settings (default :class:`CodexConfig()`).
        custom_tools: typed Python tools offered next to the platform tools.
        history_converter: how the room's history reaches a new thread.
        emit: posts of its own; supported ``tool_calls`` (with Codex's call
            and item ids), ``thoughts`` (reasoning items), ``task_events``
            (the thread id record, plans) and ``usage``; all on by default.
        capabilities: tool families beyond the chat tools: ``memory``,
            ``contacts``, ``tasks``, ``files`` (default none).
        include_tools: offer only these tools.
        exclude_tools: never offer these tools.
        include_categories: offer only tools of these categories.

    Raises:
        BandConfigError: an unsupported emit kind or capability, or a bad config.
    """

    SUPPORTED_EMIT = frozenset({Emit.TOOL_CALLS, Emit.THOUGHTS, Emit.TASK_EVENTS, Emit.USAGE})
    SUPPORTED_CAPABILITIES = frozenset(
        {Capability.MEMORY, Capability.CONTACTS, Capability.TASKS, Capability.FILES}
    )

    def __init__(
        self,
        config: CodexConfig | None = None,
        *,
        custom_tools: CustomTools | None = None,
        history_converter: HistoryConverter[CodexHistory] | None = None,
        emit: Emit | str | Iterable[Emit | str] | None = None,
        capabilities: Capability | str | Iterable[Capability | str] | None = None,
        include_tools: Iterable[str] | str | None = None,
        exclude_tools: Iterable[str] | str | None = None,
        include_categories: ToolCategory | str | Iterable[ToolCategory | str] | None = None,
    ) -> None:
        config = config_or_default(config, CodexConfig)
        super().__init__(
            history_converter=history_converter or CodexHistoryConverter(),
            emit=emit,
            capabilities=capabilities,
            include_tools=include_tools,
            exclude_tools=exclude_tools,
            include_categories=include_categories,
            custom_tools=custom_tools,
            prompt=PromptSettings.of(config),
        )
        self.config = config
        self._processes: Residents[CodexProcess] = Residents(
            limit=config.max_live_processes, idle_timeout=config.idle_timeout
        )
        self._threads: dict[str, str] = {}  # room -> Codex thread id
        self._recorded: dict[str, str] = {}  # room -> thread id last recorded in the room
        self._usage: dict[str, UsageAnchor] = {}  # thread -> usage anchor
        self._readers: list[CodexProcess] = []
        self._idle_changed = trio.Event()  # a room went idle: the next expiry moved
        self._killed = 0
        self._turns = 0
        self._server_requests = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.config.model!r})"

    # ------------------------------------------------------------------ state

    def thread_id(self, room_id: str) -> str | None:
        """The Codex thread id of ``room_id``, when one is known."""
        return self._threads.get(room_id)

    def live_rooms(self) -> list[str]:
        """The rooms holding a live app-server, least recently used first."""
        return list(self._processes)

    def process_pid(self, room_id: str) -> int | None:
        """The process id of ``room_id``'s app-server, or None."""
        process = self._processes.get(room_id)
        return None if process is None else process.pid

    def statistics(self) -> CodexAdapterStatistics:
        """Counts of the processes and turns so far."""
        self._readers = [p for p in self._readers if not p.reader_done.is_set()]
        return CodexAdapterStatistics(
            processes=self._processes.statistics(),
            killed=self._killed,
            turns=self._turns,
            server_requests=self._server_requests,
            live_readers=len(self._readers),
        )

    # ------------------------------------------------------------------ lifecycle

    async def on_cleanup(self, room_id: str) -> None:
        """The room was left: close its app-server (bounded) and forget it."""
        process = self._processes.remove(room_id)
        self._threads.pop(room_id, None)
        self._recorded.pop(room_id, None)
        if process is not None:
            await self._close_all([process])

    async def cleanup_all(self) -> None:
        """The agent stops: close every app-server at once (each bounded)."""
        await self._close_all([process for _room, process in self._processes.remove_all()])

    async def run_background(self) -> None:
        """Close app-servers as soon as their room has been idle for
        ``idle_timeout`` (runs while the agent serves; without it, idle ones
        are closed at the next turn's start)."""
        if self.config.idle_timeout is None:
            return
        while True:
            self._idle_changed = trio.Event()
            due = self._processes.next_expiry()
            with trio.move_on_at(math.inf if due is None else due):
                await self._idle_changed.wait()
            await self.close_idle()

    async def close_idle(self) -> int:
        """Close the app-servers of rooms idle for ``idle_timeout`` (every
        turn does this first); how many were closed."""
        expired = self._processes.expired(trio.current_time())
        await self._close_all([process for _room, process in expired])
        return len(expired)

    async def _close_all(self, processes: list[CodexProcess]) -> None:
        if not processes:
            return
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for process in processes:
                    nursery.start_soon(process.close, self.config.close_timeout)

    # ------------------------------------------------------------------ one turn

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: CodexHistory,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        """Run one turn on the room's app-server.

        Raises:
            CodexTurnError: the app-server could not start, the turn failed or
                timed out, or the process ended before the turn did (the
                generic failure text was posted first).
            trio.Cancelled: the turn was cancelled; Codex was interrupted (or
                its process killed) before this returned.
        """
        if self.config.approvals is not None and approval_reply(msg.content) is not None:
            # An answer to an approval wait, read by the wait itself: no turn.
            await tools.no_reply("an approval reply")
            return
        await self.close_idle()
        known = self._threads.get(room_id)
        if known is None and is_session_bootstrap and history.thread_id is not None:
            known = history.thread_id
            self._recorded[room_id] = known
        process: CodexProcess | None = None
        turn: CodexTurn | None = None
        try:
            process = await self._lease(room_id)
            new_thread = await self._ensure_thread(process, tools, room_id, known)
            replay = new_thread and (is_session_bootstrap or known is not None)
            items = turn_input(
                msg,
                history=history.text if replay else "",
                participants_msg=participants_msg,
                contacts_msg=contacts_msg,
            )
            assert process.thread_id is not None
            anchor = self._usage.setdefault(process.thread_id, UsageAnchor())
            turn = CodexTurn(self, tools, process, anchor)
            turn.sender = msg
            outcome = await turn.run(items, self.config.turn_timeout)
            await self._judge(tools, room_id, outcome)
        except (BandError, OSError) as exc:  # OSError: the command could not start
            if isinstance(exc, CodexTurnError):
                raise
            logger.error("room %s: Codex turn failed: %r", room_id, exc)
            await report_failure(tools, AgentFailure.generic(PROVIDER))
            raise CodexTurnError(f"Codex turn failed: {exc}") from exc
        finally:
            with trio.CancelScope(shield=True):
                if turn is not None:
                    self._server_requests += turn.answered
                    self._killed += turn.killed
                    await self.emit_usage(tools, turn.usage)
                if process is not None:
                    await self._release(room_id, process)

    async def _judge(self, tools: AgentToolsProtocol, room_id: str, outcome: TurnOutcome) -> None:
        if outcome.status == "timeout":
            logger.warning("room %s: Codex turn timed out", room_id)
            await report_failure(tools, AgentFailure.generic(PROVIDER, code="timeout"))
            raise CodexTurnError(f"Codex turn timed out after {self.config.turn_timeout}s")
        if outcome.status == "transport_closed":
            await report_failure(tools, AgentFailure.generic(PROVIDER, code="transport_closed"))
            raise CodexTurnError("Codex transport closed unexpectedly")
        self._turns += 1
        if outcome.status != "completed":
            logger.error("room %s: Codex turn %s: %s", room_id, outcome.status, outcome.error)
            await report_failure(tools, AgentFailure.generic(PROVIDER, code=outcome.error_code))
            raise CodexTurnError(f"Codex turn {outcome.status}: {outcome.error}")

    async def approval_decision(
        self, tools: AgentToolsProtocol, request: Incoming, sender: PlatformMessage
    ) -> str:
        """The answer to one of Codex's approval requests in a turn answering
        ``sender``'s message: ``accept`` or ``decline``, posted in the room as
        a notice.

        Accepted at once with :class:`ApprovalSettings` configured and a
        sender who is the room's owner (``owner_approves``) or a named
        approver; always declined without approvals configured. For anyone
        else: declined at once, or, with ``approval_timeout``, decided by an
        authorised participant's ``/approve <id>`` or ``/deny <id>`` within
        that time (declined when none comes).
        """
        summary = _approval_summary(request)
        asker = sender.sender_handle or sender.sender_id
        authorized, reason = await self._authorized(tools, sender)
        settings = self.config.approvals
        if authorized or settings is None or settings.approval_timeout is None:
            decision = "accept" if authorized else "decline"
            await _notice(
                tools,
                f"Approval requested ({summary}). Decision: **{decision}** ({reason}).",
                [asker],
            )
            return decision
        return await self._ask(tools, summary, settings.approval_timeout, asker)

    async def _ask(
        self, tools: AgentToolsProtocol, summary: str, seconds: float, asker: str
    ) -> str:
        """Wait at most ``seconds`` for an authorised ``/approve`` or ``/deny``."""
        ident = secrets.token_hex(3)
        approvers = await self._approvers(tools)
        handles = list(approvers.values())
        if not handles:
            await _notice(
                tools,
                f"Approval requested ({summary}). Decision: **decline** "
                "(nobody in the room may approve).",
                [asker],
            )
            return "decline"
        decision, reason = "decline", f"no authorised answer within {seconds:g}s"
        with trio.move_on_after(seconds):
            await _notice(
                tools,
                f"Approval requested ({summary}), id `{ident}`. Reply to me `/approve {ident}` "
                f"or `/deny {ident}` within {seconds:g}s; only these participants may decide.",
                handles,
            )
            pause = _POLL_FIRST
            while True:
                answer = await self._answer_from(tools, ident, approvers)
                if answer is not None:
                    decision, reason = answer
                    break
                await trio.sleep(pause)
                pause = min(pause * 1.5, _POLL_MAX)
        await _notice(
            tools,
            f"Approval `{ident}` ({summary}). Decision: **{decision}** ({reason}).",
            handles,
        )
        return decision

    async def _answer_from(
        self, tools: AgentToolsProtocol, ident: str, approvers: Mapping[str, str]
    ) -> tuple[str, str] | None:
        try:
            messages = await tools.unprocessed_messages()
        except BandError as exc:
            logger.warning("room %s: could not read approval replies: %r", tools.room_id, exc)
            return None
        for message in messages:
            form = approval_reply(message.content)
            if form is None or form[1] != ident:
                continue
            name = approvers.get(message.sender_id)
            if name is None:
                logger.info(
                    "room %s: ignored an approval reply from %s", tools.room_id, message.sender_id
                )
                continue
            if form[0] == "approve":
                return "accept", f"approved by {name}"
            return "decline", f"denied by {name}"
        return None

    async def _approvers(self, tools: AgentToolsProtocol) -> dict[str, str]:
        """The room's participants who may decide an approval: id -> handle."""
        settings = self.config.approvals
        if settings is None:
            return {}
        try:
            roster = await tools.get_participants_list()
        except BandError as exc:
            logger.warning("room %s: could not read the roster: %r", tools.room_id, exc)
            return {}
        return {
            p.id: p.handle or p.id
            for p in roster
            if (settings.owner_approves and p.role == "owner")
            or {p.id, p.handle or ""} & settings.approvers
        }

    async def _authorized(
        self, tools: AgentToolsProtocol, sender: PlatformMessage
    ) -> tuple[bool, str]:
        settings = self.config.approvals
        if settings is None:
            return False, "approvals are off"
        names = {sender.sender_id, sender.sender_handle or ""}
        if names & settings.approvers:
            return True, "a named approver asked"
        if settings.owner_approves:
            try:
                participants = await tools.get_participants_list()
            except Exception as exc:
                logger.warning("room %s: could not read the roster: %r", tools.room_id, exc)
                return False, "the roster could not be read"
            for participant in participants:
                if participant.id == sender.sender_id and participant.role == "owner":
                    return True, "the room's owner asked"
        return False, "only the room's owner or a named approver may approve"

    async def _lease(self, room_id: str) -> CodexProcess:
        """The room's app-server, started (and initialized) when it has none."""
        process = self._processes.acquire(room_id, trio.current_time())
        if process is not None and not process.broken:
            return process
        if process is not None:
            self._processes.remove(room_id)
            await self._close_all([process])
        config = self.config
        process = CodexProcess(
            room_id,
            config.argv(),
            {**os.environ, **config.env},
            config.workdir(room_id),
            request_timeout=config.request_timeout,
            max_line_bytes=config.max_line_bytes,
            event_buffer=config.event_buffer,
            stderr_path=config.stderr_path,
        )
        try:
            await process.open()
            self._readers.append(process)
            await process.request(
                "initialize",
                {
                    "clientInfo": {"name": CLIENT_NAME, "version": "0.1.0"},
                    "capabilities": {"experimentalApi": True},
                },
            )
            await process.notify("initialized")
        except BaseException:
            await self._close_all([process])
            raise
        evicted = self._processes.add(room_id, process, trio.current_time())
        await self._close_all([p for _room, p in evicted])
        return process

    async def _ensure_thread(
        self,
        process: CodexProcess,
        tools: AgentToolsProtocol,
        room_id: str,
        known: str | None,
    ) -> bool:
        """Give the process the room's thread: resume the known one, else
        start a new one (with the system prompt and the tools). True: new."""
        if process.thread_id is not None:
            return False
        settings = self._thread_settings(room_id)
        new = True
        if known is not None:
            try:
                result = await process.request("thread/resume", {"threadId": known, **settings})
                process.thread_id = _thread_id(result) or known
                new = False
            except BandError as exc:
                logger.warning("room %s: resuming Codex thread %s failed: %r", room_id, known, exc)
                if process.broken:
                    raise
        if new:
            dynamic = [
                {
                    "type": "function",
                    "name": schema.name,
                    "description": schema.description,
                    "inputSchema": dict(schema.input_schema),
                }
                for schema in self.neutral_tools(tools)
            ]
            params = {
                **settings,
                "developerInstructions": self.system_prompt,
                "dynamicTools": dynamic,
            }
            if self.config.sandbox is not None:
                params["sandbox"] = self.config.sandbox
            result = await process.request("thread/start", params)
            thread = _thread_id(result)
            if thread is None:
                raise CodexTurnError("Codex did not give the new thread an id")
            process.thread_id = thread
            self._usage[thread] = UsageAnchor(known_total=True)
        thread_id = process.thread_id
        assert thread_id is not None
        self._threads[room_id] = thread_id
        if (
            self._recorded.get(room_id) != thread_id
            and self.features.emits(Emit.TASK_EVENTS)
            and await _THREADS.record(tools, thread_id, {"codex_room_id": room_id})
        ):
            self._recorded[room_id] = thread_id
        return new

    def _thread_settings(self, room_id: str) -> dict[str, Any]:
        config = self.config
        settings: dict[str, Any] = {"approvalPolicy": config.approval_policy}
        if config.model is not None:
            settings["model"] = config.model
        workdir = config.workdir(room_id)
        if workdir is not None:
            settings["cwd"] = str(workdir)
        return settings

    async def _release(self, room_id: str, process: CodexProcess) -> None:
        if process.broken:
            if self._processes.get(room_id) is process:
                self._processes.remove(room_id)
            await self._close_all([process])
        over = self._processes.release(room_id, trio.current_time())
        self._idle_changed.set()
        await self._close_all([p for _room, p in over])


def _thread_id(result: Any) -> str | None:
    thread = result.get("thread") if isinstance(result, Mapping) else None
    ident = thread.get("id") if isinstance(thread, Mapping) else None
    return ident if isinstance(ident, str) and ident else None


def approval_reply(content: str) -> tuple[str, str] | None:
    """``("approve" | "deny", id)`` when ``content`` answers an approval wait
    (``/approve <id>`` or ``/deny <id>``, mentions allowed around it), else None."""
    match = _APPROVAL_REPLY.search(content)
    return None if match is None else (match.group(1).lower(), match.group(2).lower())


async def _notice(tools: AgentToolsProtocol, text: str, mentions: list[str]) -> None:
    try:
        await tools.send_notice(text, mentions)
    except Exception as exc:
        logger.warning("room %s: could not post the approval notice: %r", tools.room_id, exc)


def _approval_summary(request: Incoming) -> str:
    params = request.params
    command = params.get("command")
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    if isinstance(command, str) and command:
        return f"run `{command[:200]}`"
    if "fileChange" in request.method or request.method == "applyPatchApproval":
        return "change files"
    return request.method
