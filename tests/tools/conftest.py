"""Fixtures of the tools tests: the scripted platform, a RestClient on it,
recording turn hooks and room-bound tools."""

from __future__ import annotations

import pytest

from band_trio.tools import AgentTools
from band_trio.wire.rest import RestClient
from tests.scripted_platform import AGENT_ID, ROOM, ROSTER, RecordingHooks, platform, rest

__all__ = ["hooks", "platform", "rest", "tools"]


@pytest.fixture
def hooks() -> RecordingHooks:
    return RecordingHooks()


@pytest.fixture
def tools(rest: RestClient, hooks: RecordingHooks) -> AgentTools:
    return AgentTools(rest=rest, room_id=ROOM, agent_id=AGENT_ID, participants=ROSTER, hooks=hooks)
