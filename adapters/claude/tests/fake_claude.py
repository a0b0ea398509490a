#!/usr/bin/env python3
"""A fake ``claude`` CLI speaking the SDK's stream-json control protocol, for
what the real CLI cannot be made to show. It answers every message by calling
``band_send_message`` through the SDK's in-process MCP server, except as
``FAKE_CLAUDE_MODE`` says:

* ``crash-first``: the first process started in ``FAKE_CLAUDE_STATE`` exits
  in the middle of its first turn; later ones answer.
* ``ignore-interrupt``: the turn never ends, interrupts go unanswered and
  SIGTERM is ignored (only SIGKILL ends it).
* ``chatty``: after each turn's result it writes ``CHATTER`` status messages
  more, more than the SDK buffers while nobody reads.

Each process appends its pid to ``FAKE_CLAUDE_STATE/pids``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

MODE = os.environ.get("FAKE_CLAUDE_MODE", "")
STATE = Path(os.environ["FAKE_CLAUDE_STATE"])
SESSION = f"fake-session-{os.getpid()}"
CHATTER = 300
pending: list[dict[str, Any]] = []
counter = 0


def write(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def read() -> dict[str, Any] | None:
    while True:
        line = sys.stdin.readline()
        if not line:
            return None
        line = line.strip()
        if line:
            return dict(json.loads(line))


def next_message() -> dict[str, Any] | None:
    return pending.pop(0) if pending else read()


def control(request: dict[str, Any]) -> dict[str, Any]:
    """Send a control request to the SDK and wait for its answer."""
    global counter
    counter += 1
    request_id = f"fake_{counter}"
    write({"type": "control_request", "request_id": request_id, "request": request})
    while True:
        message = read()
        if message is None:
            sys.exit(0)
        response = message.get("response") or {}
        if message.get("type") == "control_response" and response.get("request_id") == request_id:
            return dict(response.get("response") or {})
        pending.append(message)


def mcp(payload: dict[str, Any]) -> dict[str, Any]:
    answer = control({"subtype": "mcp_message", "server_name": "band", "message": payload})
    return dict(answer.get("mcp_response") or {})


def answer_turn(prompt: str) -> None:
    write({"type": "system", "subtype": "init", "session_id": SESSION})
    if MODE == "crash-first" and STATE.joinpath("pids").read_text().count("\n") == 1:
        sys.exit(3)
    if MODE == "ignore-interrupt":
        while True:
            time.sleep(1)  # interrupts and stdin are never read again
    args = {"content": f"fake answer to {len(prompt)} characters", "mentions": ["demo"]}
    write(
        {
            "type": "assistant",
            "message": {
                "model": "fake",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_fake",
                        "name": "mcp__band__band_send_message",
                        "input": args,
                    }
                ],
            },
            "parent_tool_use_id": None,
            "session_id": SESSION,
        }
    )
    mcp(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "fake-claude", "version": "0"},
            },
        }
    )
    mcp({"jsonrpc": "2.0", "method": "notifications/initialized"})
    result = mcp(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "band_send_message", "arguments": args},
        }
    ).get("result", {})
    write(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_fake",
                        "content": result.get("content", []),
                        "is_error": bool(result.get("isError")),
                    }
                ],
            },
            "session_id": SESSION,
        }
    )
    write(
        {
            "type": "result",
            "subtype": "success",
            "duration_ms": 1,
            "duration_api_ms": 1,
            "is_error": False,
            "num_turns": 1,
            "session_id": SESSION,
            "usage": {"input_tokens": 10, "output_tokens": 2},
        }
    )
    if MODE == "chatty":
        for index in range(CHATTER):
            write({"type": "system", "subtype": "status", "index": index, "session_id": SESSION})


def main() -> None:
    if MODE == "ignore-interrupt":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with STATE.joinpath("pids").open("a") as pids:
        pids.write(f"{os.getpid()}\n")
    while (message := next_message()) is not None:
        kind = message.get("type")
        if kind == "control_request":
            request = message.get("request") or {}
            write(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": message.get("request_id"),
                        "response": {},
                    },
                }
            )
            if request.get("subtype") == "interrupt":
                continue
        elif kind == "user":
            content = (message.get("message") or {}).get("content")
            answer_turn(content if isinstance(content, str) else json.dumps(content))


if __name__ == "__main__":
    main()
