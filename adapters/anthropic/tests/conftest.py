"""Fixtures of the Anthropic adapter's tests: the local Messages API stub and a
real ``anthropic.AsyncAnthropic`` client pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import pytest
import trio
from anthropic_stub import AnthropicStub


@pytest.fixture
async def anthropic_stub(nursery: trio.Nursery) -> AnthropicStub:
    stub = AnthropicStub()
    await nursery.start(stub.serve)
    return stub


@pytest.fixture
async def anthropic_client(
    anthropic_stub: AnthropicStub,
) -> AsyncIterator[anthropic.AsyncAnthropic]:
    # No client retries: each scripted reply is answered exactly once.
    async with anthropic.AsyncAnthropic(
        base_url=anthropic_stub.url, api_key="test-key", max_retries=0, timeout=20.0
    ) as client:
        yield client
