"""The Phoenix v2 server logic of `Hub`, without sockets (frames go to the outbox)."""

from __future__ import annotations

import json
from typing import Any

import trio

from band_trio.local._input import Obj
from band_trio.local.hub import CloseRequest, Connection, Hub
from band_trio.local.store import PlatformState


def setup() -> tuple[PlatformState, Hub, Any, Any, str]:
    state = PlatformState()
    user = state.create_user("Ann", "ann")
    agent = state.register_agent(user, "Bot", "b")
    room = state.create_room(user, None).id
    state.drain_pushes()
    return state, Hub(state), user, agent, room


def sent(conn: Connection) -> list[Any]:
    out: list[Any] = []
    while True:
        try:
            item = conn.inbox.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return out
        out.append(item if isinstance(item, CloseRequest) else json.loads(item))


def test_join_reply_is_queued_before_any_push_on_the_topic() -> None:
    state, hub, user, agent, room = setup()
    conn = hub.open(agent, trio.CancelScope())
    hub.handle_frame(conn, json.dumps(["7", "7", f"agent_rooms:{agent.id}", "phx_join", {}]))
    state.add_participant(user, room, Obj({"participant": {"participant_id": agent.id}}))
    hub.deliver(state.drain_pushes())
    frames = sent(conn)
    assert frames[0] == [
        "7",
        "7",
        f"agent_rooms:{agent.id}",
        "phx_reply",
        {"status": "ok", "response": {}},
    ]
    assert frames[1][:4] == ["7", None, f"agent_rooms:{agent.id}", "room_added"]


def test_pushes_follow_the_current_join_ref_and_skip_unjoined_topics() -> None:
    state, hub, user, agent, room = setup()
    state.add_participant(user, room, Obj({"participant": {"participant_id": agent.id}}))
    state.drain_pushes()
    conn = hub.open(agent, trio.CancelScope())
    post = Obj({"message": {"content": "x", "mentions": [{"id": agent.id}]}})
    state.post_message(user, room, post)
    hub.deliver(state.drain_pushes())
    assert sent(conn) == []  # not joined: nothing
    hub.handle_frame(conn, json.dumps(["1", "1", f"chat_room:{room}", "phx_join", {}]))
    hub.handle_frame(conn, json.dumps(["3", "3", f"chat_room:{room}", "phx_join", {}]))
    state.post_message(user, room, post)
    hub.deliver(state.drain_pushes())
    frames = sent(conn)
    assert [f[0] for f in frames] == ["1", "3", "3"]
    assert frames[2][3] == "message_created"


def test_supersede_then_close_for_the_older_socket() -> None:
    _, hub, _, agent, _ = setup()
    old = hub.open(agent, trio.CancelScope())
    hub.handle_frame(old, json.dumps(["1", "1", f"agent_control:{agent.id}", "phx_join", {}]))
    new = hub.open(agent, trio.CancelScope())
    frames = sent(old)
    assert frames[1][:4] == ["1", None, f"agent_control:{agent.id}", "supersede"]
    assert frames[1][4]["retryable"] is False
    assert frames[2] == CloseRequest(1000)
    assert old.closed.is_set()
    assert hub.connections(agent.id) == [new]
    assert hub.statistics().supersedes == 1


def test_user_sockets_do_not_supersede_each_other() -> None:
    state, hub, user, _, _ = setup()
    first = hub.open(user, trio.CancelScope())
    second = hub.open(user, trio.CancelScope())
    assert hub.connections(user.id) == [first, second]
    assert state.is_online(user.id)
    hub.close(first)
    hub.close(second)
    assert not state.is_online(user.id)
    assert hub.joined_topics(user.id) == set()
