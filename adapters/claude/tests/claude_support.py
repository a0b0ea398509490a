"""Helpers of the Claude adapter's tests: the scripted Messages API and the
offline environment of the real CLI (rooms with an agent in them come from
``band_trio.testing.rooms``)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anthropic_stub import AnthropicStub, Reply, Request, message, text, thinking, tool_use
from band_trio_claude import ClaudeAgentConfig

SEND: str = "mcp__band__band_send_message"
NO_REPLY: str = "mcp__band__band_no_reply"


def offline_env(stub_url: str, home: Path) -> dict[str, str]:
    """The environment that points the CLI at the stub and keeps it off the network."""
    return {
        "ANTHROPIC_BASE_URL": stub_url,
        "ANTHROPIC_API_KEY": "test-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
    }


def config_for(stub: AnthropicStub, home: Path, **kwargs: Any) -> ClaudeAgentConfig:
    """A config whose CLI answers from ``stub``, working in ``home``."""
    kwargs.setdefault("cwd", home)
    return ClaudeAgentConfig(env=offline_env(stub.url, home), model="claude-test", **kwargs)


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the newest user message of a request (system reminders left out)."""
    for item in reversed(body.get("messages") or []):
        if item.get("role") != "user":
            continue
        content = item["content"]
        if isinstance(content, str):
            return content
        texts = [
            b.get("text", "")
            for b in content
            if b.get("type") == "text" and not b.get("text", "").startswith("<system-reminder>")
        ]
        if texts:
            return "\n".join(texts)
    return ""


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of a request's newest message."""
    content = (body.get("messages") or [{}])[-1].get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if b.get("type") == "tool_result"]


def ends_tool_loop(body: dict[str, Any]) -> bool:
    return bool(tool_results(body))


class ClaudeStub(AnthropicStub):
    """The Messages API stub, answering only model requests from its script.

    The CLI also asks the API for other things (a title for the session, a
    token count): such requests, told apart by having no Band tools, get a
    short text without using the script.
    """

    def __init__(self) -> None:
        super().__init__(system_role=True)

    def _answer(self, request: Request) -> Reply:
        body = request.body
        if isinstance(body, dict) and body.get("stream") is not None and not _offers_band(body):
            return message(text("Untitled"))
        return super()._answer(request)

    @property
    def model_bodies(self) -> list[dict[str, Any]]:
        """The Messages requests that offered the Band tools (the agent's own calls)."""
        return [b for b in self.bodies if isinstance(b, dict) and _offers_band(b)]


def _offers_band(body: dict[str, Any]) -> bool:
    return any(str(t.get("name", "")).startswith("mcp__band__") for t in body.get("tools") or [])


_CALL_IDS = itertools.count(1)


def call(name: str, args: dict[str, Any], call_id: str | None = None) -> Reply:
    """A model answer calling one tool, after a thinking block (the CLI turns
    thinking on, and a tool loop then needs one).

    Without ``call_id`` the tool use gets an id of its own, as the API gives:
    the CLI drops a tool use whose id its conversation already holds, and a
    model answering the emptied turn the same way loops without end.
    """
    call_id = call_id or f"toolu_auto_{next(_CALL_IDS)}"
    return message(thinking(f"I will call {name}."), tool_use(call_id, name, args))


def reply(content: str, mentions: list[str], call_id: str | None = None) -> Reply:
    """A model answer that replies through ``band_send_message``."""
    return call(SEND, {"content": content, "mentions": mentions}, call_id)


DONE = message(text("Done."))


Answer = Callable[[dict[str, Any]], Reply]


# ------------------------------------------------------------------ the fake CLI

FAKE = Path(__file__).with_name("fake_claude.py")


def fake_config(state: Path, mode: str, **kwargs: object) -> ClaudeAgentConfig:
    return ClaudeAgentConfig(
        cli_path=FAKE,
        cwd=state,
        env={
            "FAKE_CLAUDE_MODE": mode,
            "FAKE_CLAUDE_STATE": str(state),
            "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1",
        },
        **kwargs,  # type: ignore[arg-type]
    )


def pids(state: Path) -> list[int]:
    path = state / "pids"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too: it only waits to be reaped.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")
