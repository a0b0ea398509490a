"""AnthropicAdapter passes the conformance kit, with the real ``anthropic`` client
answered by the scripted Messages API stub.

The kit runs every scenario in virtual time with no socket, so the stub is
reached through an in-process transport of the client's HTTP library instead of its TCP server; it
answers from the stub's own script and request records. The scripted model
answers every user message with one ``band_send_message`` call mentioning
the sender, then ends its turn once it sees the tool result. Each model call
takes 1.5 virtual seconds, so interrupts, stops, removals and restarts often
land while a call is in flight.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import httpx2
import trio
from anthropic._base_client import get_platform
from anthropic_stub import AnthropicStub, Reply, Request, message, text, tool_use
from band_trio_anthropic import AnthropicAdapter, AnthropicHistoryConverter

from band_trio.testing.conformance import (
    AdapterConformance,
    HistoryConverterConformance,
    RunOptions,
    validate_anthropic_messages,
)

MODEL_LATENCY = 1.5
"""Virtual seconds each Messages API call takes."""

_SENDER = re.compile(r"^\[([^\]]+)\]: ")


def _answer(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]
    content = last["content"]
    if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
        return message(text("Done."))
    line = (
        content
        if isinstance(content, str)
        else " ".join(b.get("text", "") for b in content if isinstance(b, dict))
    )
    sender = _SENDER.match(line)
    mentions = [sender.group(1)] if sender else []
    reply = f"You said {len(line)} characters."
    return message(
        tool_use(
            f"toolu_{len(body['messages'])}",
            "band_send_message",
            {
                "content": reply,
                "mentions": mentions,
            },
        )
    )


class ConversationStub(AnthropicStub):
    """The stub with a standing answer once its script is used up."""

    def _answer(self, request: Request) -> Reply:
        if not self.script:
            self.push(_answer)
        return super()._answer(request)


class InProcessMessagesTransport(httpx2.AsyncBaseTransport):
    """Hands each request to the stub in this task, after ``MODEL_LATENCY``."""

    def __init__(self, stub: AnthropicStub) -> None:
        self.stub = stub

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(await request.aread() or b"null")
        received = Request(
            request.method, request.url.raw_path.decode(), dict(request.headers), body
        )
        self.stub.requests.append(received)
        await trio.sleep(MODEL_LATENCY)
        reply = self.stub._answer(received)
        return httpx2.Response(
            reply.status, json=reply.body, headers=list(reply.headers), request=request
        )


_PLATFORM = get_platform()


def make_adapter() -> AnthropicAdapter:
    client = anthropic.AsyncAnthropic(
        api_key="test-key",
        base_url="http://anthropic.in-process",
        max_retries=0,
        timeout=60.0,
        http_client=httpx2.AsyncClient(transport=InProcessMessagesTransport(ConversationStub())),
    )
    # The client resolves its platform headers once, in a worker thread that
    # cannot be cancelled; under the kit's virtual clock the time a thread
    # takes is invisible, so a loaded machine could let the clock run ahead
    # while it works. Resolved here instead, no turn waits on a thread.
    client._platform = _PLATFORM
    return AnthropicAdapter(client=client)


class TestAnthropicAdapterConformance(AdapterConformance):
    history_validator = validate_anthropic_messages

    def make_adapter(self) -> AnthropicAdapter:
        return make_adapter()

    def make_options(self) -> RunOptions:
        # The real anthropic client builds and validates each request
        # synchronously (pydantic models, headers); on a loaded 2-core machine
        # one such step was measured at 0.252 s. One second still catches an
        # adapter that sleeps or does blocking I/O on the loop.
        return RunOptions(autojump_threshold=0.0, block_threshold=1.0)


class TestAnthropicHistoryConverterConformance(HistoryConverterConformance):
    history_validator = validate_anthropic_messages

    def make_converter(self) -> AnthropicHistoryConverter:
        return AnthropicHistoryConverter()
