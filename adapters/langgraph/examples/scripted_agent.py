"""A LangGraph agent in a Band room, offline: the local platform, a scripted
chat model, and LangGraphAdapter on Trio.

Run it with ``uv run python adapters/langgraph/examples/scripted_agent.py``.
It starts an embedded Band platform, creates a room with you (the platform's
user) and the agent, posts a question, and prints the conversation once the
agent has answered through ``band_send_message``. Swap ``ScriptedChatModel``
for any LangChain chat model with ``bind_tools`` (and the local platform for
the real one) to run a real agent.
"""

from __future__ import annotations

from typing import Any

import trio
from band_trio_langgraph import LangGraphAdapter, LangGraphAdapterConfig
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call

import band_trio
from band_trio import (
    HumanClient,
    open_local_platform,
)


def scripted_model(user_id: str) -> ScriptedChatModel:
    """A model that answers the last question through the Band tool."""

    def answer(messages: list[Any], _tools: list[Any]) -> Any:
        last = messages[-1]
        if last.type == "tool":  # the reply was posted: end the turn
            return ai(text="Done.", usage=(40, 2))
        question = str(last.content)
        # The sender is labelled "[Name (@handle)]: ..."; greet by name.
        label = question[1 : question.index("]")] if question.startswith("[") else "there"
        sender = label.split(" (@", 1)[0]
        reply = f"Hello {sender}! You asked: {question.split(': ', 1)[-1]}"
        args = {"content": reply, "mentions": [user_id]}
        return ai(tool_call("band_send_message", args), usage=(120, 18))

    return ScriptedChatModel(default=answer)


async def main() -> list[str]:
    """Run the demo; the room's messages as ``"<sender>: <text>"`` lines."""
    async with open_local_platform(seed_demo=False) as platform:
        creds = platform.register_agent("LangGraph", "Answers with a LangGraph graph.")
        adapter = LangGraphAdapter(
            LangGraphAdapterConfig(custom_section="Answer briefly."),
            model=scripted_model(platform.user.id),
        )
        async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
            room = await human.create_room("LangGraph demo")
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
                    room["id"], f"@{creds.handle} what is LangGraph?", [creds.handle]
                )
                state = platform.state.rooms[room["id"]]

                def answered() -> bool:
                    delivery = state.by_id[sent["id"]].deliveries.get(creds.id)
                    return delivery is not None and str(delivery.status) == "processed"

                with trio.fail_after(30):
                    await platform.wait_for(answered)
        return platform.transcript(room["id"])


if __name__ == "__main__":
    for line in trio.run(main):
        print(line)
