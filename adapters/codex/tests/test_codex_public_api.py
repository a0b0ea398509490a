"""The public names of band_trio_codex, pinned; no Python dependency beyond
band-trio; configuration errors; the command line; the history converter
and a turn's input; the JSON-RPC connection's deadlines."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import band_trio_codex
import pytest
import trio
from band_trio_codex import (
    HISTORY_HEADER,
    THREAD_METADATA_KEY,
    CodexConfig,
    CodexHistory,
    CodexHistoryConverter,
    CodexProcess,
    CodexRequestTimeout,
    CodexRpcError,
    turn_input,
)

from band_trio import BandConfigError, HistoryItem, PlatformMessage

PUBLIC = [
    "APPROVAL_POLICIES",
    "CLIENT_NAME",
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_INTERRUPT_TIMEOUT",
    "DEFAULT_MAX_LIVE_PROCESSES",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_TURN_TIMEOUT",
    "HISTORY_HEADER",
    "PROVIDER",
    "SANDBOX_MODES",
    "THREAD_EVENT_TEXT",
    "THREAD_METADATA_KEY",
    "ApprovalSettings",
    "CodexAdapter",
    "CodexAdapterStatistics",
    "CodexConfig",
    "CodexHistory",
    "CodexHistoryConverter",
    "CodexProcess",
    "CodexRequestTimeout",
    "CodexRpcError",
    "CodexTransportClosed",
    "CodexTurnError",
    "__version__",
    "turn_input",
]
PACKAGE = Path(band_trio_codex.__file__).parent


def test_public_names_are_pinned() -> None:
    assert sorted(band_trio_codex.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        obj = getattr(band_trio_codex, name)
        if callable(obj):
            assert obj.__doc__, f"{name} needs a docstring"


def test_the_distribution_depends_on_band_trio_only() -> None:
    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    assert project["name"] == "band-trio-codex"
    assert project["dependencies"] == ["band-trio"]


def test_the_adapter_uses_no_asyncio_and_only_public_band_trio_packages() -> None:
    public = {"band_trio", "band_trio.adapter"}
    for path in PACKAGE.glob("*.py"):
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


def test_defaults_need_no_human_and_bound_every_wait() -> None:
    config = CodexConfig()
    assert config.approval_policy == "never"
    assert config.approvals is None
    assert config.sandbox is None
    assert config.turn_timeout == 180
    assert config.request_timeout > 0
    assert config.interrupt_timeout > 0
    assert config.close_timeout > 0
    assert config.idle_timeout is not None
    assert config.max_live_processes >= 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"turn_timeout": 0},
        {"request_timeout": -1},
        {"interrupt_timeout": True},
        {"max_live_processes": 0},
        {"event_buffer": 0},
        {"approval_policy": "untrusted"},
        {"sandbox": "everything"},
        {"command": []},
        {"command": ["codex", 3]},
        {"env": {"A": 1}},
        {"config_overrides": {"model": 1}},
        {"model": ""},
        {"cwd": "work", "workspace_for_room": lambda room: f"work/{room}"},
        {"approvals": "owner"},
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(BandConfigError):
        CodexConfig(**kwargs)  # type: ignore[arg-type]


def test_the_command_line_carries_the_overrides(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    config = CodexConfig(codex_path=codex, config_overrides={"model_provider": '"stub"'})
    assert config.argv() == [str(codex), "app-server", "-c", 'model_provider="stub"']
    assert CodexConfig(command=("python", "fake.py")).argv() == ["python", "fake.py"]


def test_a_missing_codex_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(BandConfigError, match="npm install"):
        CodexConfig().argv()


def _item(role: str, content: str, kind: str = "text", **metadata: str) -> HistoryItem:
    return HistoryItem(
        role=role,  # type: ignore[arg-type]
        content=content,
        sender_name="Codex" if role == "assistant" else "Ann",
        sender_type="Agent" if role == "assistant" else "User",
        message_type=kind,
        metadata=metadata,
    )


def test_the_converter_finds_the_newest_thread_and_renders_the_rest() -> None:
    history = CodexHistoryConverter().convert(
        [
            _item("user", "hi"),
            _item("assistant", "Codex thread", "task", **{THREAD_METADATA_KEY: "t1"}),
            _item("assistant", "hello Ann"),
            _item("assistant", '{"name": "band_no_reply"}', "tool_call"),
            _item("assistant", "pondering", "thought"),
            _item("assistant", "Codex thread", "task", **{THREAD_METADATA_KEY: "t2"}),
        ]
    )
    assert history == CodexHistory(
        '[Ann]: hi\n[Codex (you)]: hello Ann\n[Codex] tool_call: {"name": "band_no_reply"}',
        "t2",
    )


def test_a_turns_input_is_history_system_lines_then_the_message() -> None:
    msg = PlatformMessage("m1", "r1", "hello", "u1", "User", "Ann")
    items = turn_input(msg, history="[Ann]: before", participants_msg="P", contacts_msg=None)
    assert items == [
        {"type": "text", "text": f"{HISTORY_HEADER}\n[Ann]: before"},
        {"type": "text", "text": "[System]: P"},
        {"type": "text", "text": "[Ann]: hello"},
    ]


SILENT = "import sys, time\nfor line in sys.stdin: time.sleep(3600)\n"
ERRORS = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    m = json.loads(line)\n"
    "    print(json.dumps({'id': m['id'], 'error': {'code': -32600, 'message': 'nope'}}), flush=True)\n"
)


async def _process(tmp_path: Path, program: str) -> CodexProcess:
    script = tmp_path / "server.py"
    script.write_text(program)
    process = CodexProcess(
        "room",
        [sys.executable, str(script)],
        {},
        None,
        request_timeout=0.5,
        max_line_bytes=1024,
        event_buffer=4,
    )
    await process.open()
    return process


async def test_a_request_nobody_answers_ends_at_its_deadline(tmp_path: Path) -> None:
    process = await _process(tmp_path, SILENT)
    try:
        with trio.fail_after(10), pytest.raises(CodexRequestTimeout, match=r"within 0\.5s"):
            await process.request("initialize", {})
        assert process.pending_requests == 0
    finally:
        await process.close(0.2)
    assert process.reader_done.is_set()
    assert process.process is not None
    assert process.process.returncode is not None


async def test_an_error_answer_is_a_typed_error(tmp_path: Path) -> None:
    process = await _process(tmp_path, ERRORS)
    try:
        with trio.fail_after(10), pytest.raises(CodexRpcError, match="-32600: nope"):
            await process.request("thread/start", {})
    finally:
        await process.close(0.2)
