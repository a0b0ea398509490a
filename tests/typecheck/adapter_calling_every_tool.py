"""An adapter that calls every method of ``AgentToolsProtocol`` and uses each
result with its declared type. Never run: ``tests/test_tool_protocol.py`` checks
it with ``mypy --strict``, as an adapter author's project would be checked."""

from __future__ import annotations

from band_trio import CustomTools, HistoryProvider, PlatformMessage, SimpleAdapter
from band_trio.adapter import AgentFailure, AgentToolsProtocol, Capability, ToolCategory

custom = CustomTools()


@custom.tool
def shout(text: str) -> str:
    """Repeat the text louder.

    Args:
        text: what to repeat.
    """
    return text.upper()


class EveryToolAdapter(SimpleAdapter[HistoryProvider]):
    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        room: str = tools.room_id
        me: str = tools.agent_id
        handles: list[str] = tools.available_mention_handles()
        sent = await tools.send_message(f"hi from {me} in {room}", handles, attachment_ids=None)
        if sent is not None:
            assert sent.id
        await tools.send_notice("a notice", ["@alice"])
        event = await tools.send_event("thinking", "thought", {"step": 1})
        if event is not None:
            assert event.id
        await tools.send_failure(AgentFailure("provider", "it failed", code=429))
        declined: dict[str, str] = await tools.no_reply(reason="not for me")
        people = await tools.get_participants_list()
        names: list[str | None] = [p.name for p in people]
        listed: list[dict[str, object]] = await tools.get_participants()
        waiting = await tools.unprocessed_messages(limit=10)
        senders: list[str] = [m.sender_id for m in waiting]
        await tools.lookup_peers(page=1, page_size=10)
        await tools.add_participant("@bob", role="member")
        await tools.remove_participant("@bob")
        new_room: str = await tools.create_chatroom(task_id=None)
        await tools.list_contacts(page=2, page_size=5)
        await tools.add_contact("@carol", message="hello")
        await tools.remove_contact(handle="@carol", contact_id=None)
        await tools.list_contact_requests(page=1, page_size=50, sent_status="pending")
        await tools.respond_contact_request("approve", handle="@dave", request_id=None)
        await tools.list_memories(
            subject_id=None,
            scope="agent",
            system="semantic",
            type="fact",
            segment="user",
            content_query="coffee",
            page_size=20,
            status=None,
        )
        stored = await tools.store_memory(
            "likes coffee", "semantic", "fact", "user", "useful later", "agent", None, {"k": 1}
        )
        memory_id = str(stored.get("id", ""))
        await tools.get_memory(memory_id)
        await tools.supersede_memory(memory_id)
        await tools.archive_memory(memory_id)
        files = await tools.list_room_files(cursor=None)
        await tools.read_room_file(str(files.get("id", "")))
        await tools.send_room_file("a,b\n", "table.csv", ["@alice"], caption="the table")
        await tools.list_tasks(state="active", cursor=None, limit=10)
        task = await tools.create_task("write it", detail=None, supersedes_id=None)
        task_id = str(task.get("id", ""))
        await tools.get_task(task_id, include=None)
        await tools.update_task(
            task_id,
            status="in_progress",
            active_form="Writing it",
            comment=None,
            subject=None,
            detail=None,
            state=None,
        )
        await tools.get_task_history(task_id, cursor=None, limit=5)
        await tools.get_board(include=None)
        await tools.set_board(goal_title="ship", goal_summary=None)
        schemas: list[dict[str, object]] = tools.get_tool_schemas(
            "anthropic",
            capabilities=[Capability.MEMORY, "tasks"],
            include_tools=None,
            exclude_tools=["band_create_chatroom"],
            include_categories=[ToolCategory.CHAT],
            custom_tools=custom,
        )
        tools.get_anthropic_tool_schemas(capabilities=frozenset({Capability.FILES}))
        tools.get_openai_tool_schemas()
        result = await tools.execute_tool_call("shout", {"text": "x"}, custom_tools=custom)
        text: str = result.text
        failed: bool = result.is_error
        assert declined or names or listed or senders or new_room or schemas or text or failed
