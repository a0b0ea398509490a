"""Logging: the agent, room and message ids are fields of every record, in the
text and JSON formats, from configure_logging, the CLI and the environment; a
whole end-to-end run logged as JSON never shows an API key."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import trio

import band_trio
from band_trio import AgentConfig, BandConfigError, SimpleAdapter, configure_logging, open_agent
from band_trio._logging import ContextFilter, get_logger, log_context
from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage
from band_trio.local import HumanClient, LocalPlatform


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    httpx_levels = {n: logging.getLogger(n).level for n in ("httpx", "httpcore")}
    try:
        yield
    finally:
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
        for name, httpx_level in httpx_levels.items():
            logging.getLogger(name).setLevel(httpx_level)


def _records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.usefixtures("restore_root_logger")
def test_json_records_carry_the_ids_set_for_the_block() -> None:
    stream = io.StringIO()
    configure_logging("DEBUG", "json", stream=stream, environ={})
    logger = get_logger("band_trio.example")
    with log_context(agent_id="a1", room_id="r1"):
        logger.info("outer")
        with log_context(message_id="m1"):
            logger.warning("inner %d", 2, extra={"attempt": 2})
    logger.info("outside")
    first, second, third = _records(stream.getvalue())
    assert first["agent_id"] == "a1"
    assert first["room_id"] == "r1"
    assert "message_id" not in first
    assert second["message"] == "inner 2"
    assert second["level"] == "WARNING"
    assert second["logger"] == "band_trio.example"
    assert (second["agent_id"], second["room_id"], second["message_id"]) == ("a1", "r1", "m1")
    assert second["attempt"] == 2
    assert third["message"] == "outside"
    assert not {"agent_id", "room_id", "message_id"} & third.keys()


@pytest.mark.usefixtures("restore_root_logger")
def test_text_format_shows_the_ids_that_are_set() -> None:
    stream = io.StringIO()
    configure_logging("INFO", "text", stream=stream, environ={})
    logger = get_logger("band_trio.example")
    with log_context(agent_id="a1", room_id="r1", message_id="m1"):
        logger.info("hello")
    logger.debug("not shown at INFO")
    (line,) = stream.getvalue().splitlines()
    assert line.endswith("INFO band_trio.example [agent=a1 room=r1 message=m1] hello")


def test_records_of_band_trio_loggers_carry_the_fields_under_any_handler() -> None:
    """Without configure_logging: an application's own handler sees the fields
    as attributes of band-trio's records (usable as ``%(room_id)s``)."""
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    logger = get_logger("band_trio.example.attributes")
    handler = Keep()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with log_context(room_id="r9"):
            logger.info("x")
        logger.info("y")
    finally:
        logger.removeHandler(handler)
    assert [(r.agent_id, r.room_id, r.message_id) for r in seen] == [  # type: ignore[attr-defined]
        (None, "r9", None),
        (None, None, None),
    ]


def test_the_context_filter_keeps_ids_given_with_extra() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    record.room_id = "given"
    with log_context(room_id="context"):
        assert ContextFilter().filter(record)
    assert record.room_id == "given"


@pytest.mark.usefixtures("restore_root_logger")
def test_settings_come_from_the_environment_when_not_given() -> None:
    stream = io.StringIO()
    handler = configure_logging(
        stream=stream, environ={"BAND_LOG_LEVEL": "warning", "BAND_LOG_FORMAT": "JSON"}
    )
    assert logging.getLogger().level == logging.WARNING
    get_logger("band_trio.example").warning("w")
    assert _records(stream.getvalue())[0]["message"] == "w"
    # Explicit arguments win over the environment, and a second call replaces
    # the first handler instead of adding one.
    configure_logging("DEBUG", "text", stream=stream, environ={"BAND_LOG_LEVEL": "ERROR"})
    assert logging.getLogger().level == logging.DEBUG
    assert handler not in logging.getLogger().handlers


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"level": "LOUD"}, "level"),
        ({"format": "xml"}, "format"),
        ({"environ": {"BAND_LOG_LEVEL": "LOUD"}}, "BAND_LOG_LEVEL"),
        ({"environ": {"BAND_LOG_FORMAT": "yaml"}}, "BAND_LOG_FORMAT"),
    ],
)
def test_bad_settings_name_the_setting(kwargs: dict[str, Any], named: str) -> None:
    kwargs.setdefault("environ", {})
    with pytest.raises(BandConfigError, match=named):
        configure_logging(**kwargs)


def test_cli_prints_its_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "band_trio.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"band-trio {band_trio.__version__}"


def test_cli_refuses_a_bad_log_level() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "band_trio.cli", "--log-level", "LOUD", "demo"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "LOUD" in out.stderr


class Echo(SimpleAdapter[HistoryProvider]):
    def __init__(self) -> None:
        super().__init__()
        self.replied = trio.Event()

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        get_logger("band_trio.example.adapter").info("answering")
        await tools.send_message(f"echo: {msg.content}", [msg.sender_id])
        self.replied.set()


async def _one_message_logged(
    band_platform: LocalPlatform, level: str
) -> tuple[list[dict[str, Any]], str, str, str]:
    """An agent answers one message, logged as JSON at ``level``; returns the
    records, the JSON text, the room id and the message id."""
    stream = io.StringIO()
    configure_logging(level, "json", stream=stream, environ={})
    creds = band_platform.agents[0]
    adapter = Echo()
    with trio.fail_after(30):
        async with HumanClient(
            base_url=band_platform.rest_url, api_key=band_platform.user.api_key
        ) as human:
            room = await human.create_room(title="logged")
            room_id = str(room["id"])
            await human.add_participant(room_id, creds.id)
            async with open_agent(
                adapter=adapter,
                agent_id=creds.id,
                api_key=creds.api_key,
                rest_url=band_platform.rest_url,
                ws_url=band_platform.ws_url,
                config=AgentConfig(state_dir=None, shutdown_timeout=1.0),
            ):
                sent = await human.post_message(
                    room_id, f"@{creds.handle} hello", mentions=[creds.handle]
                )
                await adapter.replied.wait()
                message_id = str(sent["id"])
                with trio.fail_after(10):
                    while not any(  # noqa: ASYNC110 - the ack is a platform state
                        "processed" in str(d.status)
                        for d in band_platform.state.rooms[room_id]
                        .by_id[message_id]
                        .deliveries.values()
                    ):
                        await trio.sleep(0.01)
    text = stream.getvalue()
    return _records(text), text, room_id, message_id


@pytest.mark.usefixtures("restore_root_logger")
async def test_a_whole_run_logged_as_json_has_the_ids_and_no_key(
    band_platform: LocalPlatform,
) -> None:
    records, text, room_id, message_id = await _one_message_logged(band_platform, "DEBUG")
    creds = band_platform.agents[0]
    assert creds.api_key not in text
    assert band_platform.user.api_key not in text
    agent_records = [
        r
        for r in records
        if r["logger"].startswith("band_trio.") and not r["logger"].startswith("band_trio.local")
    ]
    assert agent_records
    # Every record of the agent's work carries the agent's id ...
    assert all(r.get("agent_id") == creds.id for r in agent_records), [
        r for r in agent_records if r.get("agent_id") != creds.id
    ]
    # ... the room's work its room, and the message's handling (the turn, the
    # adapter's own records, the REST calls made for it) the message.
    answering = [r for r in records if r["message"] == "answering"]
    assert len(answering) == 1
    assert answering[0]["room_id"] == room_id
    assert answering[0]["message_id"] == message_id
    for_message = [r for r in agent_records if r.get("message_id") == message_id]
    assert any(r["logger"] == "band_trio.runtime.room" for r in for_message)
    assert all(r["room_id"] == room_id for r in for_message)

    # At DEBUG, httpx's per-request lines are there.
    assert any(r["logger"] == "httpx" for r in records)


@pytest.mark.usefixtures("restore_root_logger")
async def test_at_info_an_agent_says_where_it_serves_and_one_line_per_message(
    band_platform: LocalPlatform,
) -> None:
    records, _, room_id, message_id = await _one_message_logged(band_platform, "INFO")
    agent_records = [
        r
        for r in records
        if r["logger"].startswith("band_trio.")
        and not r["logger"].startswith(("band_trio.local", "band_trio.example"))
    ]
    (started,) = [r for r in agent_records if "connected to" in r["message"]]
    assert band_platform.ws_url in started["message"]
    assert f"serving 1 room(s): {room_id}" in started["message"]
    (handled,) = [r for r in agent_records if r.get("message_id") == message_id]
    assert handled["level"] == "INFO"
    assert handled["room_id"] == room_id
    assert re.search(rf"message {message_id} answered in \d+\.\d\d s", handled["message"])
    assert not [r for r in records if r["logger"] in ("httpx", "httpcore")]
