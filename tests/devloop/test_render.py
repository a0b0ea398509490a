"""How the terminal chat shows each kind of message and live event."""

from __future__ import annotations

import json

from band_trio.devloop.render import ChatDirectory, render_event, render_message, shorten


def roster() -> ChatDirectory:
    r = ChatDirectory()
    r.learn({"id": "u1", "name": "You", "handle": "you", "type": "User"})
    r.learn({"id": "a1", "name": "echo", "handle": "you/echo", "type": "Agent"})
    return r


def message(kind: str, content: str, **extra: object) -> dict[str, object]:
    return {"id": "m", "sender_id": "a1", "message_type": kind, "content": content, **extra}


def test_text_shows_mention_tokens_as_handles() -> None:
    line = render_message(message("text", "@[[u1]] hi, ask @[[zz]]"), roster())
    assert line == "@you/echo: @you hi, ask @zz"


def test_tool_call_and_result_show_name_arguments_and_output() -> None:
    call = json.dumps({"name": "search", "args": {"q": "trio"}, "tool_call_id": "t"})
    result = json.dumps(
        {"name": "search", "output": "3 hits", "tool_call_id": "t", "is_error": False}
    )
    failed = json.dumps({"name": "search", "output": "boom", "tool_call_id": "t", "is_error": True})
    r = roster()
    assert render_message(message("tool_call", call), r) == '  @you/echo -> search({"q": "trio"})'
    assert (
        render_message(message("tool_result", result), r)
        == "  @you/echo <- search returned: 3 hits"
    )
    assert render_message(message("tool_result", failed), r) == "  @you/echo <- search failed: boom"


def test_thought_error_usage_and_other_events_are_marked() -> None:
    r = roster()
    assert render_message(message("thought", "hmm"), r) == "  @you/echo thinks: hmm"
    assert render_message(message("error", "model down"), r) == "  !! @you/echo error: model down"
    usage = message(
        "task", "Token usage: input=3 output=4", metadata={"band_usage": {"input_tokens": 3}}
    )
    assert render_message(usage, r) == "  @you/echo usage: Token usage: input=3 output=4"
    assert render_message(message("task", "done"), r) == "  @you/echo [task] done"


def test_an_unknown_sender_falls_back_to_its_name() -> None:
    line = render_message({"sender_id": "x9", "sender_name": "Zed", "content": "yo"}, roster())
    assert line == "Zed: yo"


def test_working_state_failures_and_roster_changes() -> None:
    r = roster()
    state = {"agent_id": "a1", "status": "idle", "stopped": False, "connected": True}
    assert render_event("agent_activity", state, r) == "* @you/echo is connected"
    assert render_event("agent_activity", state, r) is None
    working = {**state, "status": "working"}
    assert render_event("agent_activity", working, r) == "* @you/echo is working…"
    stopped = {**state, "stopped": True}
    assert render_event("agent_activity", stopped, r) == (
        "* @you/echo is stopped here (/play resumes it), is idle"
    )
    gone = {**stopped, "stopped": False, "connected": False}
    assert render_event("agent_activity", gone, r) == "* @you/echo is offline, plays again"
    status = {"message_id": "m", "agent_id": "a1", "status": "processed"}
    assert render_event("message_status", status, r) is None
    assert render_event("message_status", status, r, verbose=True) == "  (@you/echo: processed)"
    failed = {**status, "status": "failed", "attempt": 2}
    assert render_event("message_status", failed, r) == "  !! @you/echo: attempt 2 failed"
    interrupted = {**status, "attempt": 1, "interrupted": True}
    assert render_event("message_status", interrupted, r) == "  * @you/echo: turn interrupted"
    added = {"participant": {"id": "a2", "name": "Bot", "handle": "you/bot", "type": "Agent"}}
    assert render_event("participant_added", added, r) == "* @you/bot joined the room"
    assert "a2" in r.agents


def test_shorten_flattens_and_cuts() -> None:
    assert shorten("a\n  b") == "a b"
    assert shorten("x" * 10, 5) == "xxxx…"
