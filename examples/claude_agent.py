"""A Claude agent with platform tools and memories, offline.

``AnthropicAdapter`` runs the model's tool calls against the platform: here
the model first stores a memory about the person asking
(``band_store_memory``, offered because the agent has the ``MEMORY``
capability), then answers through ``band_send_message``. Plain text from the
model never reaches the room; only tools do.

To run it without a key or a network, the Anthropic client is given an HTTP
transport that answers the Messages API from a script (:class:`ScriptedClaude`)
and the Band platform is the embedded one::

    python examples/claude_agent.py

For a real agent, drop ``client=`` (the adapter then reads
``ANTHROPIC_API_KEY``) and the local platform (the ``BAND_*`` settings then
come from the environment).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import anthropic
import httpx2  # the HTTP package the anthropic client is built on
import trio
from band_trio_anthropic import AnthropicAdapter, AnthropicAdapterConfig

import band_trio
from band_trio import HumanClient, open_local_platform


class ScriptedClaude:
    """A stand-in for the Messages API: each request gets the next answer.

    It records every request body, so you can see what the adapter sends: the
    system prompt, the tools the capabilities allow, and the conversation.
    """

    def __init__(self, *answers: list[dict[str, Any]]) -> None:
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def client(self) -> anthropic.AsyncAnthropic:
        """An Anthropic client whose every request this script answers."""
        transport = httpx2.MockTransport(self._answer)
        return anthropic.AsyncAnthropic(
            api_key="not-a-real-key",
            http_client=httpx2.AsyncClient(transport=transport),
            max_retries=0,
        )

    def _answer(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        content = self.answers.pop(0) if self.answers else [{"type": "text", "text": "Done."}]
        calls_tools = any(block["type"] == "tool_use" for block in content)
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{next(self._ids)}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-5-5",
                "content": content,
                "stop_reason": "tool_use" if calls_tools else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        )


def tool_use(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def script_for(user_id: str) -> ScriptedClaude:
    """What the model "decides": remember a fact, then answer."""
    memory = {
        "content": "Prefers short answers.",
        "system": "long_term",
        "type": "semantic",
        "segment": "user",
        "thought": "They asked for brevity; later answers should follow it.",
        "scope": "subject",
        "subject_id": user_id,
    }
    reply = {"content": "Noted: I will keep my answers short.", "mentions": [user_id]}
    return ScriptedClaude(
        [tool_use("band_store_memory", memory, "toolu_1")],
        [tool_use("band_send_message", reply, "toolu_2")],
        [{"type": "text", "text": "Answered."}],
    )


async def main() -> list[str]:
    """Run one exchange; the room's messages and the stored memories, as lines."""
    async with open_local_platform(seed_demo=False) as platform:
        creds = platform.register_agent("Claude", "Answers with Claude, briefly.")
        claude = script_for(platform.user.id)
        adapter = AnthropicAdapter(
            AnthropicAdapterConfig(model="claude-sonnet-5-5", custom_section="Be brief."),
            client=claude.client(),
            capabilities=[band_trio.Capability.MEMORY],
        )
        async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
            room = await human.create_room("Claude example")
            await human.add_participant(room["id"], creds.id)
            async with band_trio.open_agent(
                adapter=adapter,
                agent_id=creds.id,
                api_key=creds.api_key,
                rest_url=platform.rest_url,
                ws_url=platform.ws_url,
                config=band_trio.AgentConfig(state_dir=None),
            ):
                sent = await human.post_message(
                    room["id"], f"@{creds.handle} please keep it short", [creds.handle]
                )
                state = platform.state.rooms[room["id"]]

                def answered() -> bool:
                    delivery = state.by_id[sent["id"]].deliveries.get(creds.id)
                    return delivery is not None and str(delivery.status) == "processed"

                with trio.fail_after(30):
                    await platform.wait_for(answered)
        lines = platform.transcript(room["id"])
        lines += [f"memory: {m.content}" for m in platform.state.memories.values()]
        return lines


if __name__ == "__main__":
    for line in trio.run(main):
        print(line)
