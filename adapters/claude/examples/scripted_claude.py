"""A Claude Agent SDK agent on the local platform, offline.

The real ``claude`` CLI (bundled with claude-agent-sdk) answers a message in a
room of the embedded Band platform. Instead of Anthropic's API it talks to a
scripted Messages API on 127.0.0.1 (:class:`ScriptedMessagesAPI`), which
streams its answers as server-sent events, like the real one: the "model"
replies through ``band_send_message``, then ends its turn::

    python adapters/claude/examples/scripted_claude.py

For a real agent, drop ``env=`` (the CLI then uses ``ANTHROPIC_API_KEY`` or
its login) and the local platform with its room helper ``agent_in_rooms``:
serve the adapter with ``band_trio.open_agent(adapter=...)``, the ``BAND_*``
settings then coming from the environment.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import h11
import trio
from band_trio_claude import ClaudeAgentAdapter, ClaudeAgentConfig

from band_trio import open_local_platform
from band_trio.local import AgentCredentials, LocalPlatform
from band_trio.testing.rooms import agent_in_rooms


def _events(content: list[dict[str, Any]], stop_reason: str) -> bytes:
    """One Messages API answer as the server-sent events that stream it."""
    head = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "scripted",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 50, "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": head}]
    for index, block in enumerate(content):
        if block["type"] == "text":
            start, delta = (
                {"type": "text", "text": ""},
                {"type": "text_delta", "text": block["text"]},
            )
        else:  # tool_use: the input arrives as JSON text
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": index, "content_block": start},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 20},
        },
        {"type": "message_stop"},
    ]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


class ScriptedMessagesAPI:
    """A stand-in for the Messages API: a request that offers the Band tools
    gets the script's decision, anything else (a session title, say) a short text."""

    def __init__(self, user_handle: str) -> None:
        self.user_handle = user_handle
        self.url = ""

    def decide(self, body: dict[str, Any]) -> bytes:
        tools = {t.get("name") for t in body.get("tools") or []}
        last = body["messages"][-1]["content"]
        answered = isinstance(last, list) and any(b.get("type") == "tool_result" for b in last)
        if "mcp__band__band_send_message" not in tools or answered:
            return _events([{"type": "text", "text": "Done."}], "end_turn")
        reply = {"content": "Hello from Claude Code!", "mentions": [self.user_handle]}
        call = {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "mcp__band__band_send_message",
            "input": reply,
        }
        return _events([call], "tool_use")

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started()

    async def _handle(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                conn.receive_data(data)
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                answer = self.decide(json.loads(body or b"{}"))
                headers = [
                    ("content-type", "text/event-stream"),
                    ("content-length", str(len(answer))),
                ]
                await stream.send_all(conn.send(h11.Response(status_code=200, headers=headers)))
                await stream.send_all(conn.send(h11.Data(data=answer)))
                await stream.send_all(conn.send(h11.EndOfMessage()))
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
                body = bytearray()
            elif not isinstance(event, h11.Request):
                return


async def main() -> list[str]:
    """One exchange; the room's messages as lines."""
    async with open_local_platform(seed_demo=False) as platform:
        creds = platform.register_agent("Claude Code", "A Claude Agent SDK agent.")
        api = ScriptedMessagesAPI(platform.user.handle)
        with tempfile.TemporaryDirectory(prefix="claude-example-") as tmp:
            return await _exchange(platform, creds, api, Path(tmp))


async def _exchange(
    platform: LocalPlatform, creds: AgentCredentials, api: ScriptedMessagesAPI, home: Path
) -> list[str]:
    """Serve the scripted API, run the agent, post a message, wait for the answer."""
    async with trio.open_nursery() as nursery:
        await nursery.start(api.serve)
        adapter = ClaudeAgentAdapter(
            ClaudeAgentConfig(
                cwd=home,
                # The CLI only: where its API is, a key, a home of its own.
                env={
                    "ANTHROPIC_BASE_URL": api.url,
                    "ANTHROPIC_API_KEY": "not-a-real-key",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "HOME": str(home),
                    "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                },
            )
        )
        async with agent_in_rooms(platform, adapter, agent=creds, title="Claude Code example") as [
            room
        ]:
            posted = await room.post("hello!")
            with trio.fail_after(60):
                await room.settled(posted)
        nursery.cancel_scope.cancel()
    return platform.transcript(room.room_id)


if __name__ == "__main__":
    for line in trio.run(main):
        print(line)
