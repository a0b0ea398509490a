"""AgentConfig validation and AgentSettings resolution from the environment.

Reference: docs/reference/official-runtime.rst.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio.errors import BandConfigError
from band_trio.runtime.config import (
    DEFAULT_REST_URL,
    DEFAULT_WS_URL,
    IN_MEMORY,
    USER_STATE_DIR,
    AgentConfig,
    AgentSettings,
    default_state_root,
    derive_ws_url,
)

KEY = "sk-very-secret-key-123"


# --------------------------------------------------------------------------- AgentConfig


def test_defaults() -> None:
    cfg = AgentConfig()
    assert cfg.max_attempts == 3
    assert cfg.turn_timeout == 900.0
    assert cfg.max_working_state == 900.0
    assert cfg.shutdown_timeout == 30.0
    assert cfg.inbox_size == 64
    assert cfg.working_keep_alive == 3.0
    assert cfg.max_history_messages == 100
    assert cfg.idle_resync_interval == 60.0
    assert cfg.idle_resync_max_interval == 120.0
    assert cfg.effective_stopped_resync_interval == 60.0
    assert cfg.control_dedupe_size == 256
    assert cfg.state_dir is USER_STATE_DIR
    assert cfg.report_turn_failures is True
    assert cfg.enable_context_hydration is True


def test_frozen() -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        AgentConfig().max_attempts = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_attempts", 0),
        ("max_attempts", True),
        ("max_attempts", 1.5),
        ("turn_timeout", 0),
        ("turn_timeout", float("inf")),
        ("shutdown_timeout", -1),
        ("shutdown_timeout", float("nan")),
        ("inbox_size", 0),
        ("max_parallel_joins", 0),
        ("idle_resync_interval", 0),
        ("stopped_resync_interval", -5),
        ("history_page_size", 101),
        ("history_page_size", 0),
        ("max_history_messages", -1),
        ("enable_working_state", "yes"),
        ("join_retry_delays", "1,2"),
        ("join_retry_delays", (1, -2)),
        ("state_dir", 42),
        ("conflict_policy", "ignore"),
        ("working_keep_alive", 5),
    ],
)
def test_invalid_values_name_the_setting(field: str, value: Any) -> None:
    with pytest.raises(BandConfigError, match=field):
        AgentConfig(**{field: value})


def test_working_state_rules_only_when_enabled() -> None:
    # Pins (official runtime, "Testable behaviours" 96).
    with pytest.raises(BandConfigError, match="working_request_timeout"):
        AgentConfig(working_keep_alive=2.0, working_request_timeout=2.0)
    AgentConfig(enable_working_state=False, working_keep_alive=10.0, working_request_timeout=20.0)


def test_max_interval_raised_to_base() -> None:
    cfg = AgentConfig(idle_resync_interval=90.0, idle_resync_max_interval=30.0)
    assert cfg.idle_resync_max_interval == 90.0


def test_delays_are_normalised() -> None:
    assert AgentConfig(join_retry_delays=[1, 2]).join_retry_delays == (1.0, 2.0)
    assert AgentConfig(join_retry_delays=()).join_retry_delays == ()


def test_state_dir_resolution(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    cfg = AgentConfig()
    assert cfg.resolve_state_dir("agent/1:x", environ=env) == tmp_path / "band-trio" / "agent_1_x"
    assert cfg.ledger_path("a", environ=env) == tmp_path / "band-trio" / "a" / "ledger.sqlite3"
    assert not cfg.in_memory
    explicit = AgentConfig(state_dir=str(tmp_path / "s"))
    assert explicit.resolve_state_dir("a") == tmp_path / "s"
    for memory in (None, IN_MEMORY):
        m = AgentConfig(state_dir=memory)
        assert m.in_memory
        assert m.ledger_path("a") is None
    with pytest.raises(BandConfigError):
        cfg.resolve_state_dir("")


def test_default_state_root_without_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_state_root({}) == tmp_path / ".local" / "state" / "band-trio"
    # A relative XDG_STATE_HOME is invalid per the spec and ignored.
    assert default_state_root({"XDG_STATE_HOME": "rel"}) == tmp_path / ".local/state/band-trio"


# --------------------------------------------------------------------------- AgentSettings


def test_from_env_reads_all_variables() -> None:
    env = {
        "BAND_AGENT_ID": "a1",
        "BAND_API_KEY": KEY,
        "BAND_REST_URL": "http://127.0.0.1:8000/",
        "BAND_WS_URL": "ws://127.0.0.1:8000/api/v1/socket/websocket",
    }
    s = AgentSettings.from_env(env)
    assert (s.agent_id, s.api_key, s.rest_url, s.ws_url) == (
        "a1",
        KEY,
        "http://127.0.0.1:8000",
        "ws://127.0.0.1:8000/api/v1/socket/websocket",
    )


def test_explicit_arguments_win() -> None:
    env = {"BAND_AGENT_ID": "env", "BAND_API_KEY": "env-key", "BAND_REST_URL": "http://env:1"}
    s = AgentSettings.from_env(env, agent_id="arg", api_key=KEY, rest_url="https://arg.example")
    assert (s.agent_id, s.api_key, s.rest_url) == ("arg", KEY, "https://arg.example")
    assert s.ws_url == "wss://arg.example/api/v1/socket/websocket"


def test_blank_explicit_argument_falls_back_to_env() -> None:
    env = {"BAND_AGENT_ID": "env", "BAND_API_KEY": KEY}
    assert AgentSettings.from_env(env, agent_id="  ").agent_id == "env"


def test_production_defaults_when_no_urls() -> None:
    # No argument and no (or empty) variable -> production URLs (official runtime, "Testable
    # behaviours" 1).
    s = AgentSettings.from_env({"BAND_AGENT_ID": "a", "BAND_API_KEY": KEY, "BAND_WS_URL": ""})
    assert (s.rest_url, s.ws_url) == (DEFAULT_REST_URL, DEFAULT_WS_URL)


def test_ws_derived_from_rest_and_rest_from_ws() -> None:
    base = {"BAND_AGENT_ID": "a", "BAND_API_KEY": KEY}
    s = AgentSettings.from_env({**base, "BAND_REST_URL": "http://127.0.0.1:4000/some/path"})
    assert s.ws_url == "ws://127.0.0.1:4000/api/v1/socket/websocket"
    s = AgentSettings.from_env({**base, "BAND_WS_URL": "wss://h.example:9/api/v1/socket/websocket"})
    assert s.rest_url == "https://h.example:9"
    assert derive_ws_url("HTTPS://X.example") == "wss://X.example/api/v1/socket/websocket"


def test_env_names_are_case_insensitive() -> None:
    s = AgentSettings.from_env({"band_agent_id": "a", "Band_Api_Key": KEY})
    assert s.agent_id == "a"


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"BAND_API_KEY": KEY}, "BAND_AGENT_ID"),
        ({"BAND_AGENT_ID": "a"}, "BAND_API_KEY"),
        ({"BAND_AGENT_ID": "a", "BAND_API_KEY": ""}, "BAND_API_KEY"),
        ({"BAND_AGENT_ID": "a", "BAND_API_KEY": KEY, "BAND_REST_URL": "ftp://x"}, "BAND_REST_URL"),
        ({"BAND_AGENT_ID": "a", "BAND_API_KEY": KEY, "BAND_REST_URL": "http://"}, "BAND_REST_URL"),
        ({"BAND_AGENT_ID": "a", "BAND_API_KEY": KEY, "BAND_WS_URL": "http://x"}, "BAND_WS_URL"),
        (
            {"BAND_AGENT_ID": "a", "BAND_API_KEY": KEY, "BAND_REST_URL": "http://u:p@x"},
            "BAND_REST_URL",
        ),
    ],
)
def test_missing_or_invalid_variables_are_named(env: dict[str, str], needle: str) -> None:
    with pytest.raises(BandConfigError, match=needle) as info:
        AgentSettings.from_env(env)
    assert KEY not in str(info.value)


def test_invalid_explicit_url_names_the_argument() -> None:
    with pytest.raises(BandConfigError, match="ws_url"):
        AgentSettings.from_env({}, agent_id="a", api_key=KEY, ws_url="https://x")


def test_key_never_in_repr_or_redacted() -> None:
    s = AgentSettings(agent_id="a", api_key=KEY)
    assert KEY not in repr(s)
    assert KEY not in str(s)
    assert KEY not in str(s.redacted())
    assert s.redacted()["api_key"] == "***"


def test_direct_construction_validates() -> None:
    with pytest.raises(BandConfigError, match="agent_id"):
        AgentSettings(agent_id="", api_key=KEY)
    with pytest.raises(BandConfigError, match="api_key"):
        AgentSettings(agent_id="a", api_key=" ")
    with pytest.raises(BandConfigError, match="rest_url"):
        AgentSettings(agent_id="a", api_key=KEY, rest_url="ws://x")


@given(
    st.text(alphabet="0123456789abcdef", min_size=16, max_size=40),
    st.sampled_from(["nope", "ftp://x", "", "http://"]),
)
def test_key_text_never_leaks_into_errors(secret: str, rest: str) -> None:
    key = f"sk-{secret}"
    with pytest.raises(BandConfigError) as info:
        AgentSettings.from_env({"BAND_API_KEY": key, "BAND_REST_URL": rest, "BAND_WS_URL": rest})
    assert key not in str(info.value)


# --------------------------------------------------------------------------- AgentConfig.from_env


def test_config_from_prefixed_env() -> None:
    # With the BAND_ prefix (official runtime, "Testable behaviours" 112; a deliberate
    # difference, "Weak spots" 15).
    env = {
        "BAND_MAX_ATTEMPTS": "5",
        "band_turn_timeout": "120",
        "BAND_ENABLE_WORKING_STATE": "off",
        "BAND_JOIN_RETRY_DELAYS": "0.5, 1,2",
        "BAND_STATE_DIR": ":memory:",
        "BAND_STOPPED_RESYNC_INTERVAL": "none",
        "BAND_CONFLICT_POLICY": "REJECT",
        "BAND_INBOX_SIZE": "",
        "MAX_ATTEMPTS": "9",  # unprefixed: never read
    }
    cfg = AgentConfig.from_env(env)
    assert cfg.max_attempts == 5
    assert cfg.turn_timeout == 120.0
    assert cfg.enable_working_state is False
    assert cfg.join_retry_delays == (0.5, 1.0, 2.0)
    assert cfg.in_memory
    assert cfg.stopped_resync_interval is None
    assert cfg.conflict_policy == "reject"
    assert cfg.inbox_size == 64


def test_config_explicit_arguments_win_over_env() -> None:
    cfg = AgentConfig.from_env({"BAND_MAX_ATTEMPTS": "oops"}, max_attempts=2)
    assert cfg.max_attempts == 2


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"BAND_MAX_ATTEMPTS": "three"}, "BAND_MAX_ATTEMPTS"),
        ({"BAND_MAX_ATTEMPTS": "0"}, "BAND_MAX_ATTEMPTS"),
        ({"BAND_REPORT_TURN_FAILURES": "maybe"}, "BAND_REPORT_TURN_FAILURES"),
        ({"BAND_TURN_TIMEOUT": "soon"}, "BAND_TURN_TIMEOUT"),
        ({"BAND_ME_RETRY_DELAYS": "1,x"}, "BAND_ME_RETRY_DELAYS"),
        ({"BAND_WORKING_REQUEST_TIMEOUT": "3.5"}, "BAND_WORKING_REQUEST_TIMEOUT"),
    ],
)
def test_config_env_errors_name_the_variable(env: dict[str, str], var: str) -> None:
    with pytest.raises(BandConfigError, match=var):
        AgentConfig.from_env(env)
