"""A LangGraph agent in a Band room, offline: the local platform, a scripted
chat model, and LangGraphAdapter on Trio.

Run it with ``uv run python adapters/langgraph/examples/scripted_agent.py``.
It starts an embedded Band platform, creates a room with you (the platform's
user) and the agent (``agent_in_rooms``), posts a question, and prints the
conversation once the agent has answered through ``band_send_message``. Swap
``ScriptedChatModel`` for any LangChain chat model with ``bind_tools`` (and
the local platform and its room helper for ``band_trio.open_agent`` on the
real one) to run a real agent.
"""

from __future__ import annotations

from typing import Any

import trio
from band_trio_langgraph import LangGraphAdapter, LangGraphAdapterConfig
from band_trio_langgraph.testing import ScriptedChatModel, ai, tool_call

from band_trio import open_local_platform
from band_trio.testing.rooms import agent_in_rooms


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
        async with agent_in_rooms(platform, adapter, agent=creds, title="LangGraph demo") as [room]:
            posted = await room.post("what is LangGraph?")
            with trio.fail_after(30):
                await room.settled(posted)
        return platform.transcript(room.room_id)


if __name__ == "__main__":
    for line in trio.run(main):
        print(line)
