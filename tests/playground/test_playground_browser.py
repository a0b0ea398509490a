"""The browser playground in a real headless Chromium, against a real agent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import FloatRect, Page, expect

from tests.playground.world import (
    BROKEN_WORD,
    FAILING_WORD,
    FAILURE,
    LONG_RESULT,
    LONG_WORD,
    ROOM_TITLE,
    SLOW_WORD,
    THOUGHT,
    World,
    running_world,
)

pytestmark = pytest.mark.browser


def open_room(page: Page, world: World) -> None:
    page.goto(world.playground_url)
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#room-title")).to_have_text(ROOM_TITLE)
    expect(page.locator(f'#agents li[data-agent="{world.agent_id}"]')).to_be_visible()


def send(page: Page, text: str) -> None:
    page.locator("#message-input").fill(text)
    page.locator("#send").click()
    expect(page.locator(".msg.text.mine").filter(has_text=text.split()[-1])).to_be_visible()


def test_a_message_gets_the_agents_tool_call_and_reply(
    page: Page, world: World, tmp_path: Path
) -> None:
    open_room(page, world)
    send(page, f"@{world.agent_handle} what is the weather?")
    reply = page.locator(".msg.text:not(.mine)").filter(has_text="It is sunny in Lyon today.")
    expect(reply).to_be_visible()
    tool = page.locator('.msg.tool[data-type="tool_call"]')
    expect(tool).to_have_count(1)
    expect(tool.locator(".title")).to_have_text("Tool call · lookup")
    expect(tool.locator("pre.args")).to_contain_text('"query": "weather in Lyon"')
    expect(tool.locator("pre.result")).to_have_text("sunny, 21 degrees")
    # The mention token is shown as the agent's handle, and the delivery settles.
    mine = page.locator(".msg.text.mine").last
    expect(mine.locator(".mention")).to_have_text(f"@{world.agent_handle}")
    expect(mine.locator(".delivery")).to_contain_text("processed")
    agent = page.locator(f'#agents li[data-agent="{world.agent_id}"]')
    expect(agent.locator(".stats")).to_contain_text("processed: 1")
    page.screenshot(path=str(tmp_path / "conversation.png"))


def test_thoughts_errors_and_usage_are_rendered_apart(page: Page, world: World) -> None:
    open_room(page, world)
    send(page, f"@{world.agent_handle} weather please")
    thought = page.locator('.msg.thought[data-type="thought"] .card')
    expect(thought).to_contain_text(THOUGHT)
    usage = page.locator('.msg.usage[data-type="task"]')
    expect(usage).to_have_text(f"{world.agent_name} · usage: 12 in / 7 out tokens")
    send(page, f"@{world.agent_handle} the {BROKEN_WORD} case")
    error = page.locator('.msg.error[data-type="error"] .card')
    expect(error.locator(".title")).to_have_text("Error")
    expect(error).to_contain_text(FAILURE)
    expect(page.locator(".msg.text:not(.mine)").last).to_contain_text("Sorry")
    # Each kind has its own look: the error card is not styled like the thought.
    assert error.evaluate("e => getComputedStyle(e).color") != thought.evaluate(
        "e => getComputedStyle(e).color"
    )


def test_interrupt_stops_a_slow_turn(page: Page, world: World) -> None:
    open_room(page, world)
    agent = page.locator(f'#agents li[data-agent="{world.agent_id}"]')
    expect(agent.locator(".dot.on")).to_be_visible()
    send(page, f"@{world.agent_handle} think about it {SLOW_WORD}")
    expect(agent).to_have_attribute("data-status", "working")
    expect(page.locator("#working")).to_have_text(f"{world.agent_name} is working…")
    page.locator("#interrupt").click()
    expect(agent).to_have_attribute("data-status", "idle")
    expect(page.locator("#working")).to_be_hidden()
    # The interrupted turn leaves a note, and its attempt says how it ended.
    expect(page.locator(".msg.note.interrupted")).to_have_text(
        f"{world.agent_name}: turn interrupted"
    )
    expect(page.locator(".attempt .attempt-title").last).to_have_text(
        f"{world.agent_name} · attempt 1 · interrupted"
    )
    slow = page.locator(".msg.text.mine").filter(has_text=SLOW_WORD)
    expect(slow.locator(".delivery")).to_contain_text("processed")
    expect(page.locator(".msg.text:not(.mine)")).to_have_count(0)
    # The agent is free again: the next message gets its answer.
    send(page, f"@{world.agent_handle} and now?")
    expect(page.locator(".msg.text:not(.mine)")).to_have_count(1)


def test_interrupt_with_nothing_running_says_so(page: Page, world: World) -> None:
    open_room(page, world)
    page.locator("#interrupt").click()
    expect(page.locator("#notice")).to_have_text("Nothing to interrupt: no turn is running.")


def test_a_failing_turn_groups_and_numbers_its_attempts(page: Page, world: World) -> None:
    open_room(page, world)
    send(page, f"@{world.agent_handle} the {FAILING_WORD} case")
    attempts = page.locator(".attempt")
    expect(attempts).to_have_count(3)
    for number in (1, 2, 3):
        attempt = page.locator(f'.attempt[data-attempt="{number}"]')
        expect(attempt.locator(".attempt-title")).to_have_text(
            f"{world.agent_name} · attempt {number} · failed"
        )
        # The thought of each attempt is in that attempt's group.
        expect(attempt.locator('.cards .msg.thought[data-type="thought"]')).to_have_count(1)
    notes = page.locator(".msg.note.failed")
    expect(notes).to_have_text([f"{world.agent_name}: attempt {n} failed" for n in (1, 2, 3)])


def test_a_long_tool_result_is_collapsed_until_clicked(page: Page, world: World) -> None:
    open_room(page, world)
    send(page, f"@{world.agent_handle} tell me {LONG_WORD}")
    tool = page.locator('.msg.tool[data-type="tool_call"]')
    expect(tool.locator("details.long-result summary")).to_contain_text("40 lines")
    result = tool.locator("pre.result")
    expect(result).to_be_hidden()
    tool.locator("details.long-result summary").click()
    expect(result).to_be_visible()
    expect(result).to_have_text(LONG_RESULT)


def test_stop_and_play_show_on_the_agent(page: Page, world: World) -> None:
    open_room(page, world)
    agent = page.locator(f'#agents li[data-agent="{world.agent_id}"]')
    page.locator("#stop").click()
    expect(agent).to_have_attribute("data-status", "stopped")
    expect(page.locator(f'#room-list button[data-room="{world.room_id}"] .badge')).to_have_text(
        "stopped"
    )
    page.locator("#play").click()
    expect(agent).to_have_attribute("data-status", "idle")


def test_create_a_room_and_invite_the_agent(page: Page, world: World) -> None:
    open_room(page, world)
    page.locator("#new-room-title").fill("Second room")
    page.locator("#new-room button").click()
    expect(page.locator("#room-title")).to_have_text("Second room")
    expect(page.locator("#room-list li")).to_have_count(2)
    expect(page.locator("#agents")).to_contain_text("No agents in this room.")
    page.locator("#invite-select").select_option(world.agent_id)
    page.locator("#invite-button").click()
    expect(page.locator(f'#agents li[data-agent="{world.agent_id}"]')).to_be_visible()
    expect(page.locator("#participants .chip.agent")).to_have_text(world.agent_name)
    # Mentions complete from the room's participants.
    page.locator("#message-input").press_sequentially("hello @ec")
    menu = page.locator("#mention-menu")
    expect(menu).to_be_visible()
    page.locator("#message-input").press("Tab")
    expect(page.locator("#message-input")).to_have_value(
        re.compile(rf"^hello @{re.escape(world.agent_handle)} $")
    )
    page.locator("#message-input").press("Enter")
    expect(page.locator(".msg.text:not(.mine)")).to_contain_text("It is sunny in Lyon today.")


def test_the_page_without_a_key_says_how_to_open_it(page: Page, world: World) -> None:
    response = page.goto(f"{world.rest_url}/playground")
    assert response is not None
    expect(page.locator("#notice")).to_contain_text("/playground?token=")


def test_a_wrong_key_is_named(page: Page, world: World) -> None:
    response = page.goto(f"{world.rest_url}/playground?token=band_u_not_a_key")
    assert response is not None
    assert response.status == 401
    expect(page.locator("body")).to_contain_text("This key is wrong")
    # A key refused after the page loaded (kept from an earlier run) is named too.
    page.goto(world.playground_url)
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate("sessionStorage.setItem('band-playground-token', 'band_u_stale')")
    page.goto(f"{world.rest_url}/playground")
    expect(page.locator("#notice")).to_contain_text("This key was refused")


def test_the_key_leaves_the_address_bar_and_survives_a_reload(page: Page, world: World) -> None:
    open_room(page, world)
    assert "token" not in page.url
    assert world.token not in page.url
    page.reload()
    expect(page.locator("#live")).to_have_text("live")
    expect(page.locator("#room-title")).to_have_text(ROOM_TITLE)


def test_the_page_has_an_icon(page: Page, world: World) -> None:
    open_room(page, world)
    href = page.locator('link[rel="icon"]').get_attribute("href")
    assert href == "/playground/favicon.svg"
    response = page.request.get(f"{world.rest_url}{href}")
    assert response.ok
    assert response.headers["content-type"] == "image/svg+xml"


def box(page: Page, selector: str) -> FloatRect:
    found = page.locator(selector).bounding_box()
    assert found is not None, selector
    return found


def test_narrow_windows_stack_the_columns(page: Page, world: World) -> None:
    open_room(page, world)
    wide = [box(page, s) for s in (".rooms", ".conversation", ".side")]
    assert wide[0]["y"] == wide[1]["y"] == wide[2]["y"]
    page.set_viewport_size({"width": 700, "height": 900})
    rooms, conversation, side = (box(page, s) for s in (".rooms", ".conversation", ".side"))
    assert rooms["x"] == conversation["x"] == side["x"]
    assert rooms["y"] < conversation["y"] < side["y"]
    assert conversation["width"] > 600


MENTION_CASES = json.loads((Path(__file__).parents[1] / "mention_cases.json").read_text())


def test_mentions_resolve_by_the_terminal_chats_rule(page: Page, world: World) -> None:
    open_room(page, world)
    for case in MENTION_CASES["cases"]:
        resolved = page.evaluate(
            "([text, candidates]) => resolveMentions(text, candidates)",
            [case["text"], MENTION_CASES["candidates"]],
        )
        assert resolved == {"content": case["content"], "mentions": case["mentions"]}, case


def test_a_short_mention_goes_to_that_agent_only(page: Page) -> None:
    with running_world(quiet_agent="quiet") as world:
        assert world.quiet_agent_handle is not None
        open_room(page, world)
        expect(page.locator("#agents li")).to_have_count(2)
        short = world.agent_handle.rsplit("/", 1)[1]
        send(page, f"@{short} what is the weather?")
        mine = page.locator(".msg.text.mine").last
        expect(mine.locator(".mention")).to_have_text(f"@{world.agent_handle}")
        expect(page.locator(".msg.text:not(.mine)").last).to_contain_text("sunny in Lyon")
        expect(mine.locator(".delivery")).to_contain_text("processed")
        expect(mine.locator(".delivery span[data-agent]")).to_have_count(1)
        expect(mine.locator(f'.delivery span[data-agent="{world.agent_id}"]')).to_have_count(1)
