"""Testing an adapter at three levels, with pytest (and pytest-trio for the
async tests, ``trio_mode = true`` in your pytest configuration):

1. a unit test: the adapter against ``FakeAgentTools``, which records every
   tool call and posts nothing;
2. an end-to-end test: the adapter served by a real ``Agent`` against the
   ``band_platform`` fixture (a local Band platform per test, from the pytest
   plugin band-trio installs);
3. the conformance kit: generated scenarios (interrupts, timeouts, restarts,
   odd histories) through the real runtime, checked against named invariants.

Run it with ``pytest examples/test_echo_adapter.py``.
"""

from __future__ import annotations

import trio
from echo_agent import Echo

import band_trio
from band_trio import HumanClient, LocalPlatform
from band_trio.adapter import AgentInput
from band_trio.testing import FakeAgentTools
from band_trio.testing.conformance import AdapterConformance


def a_message(content: str) -> band_trio.PlatformMessage:
    return band_trio.PlatformMessage(
        id="m1",
        room_id="r1",
        content=content,
        sender_id="u1",
        sender_type="User",
        sender_name="Ada",
    )


async def test_echo_answers_the_sender() -> None:
    tools = FakeAgentTools()
    await Echo().on_event(AgentInput(msg=a_message("hi"), tools=tools))
    (sent,) = tools.messages_sent
    assert sent.content == "You said: hi"
    assert sent.mentions == ("u1",)


async def test_echo_answers_in_a_room(band_platform: LocalPlatform) -> None:
    creds = band_platform.agents[0]
    async with HumanClient(
        base_url=band_platform.rest_url, api_key=band_platform.user.api_key
    ) as human:
        room = await human.create_room("test")
        await human.add_participant(room["id"], creds.id)
        async with band_trio.open_agent(
            adapter=Echo(),
            agent_id=creds.id,
            api_key=creds.api_key,
            rest_url=band_platform.rest_url,
            ws_url=band_platform.ws_url,
            config=band_trio.AgentConfig(state_dir=None),
        ):
            await human.post_message(room["id"], "ping", [creds.handle])
            state = band_platform.state.rooms[room["id"]]

            def replied() -> bool:
                return any(m.sender_id == creds.id for m in state.messages)

            with trio.fail_after(30):
                await band_platform.wait_for(replied)
    (reply,) = [m for m in state.messages if m.sender_id == creds.id]
    assert reply.content.endswith("ping")


class TestEchoConformance(AdapterConformance):
    """The kit's scenarios; synchronous, each runs its own ``trio.run``."""

    deterministic = True

    def make_adapter(self) -> Echo:
        return Echo()
