"""The public names of band_trio_claude, pinned; configuration errors; the
history converter and the prompt of a turn."""

from __future__ import annotations

import ast
from pathlib import Path

import band_trio_claude
import pytest
from band_trio_claude import (
    HISTORY_HEADER,
    SESSION_METADATA_KEY,
    ClaudeAgentAdapter,
    ClaudeAgentConfig,
    ClaudeHistory,
    ClaudeHistoryConverter,
    compose_prompt,
)

from band_trio import BandConfigError, Emit, HistoryItem, PlatformMessage

PUBLIC = [
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_INTERRUPT_TIMEOUT",
    "DEFAULT_MAX_BUFFER_SIZE",
    "DEFAULT_MAX_LIVE_CLIENTS",
    "DEFAULT_MODEL",
    "DEFAULT_TURN_TIMEOUT",
    "HISTORY_HEADER",
    "MCP_PREFIX",
    "MCP_SERVER",
    "PERMISSION_MODES",
    "PROVIDER",
    "SESSION_EVENT_TEXT",
    "SESSION_METADATA_KEY",
    "ClaudeAdapterStatistics",
    "ClaudeAgentAdapter",
    "ClaudeAgentConfig",
    "ClaudeHistory",
    "ClaudeHistoryConverter",
    "ClaudeTurnError",
    "__version__",
    "compose_prompt",
]


def test_public_names_are_pinned() -> None:
    assert sorted(band_trio_claude.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        obj = getattr(band_trio_claude, name)
        if callable(obj):
            assert obj.__doc__, f"{name} needs a docstring"


def test_the_adapter_uses_no_asyncio_and_only_public_band_trio_packages() -> None:
    package = Path(band_trio_claude.__file__).parent
    public = {"band_trio", "band_trio.adapter", "band_trio.tools"}
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] != "asyncio", f"{path.name} imports asyncio"
                if name.startswith("band_trio") and not name.startswith("band_trio_"):
                    assert name in public, f"{path.name} imports {name}"


def test_defaults_keep_claude_tools_off_and_bound_every_wait() -> None:
    config = ClaudeAgentConfig()
    assert config.claude_tools == ()
    assert config.turn_timeout is not None
    assert config.interrupt_timeout > 0
    assert config.close_timeout > 0
    assert config.idle_timeout is not None
    assert config.max_live_clients >= 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"turn_timeout": 0},
        {"interrupt_timeout": -1},
        {"max_live_clients": 0},
        {"permission_mode": "yolo"},
        {"claude_tools": [""]},
        {"env": {"A": 1}},
        {"cwd": "work", "workspace_for_room": lambda room: f"work/{room}"},
        {"max_thinking_tokens": 0},
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(BandConfigError):
        ClaudeAgentConfig(**kwargs)  # type: ignore[arg-type]


def test_options_pass_permissions_and_tool_lists_through(tmp_path: Path) -> None:
    config = ClaudeAgentConfig(
        claude_tools=["Read", "Bash"],
        allowed_tools=["Read"],
        disallowed_tools=["Bash(rm:*)"],
        permission_mode="acceptEdits",
        workspace_for_room=lambda room: tmp_path / room,
    )
    adapter = ClaudeAgentAdapter(config, emit=Emit.TOOL_CALLS)
    options = adapter._options("room-1", ["band_send_message"])
    assert options.tools == ["Read", "Bash"]
    assert options.allowed_tools == ["mcp__band__band_send_message", "Read"]
    assert options.disallowed_tools == ["Bash(rm:*)"]
    assert options.permission_mode == "acceptEdits"
    assert Path(str(options.cwd)) == tmp_path / "room-1"
    assert (tmp_path / "room-1").is_dir()
    assert options.setting_sources == []


def _item(role: str, content: str, kind: str = "text", **metadata: str) -> HistoryItem:
    return HistoryItem(
        role=role,  # type: ignore[arg-type]
        content=content,
        sender_name="Claude" if role == "assistant" else "Ann",
        sender_type="Agent" if role == "assistant" else "User",
        message_type=kind,
        metadata=metadata,
    )


def test_the_converter_finds_the_newest_session_and_renders_the_rest() -> None:
    converter = ClaudeHistoryConverter()
    history = converter.convert(
        [
            _item("user", "hi"),
            _item("assistant", "Claude SDK session", "task", **{SESSION_METADATA_KEY: "s1"}),
            _item("assistant", "hello Ann"),
            _item("assistant", '{"name": "band_no_reply"}', "tool_call"),
            _item("assistant", "pondering", "thought"),
            _item("assistant", "Claude SDK session", "task", **{SESSION_METADATA_KEY: "s2"}),
        ]
    )
    assert history == ClaudeHistory(
        '[Ann]: hi\n[Claude (you)]: hello Ann\n[Claude] tool_call: {"name": "band_no_reply"}',
        "s2",
    )


def test_the_prompt_puts_history_system_lines_then_the_message() -> None:
    msg = PlatformMessage("m1", "r1", "hello", "u1", "User", "Ann")
    prompt = compose_prompt(msg, history="[Ann]: before", participants_msg="P", contacts_msg=None)
    assert prompt == f"{HISTORY_HEADER}\n[Ann]: before\n\n[System]: P\n\n[Ann]: hello"
    assert compose_prompt(msg, history="", participants_msg=None, contacts_msg=None) == (
        "[Ann]: hello"
    )
