"""Agent memories (``/memories...``) and the human ``/me/memories`` views.

Who may see what (the local platform's rule; the platform's documentation
leaves it open):

- A memory belongs to the agent that stored it, and so to that agent's owner.
  The agent reads and changes its own; organisation-scope memories are also
  readable by agents of the same organisation.
- An agent may make a memory *about* someone (``subject_id``) only if it knows
  them: itself, its owner, one of its contacts, or someone it shares a room
  with. Any other id is refused (422), the same answer whether or not the id
  exists, so the check reveals nobody.
- The subject of a memory does not thereby see it: a user reads, changes and
  deletes the memories of the agents they own (and only reads organisation-scope
  ones of their organisation), never those another owner's agent keeps about
  them. What an agent remembers is its owner's business.
"""

from __future__ import annotations

from collections.abc import Callable

from band_trio.local._input import Obj, Query, json_longer_than
from band_trio.local._paging import cursor_page, offset_page, uses_offset
from band_trio.local.model import JSON, AgentRecord, Memory, UserRecord, new_id, now_ts
from band_trio.local.refusal import fail, forbidden, invalid, not_found
from band_trio.local.store import MAX_EVENT_METADATA_BYTES, PlatformState

__all__ = [
    "archive",
    "create",
    "get",
    "human_delete",
    "human_get",
    "human_list",
    "human_transition",
    "list_memories",
    "memory_json",
    "supersede",
]

SYSTEMS = ("sensory", "working", "long_term")
TYPES_BY_SYSTEM = {
    "sensory": ("iconic", "echoic", "haptic"),
    "working": ("episodic", "semantic", "procedural"),
    "long_term": ("episodic", "semantic", "procedural"),
}
ALL_TYPES = ("iconic", "echoic", "haptic", "episodic", "semantic", "procedural")
SEGMENTS = ("user", "agent", "tool", "guideline")
SCOPES = ("agent", "subject", "organization")
STATUSES = ("active", "superseded", "archived")
MAX_CONTENT = 10000


def _no_org() -> Exception:
    return fail(
        422,
        "organization scope requires the agent's owner to belong to an organization",
        code="org_scope_requires_organization",
        details={"/scope": ["requires an organization"]},
    )


def memory_json(memory: Memory) -> JSON:
    """AgentMemory."""
    return {
        "id": memory.id,
        "content": memory.content,
        "inserted_at": memory.inserted_at,
        "scope": memory.scope,
        "segment": memory.segment,
        "system": memory.system,
        "type": memory.type,
        "status": memory.status,
        "subject_id": memory.subject_id,
        "organization_id": memory.organization_id,
        "source_agent_id": memory.source_agent_id,
        "thought": memory.thought,
        "metadata": memory.metadata,
    }


def create(state: PlatformState, agent: AgentRecord, body: Obj) -> JSON:
    """Store a memory (``POST /memories``) after the scope/system/type/segment checks."""
    req = body.req_obj("memory")
    content = req.req_str("content", max_len=MAX_CONTENT)
    if not content.strip():
        raise invalid(req.at("content"), "can't be blank")
    system = req.req_str("system", choices=SYSTEMS)
    kind = req.req_str("type", choices=ALL_TYPES)
    if kind not in TYPES_BY_SYSTEM[system]:
        raise invalid(
            req.at("type"),
            f"must be one of {', '.join(TYPES_BY_SYSTEM[system])} for system {system}",
        )
    segment = req.req_str("segment", choices=SEGMENTS)
    thought = req.str_("thought", max_len=MAX_CONTENT)
    subject_id = req.str_("subject_id")
    scope = req.str_("scope", choices=SCOPES) or ("subject" if subject_id else "agent")
    if scope == "subject" and not subject_id:
        raise invalid(req.at("subject_id"), "is required for subject scope")
    if subject_id is not None and not _knows(state, agent, subject_id):
        raise invalid(
            req.at("subject_id"),
            "must be the agent, its owner, a contact or someone it shares a room with",
        )
    organization_id = None
    if scope == "organization":
        organization_id = state.organization_of(agent)
        if organization_id is None:
            raise _no_org()
    metadata: JSON | None = None
    meta = req.obj("metadata")
    if meta is not None:
        tags = meta.str_list("tags")
        references = meta.list_("references")
        metadata = dict(meta.data)
        # Bounded as an event's: a memory is kept (and served) for as long as it lives.
        if json_longer_than(metadata, MAX_EVENT_METADATA_BYTES):
            raise invalid(
                meta.pointer, f"is too large (maximum is {MAX_EVENT_METADATA_BYTES} bytes)"
            )
        if tags is not None:
            metadata["tags"] = tags
        if references is not None:
            metadata["references"] = references
    ts = now_ts()
    memory = Memory(
        id=new_id(),
        content=content,
        scope=scope,
        system=system,
        type=kind,
        segment=segment,
        thought=thought,
        subject_id=subject_id,
        organization_id=organization_id,
        source_agent_id=agent.id,
        metadata=metadata,
        inserted_at=ts,
        updated_at=ts,
        seq=state.next_seq(),
    )
    state.memories[memory.id] = memory
    state.memory_changed(memory.id)
    return memory_json(memory)


def _knows(state: PlatformState, agent: AgentRecord, subject_id: str) -> bool:
    if subject_id in (agent.id, agent.owner_id) or subject_id in state.contact_ids(agent.id):
        return True
    return any(subject_id in room.members for room in state.rooms_of(agent.id))


def _filters(query: Query, *, default_scope: str) -> Callable[[Memory], bool]:
    scope = query.str_("scope", choices=(*SCOPES, "all"), default=default_scope)
    status = query.str_("status", choices=(*STATUSES, "all"), default="active")
    system = query.str_("system", choices=SYSTEMS)
    kind = query.str_("type", choices=ALL_TYPES)
    segment = query.str_("segment", choices=SEGMENTS)
    subject_id = query.str_("subject_id")
    text = (query.str_("content_query") or "").lower()
    if scope == "subject" and not subject_id:
        raise invalid("/subject_id", "is required with scope=subject")

    def keep(m: Memory) -> bool:
        return (
            (scope == "all" or m.scope == scope)
            and (status == "all" or m.status == status)
            and (system is None or m.system == system)
            and (kind is None or m.type == kind)
            and (segment is None or m.segment == segment)
            and (subject_id is None or m.subject_id == subject_id)
            and (not text or text in m.content.lower())
        )

    return keep


def _page(
    rows: list[Memory], query: Query, render: Callable[[Memory], JSON]
) -> tuple[list[JSON], JSON, bool]:
    if uses_offset(query):
        page = query.int_("page", default=1)
        size = query.int_("page_size", default=20, maximum=50)
        chunk, meta = offset_page(rows, page, size)
        meta.update(has_more=page * size < len(rows), limit=size)
        return [render(m) for m in chunk], meta, True
    limit = query.int_("limit", default=20, maximum=100)
    chunk, cursor, more = cursor_page(rows, lambda m: m.seq, query.str_("cursor"), limit)
    return (
        [render(m) for m in chunk],
        {"has_more": more, "limit": limit, "next_cursor": cursor},
        False,
    )


def list_memories(
    state: PlatformState, agent: AgentRecord, query: Query
) -> tuple[list[JSON], JSON, bool]:
    """List memories (``GET /memories``). Returns ``(rows, metadata, deprecated_offset_used)``."""
    whose = query.str_("memory_scope", choices=("me", "org"), default="me")
    if whose == "org":
        org = state.organization_of(agent)
        if org is None:
            raise _no_org()
        keep = _filters(query, default_scope="organization")
        rows = [
            m
            for m in state.memories.values()
            if m.scope == "organization" and m.organization_id == org and keep(m)
        ]
    else:
        keep = _filters(query, default_scope="all")
        rows = [m for m in state.memories.values() if m.source_agent_id == agent.id and keep(m)]
    return _page(rows, query, memory_json)


def _visible_to_agent(state: PlatformState, agent: AgentRecord, memory_id: str) -> Memory:
    memory = state.memories.get(memory_id)
    if memory is None:
        raise not_found("memory")
    if memory.source_agent_id == agent.id:
        return memory
    org = memory.organization_id
    if memory.scope == "organization" and org is not None and org == state.organization_of(agent):
        return memory
    raise not_found("memory")


def get(state: PlatformState, agent: AgentRecord, memory_id: str) -> JSON:
    """One memory (``GET /memories/{id}``)."""
    return memory_json(_visible_to_agent(state, agent, memory_id))


def _transition(state: PlatformState, agent: AgentRecord, memory_id: str, status: str) -> JSON:
    memory = _visible_to_agent(state, agent, memory_id)
    if memory.source_agent_id != agent.id:
        raise forbidden("only the agent that stored a memory can change it")
    if memory.status != status:
        memory.status = status
        memory.updated_at = now_ts()
        state.memory_changed(memory.id)
    return memory_json(memory)


def supersede(state: PlatformState, agent: AgentRecord, memory_id: str) -> JSON:
    """Soft-delete a memory (``POST /memories/{id}/supersede``); only its source agent."""
    return _transition(state, agent, memory_id, "superseded")


def archive(state: PlatformState, agent: AgentRecord, memory_id: str) -> JSON:
    """Hide a memory (``POST /memories/{id}/archive``); only its source agent (humans can restore)."""
    return _transition(state, agent, memory_id, "archived")


# ---------------------------------------------------------------------- human side


def _user_memory_json(state: PlatformState, memory: Memory) -> JSON:
    out = memory_json(memory)
    source = state.agents.get(memory.source_agent_id or "")
    subject = state.principal(memory.subject_id or "")
    out.update(
        updated_at=memory.updated_at,
        chat_room_id=None,
        source_agent_name=source.name if source else None,
        subject_name=subject.name if subject else None,
        subject_type=subject.kind.lower() if subject else None,
    )
    return out


def _visible_to_user(state: PlatformState, user: UserRecord, memory: Memory) -> bool:
    source = state.agents.get(memory.source_agent_id or "")
    if source is not None and source.owner_id == user.id:
        return True
    return (
        memory.scope == "organization"
        and memory.organization_id is not None
        and (memory.organization_id == user.organization_id)
    )


def human_list(
    state: PlatformState, user: UserRecord, query: Query
) -> tuple[list[JSON], JSON, bool]:
    """``GET /me/memories``."""
    keep = _filters(query, default_scope="all")
    source_agent_id = query.str_("source_agent_id")
    room_id = query.str_("chat_room_id")
    rows = [
        m
        for m in state.memories.values()
        if _visible_to_user(state, user, m)
        and keep(m)
        and (source_agent_id is None or m.source_agent_id == source_agent_id)
        and room_id is None
    ]
    return _page(rows, query, lambda m: _user_memory_json(state, m))


def _human_memory(
    state: PlatformState, user: UserRecord, memory_id: str, *, change: bool = False
) -> Memory:
    memory = state.memories.get(memory_id)
    if memory is None or not _visible_to_user(state, user, memory):
        raise not_found("memory")
    if change:
        source = state.agents.get(memory.source_agent_id or "")
        if source is None or source.owner_id != user.id:
            raise forbidden("only the owner of the agent that stored a memory can change it")
    return memory


def human_get(state: PlatformState, user: UserRecord, memory_id: str) -> JSON:
    """``GET /me/memories/{id}``."""
    return _user_memory_json(state, _human_memory(state, user, memory_id))


def human_delete(state: PlatformState, user: UserRecord, memory_id: str) -> None:
    """``DELETE /me/memories/{id}`` (hard delete)."""
    memory = _human_memory(state, user, memory_id, change=True)
    del state.memories[memory.id]
    state.memory_changed(memory.id)


def human_transition(state: PlatformState, user: UserRecord, memory_id: str, action: str) -> JSON:
    """``POST /me/memories/{id}/supersede|archive|restore`` (restore: 422 when active)."""
    memory = _human_memory(state, user, memory_id, change=True)
    if action == "restore":
        if memory.status == "active":
            raise invalid("/status", "the memory is already active")
        memory.status = "active"
    else:
        memory.status = {"supersede": "superseded", "archive": "archived"}[action]
    memory.updated_at = now_ts()
    state.memory_changed(memory.id)
    return _user_memory_json(state, memory)
