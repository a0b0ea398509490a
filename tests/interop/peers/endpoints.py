"""The REST endpoints an interop probe must cover, as ``"METHOD /path"`` labels.

Pure data with no imports, so both the probe (run with the band-client-rest
venv's python, which finds this file beside it) and band-trio's own tests can
read it. Path templates and numbering follow (protocol, "Agent endpoints
(/api/v1/agent) — summary table") for the agent and ("Human endpoints (/api/v1/me)
— brief") for the human.

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

#: The 38 agent endpoints of (protocol, "Agent endpoints (/api/v1/agent) — summary
#: table"), in the table's order.
AGENT_ENDPOINTS: tuple[str, ...] = (
    "GET /api/v1/agent/me",  # 1
    "GET /api/v1/agent/peers",  # 2
    "GET /api/v1/agent/chats",  # 3
    "POST /api/v1/agent/chats",  # 4
    "GET /api/v1/agent/chats/{id}",  # 5
    "PATCH /api/v1/agent/chats/{id}",  # 6
    "GET /api/v1/agent/chats/{chat_id}/participants",  # 7
    "POST /api/v1/agent/chats/{chat_id}/participants",  # 8
    "DELETE /api/v1/agent/chats/{chat_id}/participants/{id}",  # 9
    "GET /api/v1/agent/chats/{chat_id}/messages",  # 10
    "POST /api/v1/agent/chats/{chat_id}/messages",  # 11
    "GET /api/v1/agent/chats/{chat_id}/messages/next",  # 12
    "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processing",  # 13
    "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processed",  # 14
    "POST /api/v1/agent/chats/{chat_id}/messages/{id}/failed",  # 15
    "POST /api/v1/agent/chats/{chat_id}/events",  # 16
    "GET /api/v1/agent/chats/{chat_id}/context",  # 17
    "POST /api/v1/agent/chats/{chat_id}/activity",  # 18
    "PUT /api/v1/agent/chats/{chat_id}/files",  # 19
    "GET /api/v1/agent/chats/{chat_id}/files/{id}",  # 20
    "GET /api/v1/agent/chats/{chat_id}/tasks",  # 21
    "POST /api/v1/agent/chats/{chat_id}/tasks",  # 22
    "GET /api/v1/agent/chats/{chat_id}/tasks/{id}",  # 23
    "POST /api/v1/agent/chats/{chat_id}/tasks/{id}",  # 24
    "GET /api/v1/agent/chats/{chat_id}/tasks/{id}/history",  # 25
    "GET /api/v1/agent/chats/{chat_id}/board",  # 26
    "PUT /api/v1/agent/chats/{chat_id}/board",  # 27
    "GET /api/v1/agent/contacts",  # 28
    "POST /api/v1/agent/contacts/add",  # 29
    "POST /api/v1/agent/contacts/remove",  # 30
    "GET /api/v1/agent/contacts/requests",  # 31
    "POST /api/v1/agent/contacts/requests/respond",  # 32
    "GET /api/v1/agent/memories",  # 33
    "POST /api/v1/agent/memories",  # 34
    "GET /api/v1/agent/memories/{id}",  # 35
    "POST /api/v1/agent/memories/{id}/supersede",  # 36
    "POST /api/v1/agent/memories/{id}/archive",  # 37
    "POST /api/v1/agent/delegation/token",  # 38
)

#: Human endpoints the local platform must serve (to register
#: agents, rooms, participants, messages, peers, contact requests, memories).
HUMAN_REQUIRED: tuple[str, ...] = (
    "POST /api/v1/me/agents/register",
    "GET /api/v1/me/chats",
    "POST /api/v1/me/chats",
    "GET /api/v1/me/chats/{chat_id}/messages",
    "POST /api/v1/me/chats/{chat_id}/messages",
    "GET /api/v1/me/chats/{chat_id}/participants",
    "POST /api/v1/me/chats/{chat_id}/participants",
    "DELETE /api/v1/me/chats/{chat_id}/participants/{id}",
    "GET /api/v1/me/peers",
    "GET /api/v1/me/contacts/requests",
    "POST /api/v1/me/contacts/requests",
    "GET /api/v1/me/contacts/requests/sent",
    "POST /api/v1/me/contacts/requests/{id}/approve",
    "POST /api/v1/me/contacts/requests/{id}/reject",
    "DELETE /api/v1/me/contacts/requests/{id}",
    "GET /api/v1/me/memories",
    "GET /api/v1/me/memories/{id}",
    "DELETE /api/v1/me/memories/{id}",
    "POST /api/v1/me/memories/{id}/supersede",
    "POST /api/v1/me/memories/{id}/archive",
    "POST /api/v1/me/memories/{id}/restore",
)

#: The rest of (protocol, "Human endpoints (/api/v1/me) — brief"). The probe calls
#: them too; a platform that does
#: not serve one (404/405 with a proper error body) is reported, not failed.
HUMAN_OPTIONAL: tuple[str, ...] = (
    "GET /api/v1/me/agents",
    "DELETE /api/v1/me/agents/{id}",
    "POST /api/v1/me/agents/bulk-delete",
    "POST /api/v1/me/chats/bulk-delete",
    "GET /api/v1/me/bulk-deletions/{id}",
    "GET /api/v1/me/chats/{id}",
    "GET /api/v1/me/contacts",
    "POST /api/v1/me/contacts/remove",
    "POST /api/v1/me/contacts/resolve",
    "GET /api/v1/me/profile",
    "PUT /api/v1/me/profile",
)

HUMAN_ENDPOINTS: tuple[str, ...] = HUMAN_REQUIRED + HUMAN_OPTIONAL
