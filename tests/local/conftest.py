"""Fixtures for the local platform tests (``band_platform`` comes from the
band_trio pytest plugin)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from band_trio.local import AgentCredentials, HumanClient, LocalPlatform
from tests.local.helpers import agent_http


@pytest.fixture
def demo(band_platform: LocalPlatform) -> AgentCredentials:
    return band_platform.agents[0]


@pytest.fixture
async def human(band_platform: LocalPlatform) -> AsyncIterator[HumanClient]:
    async with HumanClient(
        base_url=band_platform.rest_url, api_key=band_platform.user.api_key
    ) as client:
        yield client


@pytest.fixture
async def agent(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> AsyncIterator[httpx.AsyncClient]:
    async with agent_http(band_platform, demo) as client:
        yield client


@pytest.fixture
async def room(human: HumanClient, demo: AgentCredentials) -> str:
    """A room owned by the user with the demo agent in it."""
    created = await human.create_room("test room")
    await human.add_participant(created["id"], demo.id)
    return str(created["id"])
