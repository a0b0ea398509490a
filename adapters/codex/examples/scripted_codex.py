"""A Codex agent on the local platform, offline.

The real ``codex app-server`` (``npm install @openai/codex``) answers a
message in a room of the embedded Band platform. Instead of OpenAI's API it
talks to a scripted Responses API on 127.0.0.1 (:class:`ScriptedResponsesAPI`),
declared as a model provider with ``-c`` settings; it streams its answers as
server-sent events, like the real one: the "model" replies through
``band_send_message``, then ends its turn::

    python adapters/codex/examples/scripted_codex.py

``BAND_CODEX`` names the ``codex`` executable (else ``codex`` on ``PATH``).
For a real agent, drop ``config_overrides`` and ``env`` (Codex then uses its
login or ``OPENAI_API_KEY``) and the local platform with its room helper
``agent_in_rooms``: serve the adapter with ``band_trio.open_agent(adapter=...)``,
the ``BAND_*`` settings then coming from the environment.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import h11
import trio
from band_trio_codex import CodexAdapter, CodexConfig

from band_trio import open_local_platform
from band_trio.local import AgentCredentials, LocalPlatform
from band_trio.testing.rooms import agent_in_rooms


def _stream(output: list[dict[str, Any]]) -> bytes:
    """One Responses API answer as the server-sent events that stream it."""
    response = {"id": "resp_1", "object": "response", "created_at": 0, "model": "scripted"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress"}}
    ]
    for index, item in enumerate(output):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    usage = {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}
    done = {**response, "status": "completed", "output": output, "usage": usage}
    events.append({"type": "response.completed", "response": done})
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n".encode()
        for n, e in enumerate(events)
    )


class ScriptedResponsesAPI:
    """A stand-in for the Responses API: the first request of a turn gets a
    ``band_send_message`` call, the one carrying its result a closing text."""

    def __init__(self, user_handle: str) -> None:
        self.user_handle = user_handle
        self.url = ""

    def decide(self, body: dict[str, Any]) -> bytes:
        items = body.get("input") or []
        if any(item.get("type") == "function_call_output" for item in items):
            text = {"type": "output_text", "text": "Done.", "annotations": []}
            message = {"type": "message", "id": "msg_1", "role": "assistant", "content": [text]}
            return _stream([{**message, "status": "completed"}])
        reply = {"content": "Hello from Codex!", "mentions": [self.user_handle]}
        call = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "band_send_message",
            "arguments": json.dumps(reply),
            "status": "completed",
        }
        return _stream([call])

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/v1"
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


def codex_config(api_url: str, home: Path) -> CodexConfig:
    """A config whose ``codex app-server`` asks the scripted API at ``api_url``
    and keeps its threads under ``home``."""
    provider = (
        f'{{name="scripted", base_url="{api_url}", env_key="OPENAI_API_KEY", wire_api="responses"}}'
    )
    return CodexConfig(
        codex_path=os.environ.get("BAND_CODEX") or shutil.which("codex"),
        model="gpt-5.1-codex",
        config_overrides={"model_provider": '"scripted"', "model_providers.scripted": provider},
        env={"CODEX_HOME": str(home), "HOME": str(home), "OPENAI_API_KEY": "not-a-real-key"},
        cwd=home,
    )


async def main() -> list[str]:
    """One exchange; the room's messages as lines."""
    async with open_local_platform(seed_demo=False) as platform:
        creds = platform.register_agent("Codex", "A Codex agent.")
        api = ScriptedResponsesAPI(platform.user.handle)
        with tempfile.TemporaryDirectory(prefix="codex-example-") as tmp:
            return await _exchange(platform, creds, api, Path(tmp))


async def _exchange(
    platform: LocalPlatform, creds: AgentCredentials, api: ScriptedResponsesAPI, home: Path
) -> list[str]:
    """Serve the scripted API, run the agent, post a message, wait for the answer."""
    async with trio.open_nursery() as nursery:
        await nursery.start(api.serve)
        adapter = CodexAdapter(codex_config(api.url, home))
        async with agent_in_rooms(platform, adapter, agent=creds, title="Codex example") as [room]:
            posted = await room.post("hello!")
            with trio.fail_after(60):
                await room.settled(posted)
        nursery.cancel_scope.cancel()
    return platform.transcript(room.room_id)


if __name__ == "__main__":
    for line in trio.run(main):
        print(line)
