"""How the terminal chat shows messages and live events, one text line each.

Pure functions of the event and of what is known about the people in the
room, so every format is tested without a terminal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from band_trio.adapter import is_usage_event

__all__ = ["ChatDirectory", "render_event", "render_message", "shorten"]

_TOKEN = re.compile(r"@\[\[([^\]]+)\]\]")
_MAX_DETAIL = 300


def shorten(text: str, limit: int = _MAX_DETAIL) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@attrs.define
class ChatDirectory:
    """Names and handles of the people and agents seen so far, by id."""

    names: dict[str, str] = attrs.Factory(dict)
    handles: dict[str, str] = attrs.Factory(dict)
    agents: set[str] = attrs.Factory(set)
    activity: dict[str, dict[str, Any]] = attrs.Factory(dict)
    """The last ``agent_activity`` data seen per agent (of the room shown)."""

    def learn(self, participant: Mapping[str, Any]) -> None:
        """Remember a participant, peer or agent record (``id``, ``name``,
        ``handle``, ``type``)."""
        pid = participant.get("id") or participant.get("participant_id")
        if not isinstance(pid, str):
            return
        if participant.get("name"):
            self.names[pid] = str(participant["name"])
        if participant.get("handle"):
            self.handles[pid] = str(participant["handle"])
        kind = participant.get("type") or participant.get("participant_type")
        if kind == "Agent" or str(kind).lower() == "agent":
            self.agents.add(pid)

    def label(self, pid: str | None, fallback: str | None = None) -> str:
        """``@handle`` when known, else the name, else the id."""
        if pid and pid in self.handles:
            return "@" + self.handles[pid]
        return fallback or (pid or "?")

    def display(self, text: str) -> str:
        """``text`` with the platform's ``@[[id]]`` mention tokens shown as ``@handle``."""
        return _TOKEN.sub(lambda m: self.label(m.group(1), "@" + m.group(1)), text)


def _json(content: str) -> dict[str, Any] | None:
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def render_message(message: Mapping[str, Any], roster: ChatDirectory) -> str:
    """One line for a message of any type (text, tool_call, tool_result,
    thought, error, task, usage...)."""
    sender_id = message.get("sender_id")
    sender = roster.label(sender_id, message.get("sender_name"))
    kind = message.get("message_type") or "text"
    content = str(message.get("content") or "")
    metadata = message.get("metadata")
    if kind == "text":
        return f"{sender}: {roster.display(content)}"
    if kind == "tool_call":
        call = _json(content)
        if call is not None and "name" in call:
            args = json.dumps(call.get("args") or {}, ensure_ascii=False)
            return f"  {sender} -> {call['name']}({shorten(args)})"
        return f"  {sender} -> tool call {shorten(content)}"
    if kind == "tool_result":
        result = _json(content)
        if result is not None and "name" in result:
            output = result.get("output")
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            verb = "failed" if result.get("is_error") else "returned"
            return f"  {sender} <- {result['name']} {verb}: {shorten(text)}"
        return f"  {sender} <- tool result {shorten(content)}"
    if kind == "thought":
        return f"  {sender} thinks: {shorten(content)}"
    if kind == "error":
        return f"  !! {sender} error: {shorten(content)}"
    if kind == "task" and is_usage_event(metadata if isinstance(metadata, Mapping) else None):
        return f"  {sender} usage: {shorten(content)}"
    return f"  {sender} [{kind}] {shorten(content)}"


def _activity_line(data: Mapping[str, Any], roster: ChatDirectory) -> str | None:
    """What changed in an agent's state since its last ``agent_activity``:
    connected, stopped in the room, working."""
    agent_id = data.get("agent_id")
    if not isinstance(agent_id, str):
        return None
    before = roster.activity.get(agent_id, {})
    roster.activity[agent_id] = dict(data)
    changes = []
    if "connected" in data and data["connected"] != before.get("connected"):
        changes.append("is connected" if data["connected"] else "is offline")
    if "stopped" in data and bool(data["stopped"]) != bool(before.get("stopped")):
        changes.append("is stopped here (/play resumes it)" if data["stopped"] else "plays again")
    if data.get("status") != before.get("status", "idle"):
        changes.append("is working…" if data.get("status") == "working" else "is idle")
    if not changes:
        return None
    return f"* {roster.label(agent_id)} " + ", ".join(changes)


def render_event(
    kind: str, data: Mapping[str, Any], roster: ChatDirectory, *, verbose: bool = False
) -> str | None:
    """One line for a live event of the current room, or None for an event not
    shown (message status changes other than failures and interruptions,
    unless ``verbose``)."""
    if kind == "message_created":
        return render_message(data, roster)
    if kind == "agent_activity":
        return _activity_line(data, roster)
    if kind == "message_status":
        status = data.get("status")
        who = roster.label(data.get("agent_id"))
        if data.get("interrupted"):
            return f"  * {who}: turn interrupted"
        if status == "failed":
            attempt = data.get("attempt")
            number = f" {attempt}" if isinstance(attempt, int) else ""
            return f"  !! {who}: attempt{number} failed"
        if not verbose:
            return None
        return f"  ({who}: {status})"
    if kind in ("participant_added", "participant_removed"):
        participant = data.get("participant")
        if not isinstance(participant, Mapping):
            return None
        roster.learn(participant)
        pid = participant.get("id") or participant.get("participant_id")
        who = roster.label(pid if isinstance(pid, str) else None, participant.get("name"))
        verb = "joined" if kind == "participant_added" else "left"
        return f"* {who} {verb} the room"
    return None
