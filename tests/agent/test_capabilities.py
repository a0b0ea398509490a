"""The deployment's ``/me`` feature flags prune the FILES tools (official runtime, "Testable
behaviours" 8; "start() — exact order", step 6; protocol, "Agent endpoints — details", #1), end
to end on the local platform.

Reference: docs/reference/protocol.rst, docs/reference/official-runtime.rst.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import trio

from band_trio.adapter import AgentToolsProtocol, PlatformMessage
from band_trio.agent import _unserved_capabilities
from band_trio.local import HumanClient, LocalPlatform
from band_trio.tools import ToolErrorKind, ToolResult
from band_trio.tools.definitions import TOOL_DEFINITIONS, Capability
from band_trio.wire.rest import RestClient

from .harness import RecordingAdapter, Scene, serving, token

FILES_TOOLS = frozenset(d.name for d in TOOL_DEFINITIONS if d.capability is Capability.FILES)
PRUNED_LOG = "the platform does not serve file transfer; file tools are not offered"


class Recording(httpx.AsyncHTTPTransport):
    """Records every request's method and path."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        return await super().handle_async_request(request)

    def file_uploads(self) -> list[str]:
        return [p for m, p in self.requests if m == "PUT" and p.endswith("/files")]


class ToolsProbe:
    """A turn behaviour: records the tools offered for every capability, tries
    to share a file with the sender, then replies (a turn must answer)."""

    def __init__(self) -> None:
        self.offered: set[str] | None = None
        self.upload: ToolResult | None = None

    async def __call__(
        self, adapter: RecordingAdapter, msg: PlatformMessage, tools: AgentToolsProtocol
    ) -> None:
        schemas = tools.get_tool_schemas("anthropic", capabilities=[c.value for c in Capability])
        self.offered = {s["name"] for s in schemas}
        self.upload = await tools.execute_tool_call(
            "band_send_room_file",
            {"content": "hello", "filename": "note.txt", "mentions": [msg.sender_id]},
        )
        await tools.send_message("done", [msg.sender_id])


@asynccontextmanager
async def agent_scene(
    platform: LocalPlatform, feature_flags: dict[str, bool] | None
) -> AsyncIterator[Scene]:
    """A scene whose agent is registered with ``feature_flags`` (None = defaults)."""
    creds = platform.register_agent(
        "Flagged", "an agent on a partial deployment", feature_flags=feature_flags
    )
    async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
        yield Scene(platform, human, creds.id, creds.api_key, creds.handle)


async def run_one_turn(
    platform: LocalPlatform, flags: dict[str, bool] | None
) -> tuple[ToolsProbe, Recording]:
    probe = ToolsProbe()
    transport = Recording()
    async with agent_scene(platform, flags) as s:
        room_id = await s.new_room()
        adapter = RecordingAdapter(probe)
        agent = s.make_agent(adapter, rest_options={"transport": transport})
        async with serving(agent):
            mid = await s.post(room_id, token())
            await s.wait_for(lambda: s.processed(room_id, mid))
    return probe, transport


# ------------------------------------------------------------------ the rule


@pytest.mark.parametrize(
    ("flags", "unserved"),
    [
        ({"ff_file_transfer": True, "ff_room_tasks": True}, frozenset()),
        ({"ff_file_transfer": False, "ff_room_tasks": True}, {Capability.FILES}),
        ({"ff_room_tasks": True}, {Capability.FILES}),  # missing key = unsupported
        ({}, {Capability.FILES}),
        ({"ff_file_transfer": 1}, {Capability.FILES}),  # exactly True, nothing truthy
        ({"ff_file_transfer": "true"}, {Capability.FILES}),
        (None, frozenset()),  # an old platform without flags: prune nothing
    ],
)
def test_unserved_capabilities_from_flags(flags: Any, unserved: frozenset[Capability]) -> None:
    assert _unserved_capabilities(flags) == unserved


# ------------------------------------------------------------- end to end


async def test_files_tools_absent_when_the_platform_does_not_serve_files(
    band_platform: LocalPlatform, caplog: pytest.LogCaptureFixture
) -> None:
    """ff_file_transfer false -> the FILES tools are never offered, even
    when the adapter asks for every capability, and calling one is refused
    without a request to the platform (official runtime, "Testable behaviours" 8)."""
    caplog.set_level(logging.INFO, logger="band_trio.agent")
    with trio.fail_after(30):
        probe, transport = await run_one_turn(
            band_platform, {"ff_file_transfer": False, "ff_room_tasks": True}
        )
    assert probe.offered is not None
    assert not probe.offered & FILES_TOOLS
    assert {"band_send_message", "band_list_memories", "band_list_tasks"} <= probe.offered
    assert probe.upload is not None
    assert probe.upload.error_kind is ToolErrorKind.NOT_OFFERED
    assert transport.file_uploads() == []
    pruned = [r for r in caplog.records if r.getMessage() == PRUNED_LOG]
    assert len(pruned) == 1
    assert pruned[0].levelno == logging.INFO


async def test_files_tools_present_when_the_platform_serves_files(
    band_platform: LocalPlatform, caplog: pytest.LogCaptureFixture
) -> None:
    """The other side: ff_file_transfer true changes nothing (official runtime,
    "Testable behaviours" 8)."""
    caplog.set_level(logging.INFO, logger="band_trio.agent")
    with trio.fail_after(30):
        probe, transport = await run_one_turn(
            band_platform, {"ff_file_transfer": True, "ff_room_tasks": True}
        )
    assert probe.offered is not None
    assert probe.offered >= FILES_TOOLS
    assert probe.upload is not None
    assert not probe.upload.is_error, probe.upload
    assert len(transport.file_uploads()) == 1
    assert PRUNED_LOG not in caplog.text


# ---------------------------------------------------- the local platform switch


async def test_local_platform_reports_feature_flags_per_agent(
    band_platform: LocalPlatform,
) -> None:
    """``register_agent(feature_flags=...)`` is what that agent's /me reports;
    the default (and the demo agent) serve every feature."""
    off = band_platform.register_agent(
        "Off", "no files here", feature_flags={"ff_file_transfer": False}
    )
    default = band_platform.register_agent("Default", "every feature")
    expected = {
        off.id: {"ff_file_transfer": False},
        default.id: {"ff_file_transfer": True, "ff_room_tasks": True},
        band_platform.agents[0].id: {"ff_file_transfer": True, "ff_room_tasks": True},
    }
    with trio.fail_after(10):
        for creds in (off, default, band_platform.agents[0]):
            async with RestClient(base_url=band_platform.rest_url, api_key=creds.api_key) as rest:
                me = await rest.get_me()
            assert dict(me.feature_flags) == expected[creds.id], creds.name
