"""Accounts of the local platform: credentials, registration, deletion.

:class:`Accounts` is what both doors into the platform share for accounts: the
Python API of :class:`~band_trio.local.LocalPlatform` (a test creating a user)
and the HTTP API (``/_local/admin/users``, ``DELETE /api/v1/me/agents/{id}``).
It remembers the credentials of every agent registered through it, which is
what ``platform.agents`` shows.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from band_trio.local.hub import Hub
from band_trio.local.model import JSON, AgentRecord, UserRecord, new_id, now_ts
from band_trio.local.refusal import RequestRefusedError, invalid, not_found
from band_trio.local.store import PlatformState

__all__ = [
    "Accounts",
    "AgentCredentials",
    "UserCredentials",
    "agent_credentials",
    "user_credentials",
]


@attrs.frozen
class UserCredentials:
    """A user of the local platform and its API key (never shown in a repr)."""

    id: str
    api_key: str = attrs.field(repr=False)
    handle: str
    name: str


@attrs.frozen
class AgentCredentials:
    """An agent of the local platform and its API key (never shown in a repr)."""

    id: str
    api_key: str = attrs.field(repr=False)
    name: str
    handle: str


def user_credentials(user: UserRecord) -> UserCredentials:
    """The credentials of a user record."""
    return UserCredentials(id=user.id, api_key=user.api_key, handle=user.handle, name=user.name)


def agent_credentials(agent: AgentRecord) -> AgentCredentials:
    """The credentials of an agent record."""
    return AgentCredentials(
        id=agent.id, api_key=agent.api_key, name=agent.name, handle=agent.handle
    )


class Accounts:
    """Creates and deletes users and agents of one platform.

    Args:
        state: the platform's state.
        hub: the WebSocket hub (a deleted agent's sockets are closed).

    Attributes:
        agents: credentials of every agent registered through this object and
            not deleted since, oldest first.
    """

    def __init__(self, state: PlatformState, hub: Hub) -> None:
        self._state = state
        self._hub = hub
        self.agents: list[AgentCredentials] = []

    def restore(self) -> None:
        """List every agent the state already holds (read back from storage) as
        registered through this object, oldest first."""
        self.agents = [agent_credentials(agent) for agent in self._state.agents.values()]

    def create_user(self, name: str, handle: str, *, organization: bool = False) -> UserCredentials:
        """Create a user and return its credentials.

        Raises:
            ValueError: the handle is malformed or already taken.
        """
        return user_credentials(self._state.create_user(name, handle, organization=organization))

    def register_agent(
        self,
        name: str,
        description: str,
        *,
        owner_id: str,
        feature_flags: Mapping[str, bool] | None = None,
    ) -> AgentCredentials:
        """Register an agent owned by the user ``owner_id``.

        Raises:
            KeyError: ``owner_id`` is not a user of this platform.
            ValueError: ``name`` holds a control or bidi character.
        """
        agent = self._state.register_agent(
            self._state.users[owner_id], name, description, feature_flags=feature_flags
        )
        creds = agent_credentials(agent)
        self.agents.append(creds)
        return creds

    def delete_agent(self, user: UserRecord, agent_id: str, *, force: bool) -> JSON:
        """Delete an agent ``user`` owns; its live sockets are closed.

        Raises:
            RequestRefusedError: 404 for an agent the user does not own; 422
                ``execution_history_exists`` when the agent has deliveries and
                ``force`` is false.
        """
        state = self._state
        agent = state.agents.get(agent_id)
        if agent is None or agent.owner_id != user.id:
            raise not_found("agent")
        executions = sum(1 for room in state.rooms.values() for m in room.inbox.get(agent.id, ()))
        if executions and not force:
            raise invalid(
                "/force",
                "the agent has execution history; pass force=true",
                code="execution_history_exists",
            )
        state.delete_agent(agent.id)
        self._hub.drop(agent.id, abnormal=False)
        self.agents = [a for a in self.agents if a.id != agent.id]
        return {
            "id": agent.id,
            "name": agent.name,
            "description": agent.description,
            "executions_deleted": executions,
        }

    def bulk_delete(self, user: UserRecord, kind: str, ids: list[str], *, force: bool) -> JSON:
        """Delete several agents (``kind="agent"``) or rooms (``kind="chat"``) of
        ``user`` at once; one result per id, kept as a finished bulk job."""
        state = self._state
        started = now_ts()
        results: list[JSON] = []
        for ident in ids:
            error: JSON | None = None
            if kind == "chat":
                room = state.rooms.get(ident)
                if room is None or user.id not in room.members:
                    error = {"code": "not_found", "message": "chat room not found"}
                elif room.members[user.id].role != "owner":
                    error = {"code": "forbidden", "message": "only the owner can delete a room"}
                else:
                    state.delete_room(ident)
            else:
                try:
                    self.delete_agent(user, ident, force=force)
                except RequestRefusedError as exc:
                    known = exc.code in ("not_found", "execution_history_exists")
                    error = {
                        "code": exc.code if known else "delete_failed",
                        "message": exc.message or "delete failed",
                    }
            results.append(
                {
                    "id": ident,
                    "status": "failed" if error else "succeeded",
                    **({"error": error} if error else {}),
                }
            )
        failed = sum(1 for r in results if r["status"] == "failed")
        job: JSON = {
            "id": new_id(),
            "resource_type": kind,
            "status": "completed",
            "force": force,
            "total": len(ids),
            "processed": len(ids),
            "succeeded": len(ids) - failed,
            "failed": failed,
            "inserted_at": started,
            "started_at": started,
            "completed_at": now_ts(),
            "results": results,
        }
        state.bulk_jobs[job["id"]] = {**job, "owner_id": user.id}
        return job
