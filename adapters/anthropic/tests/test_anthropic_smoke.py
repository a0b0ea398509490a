"""The real anthropic client runs on Trio (through anyio) against the stub."""

from __future__ import annotations

import anthropic
import sniffio
import trio
from anthropic_stub import HANG, AnthropicStub, message, text


async def test_the_client_runs_on_trio(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(message(text("hi there"), usage=(3, 2)))
    with trio.fail_after(10):
        assert sniffio.current_async_library() == "trio"
        reply = await anthropic_client.messages.create(
            model="claude-test",
            max_tokens=16,
            messages=[{"role": "user", "content": "hello"}],
        )
    assert reply.content[0].type == "text"
    assert reply.content[0].text == "hi there"
    assert reply.usage.input_tokens == 3
    (request,) = anthropic_stub.requests
    assert request.path == "/v1/messages"
    # The key travels as x-api-key or as a bearer token, depending on the version.
    auth = request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
    assert "test-key" in auth
    assert request.body["messages"] == [{"role": "user", "content": "hello"}]
    # The client reports the async library it found (anyio under Trio).
    assert request.headers.get("x-stainless-async", "async:trio") == "async:trio"


async def test_cancelling_a_request_in_flight_is_prompt(
    anthropic_stub: AnthropicStub, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    anthropic_stub.push(HANG)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                await anthropic_client.messages.create(
                    model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "x"}]
                )
                raise AssertionError("the request should not have returned")

            nursery.start_soon(call)
            await anthropic_stub.wait_for_requests(1)
            nursery.cancel_scope.cancel()
    assert nursery.cancel_scope.cancelled_caught
