"""API keys and tokens stay out of logs, exception texts and reprs.

The suite-wide check lives in ``tests/conftest.py``; these tests show that it
finds what it should, that a leaking test fails while a clean one passes, and
they drive the places keys travel through with every logger at DEBUG.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
import trio

from band_trio import Agent, AgentSettings
from band_trio.errors import AuthenticationError, BandError
from band_trio.local import HumanClient, LocalPlatform
from band_trio.runtime import PlatformRuntime
from band_trio.wire.link import BandLink
from band_trio.wire.rest import RestClient

from . import conftest
from .agent.harness import (
    RecordingAdapter,
    fast_config,
    scene,
    serving,
    token,
)


def _take_found() -> list[str]:
    found, conftest._found[:] = list(conftest._found), []
    return found


def _secrets(platform: LocalPlatform) -> list[str]:
    return [
        platform.user.api_key,
        platform.admin_key,
        *(agent.api_key for agent in platform.agents),
    ]


def test_every_minted_key_has_the_shape_the_check_looks_for() -> None:
    platform = LocalPlatform()
    other = platform.create_user("Other", "other")
    second = platform.register_agent("Second", "a second agent")
    keys = {*_secrets(platform), other.api_key}
    assert second.api_key in keys
    assert len(keys) == 5
    for key in keys:
        assert conftest.SECRET.fullmatch(key), key


def _record(msg: str, *args: object, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("band_trio.probe", logging.WARNING, __file__, 1, msg, args, exc_info)


def test_a_key_in_a_log_record_or_an_error_text_is_found() -> None:
    # Records go straight to the check's handler: through the logging tree they
    # would also land in this test's captured log, and fail it.
    key = LocalPlatform().agents[0].api_key
    conftest._scanner.handle(_record("sending %r", {"key": key}))
    BandError(f"refused {key}")
    try:
        raise ValueError(key)
    except ValueError as exc:
        conftest._scanner.handle(_record("failed", exc=exc))
    found = _take_found()
    assert len(found) == 3, found  # the record, the error, the logged traceback
    assert all(key not in place and "band_a_***" in place for place in found)


def test_text_without_a_key_is_not_found() -> None:
    conftest._scanner.handle(_record("band_a_ short band_u_%s", "x" * 10))
    BandError("no secret here")
    assert _take_found() == []


def test_a_leaking_test_fails_and_a_clean_or_exempt_one_passes(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(Path(conftest.__file__).read_text())
    (tmp_path / "test_probe.py").write_text(
        "import logging\n"
        "import pytest\n"
        "KEY = 'band_u_' + 'A' * 32\n"
        "def test_leaks():\n"
        "    logging.getLogger('probe').warning('key=%s', KEY)\n"
        "def test_prints():\n"
        "    print(KEY)\n"
        "def test_clean():\n"
        "    logging.getLogger('probe').warning('nothing secret')\n"
        "@pytest.mark.shows_credentials\n"
        "def test_exempt():\n"
        "    print(KEY)\n"
        "def test_fails_showing():\n"
        "    assert KEY == 'the screen said', 'screen: ' + KEY\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-rf",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = result.stdout
    assert "3 failed, 2 passed" in out, out
    assert "FAILED test_probe.py::test_leaks" in out
    assert "FAILED test_probe.py::test_prints" in out
    assert "FAILED test_probe.py::test_fails_showing" in out
    # The failure names the place with the secret masked (pytest then shows the
    # captured output itself, as it does for any failing test).
    assert "log record of 'probe': key=band_u_***" in out
    assert "Captured stdout call: band_u_***" in out
    # A test that failed on its own keeps its failure, masked, ahead of the leak.
    section = out.split(" test_fails_showing ")[1].split("short test summary")[0]
    assert "AssertionError: screen: band_u_***" in section
    assert "A" * 32 not in section


async def test_reprs_and_texts_of_what_holds_a_key_hide_it(band_platform: LocalPlatform) -> None:
    creds = band_platform.agents[0]
    settings = AgentSettings(
        agent_id=creds.id,
        api_key=creds.api_key,
        rest_url=band_platform.rest_url,
        ws_url=band_platform.ws_url,
    )
    runtime = PlatformRuntime(settings, fast_config())
    rest = RestClient(base_url=band_platform.rest_url, api_key=creds.api_key)
    link = BandLink(agent_id=creds.id, api_key=creds.api_key, ws_url=band_platform.ws_url)
    agent = Agent(runtime, RecordingAdapter(), handle_signals=False)
    async with (
        HumanClient(base_url=band_platform.rest_url, api_key=band_platform.user.api_key) as human,
        rest,
    ):
        holders = [
            settings,
            runtime,
            rest,
            link,
            agent,
            band_platform,
            creds,
            band_platform.user,
            human,
        ]
        texts = [text for h in holders for text in (repr(h), str(h))]
    for secret in _secrets(band_platform):
        assert not any(secret in text for text in texts), [t for t in texts if secret in t]


async def test_an_agent_run_at_debug_level_logs_no_key(
    band_platform: LocalPlatform, caplog: pytest.LogCaptureFixture
) -> None:
    """Every logger at DEBUG: connect, answer, lose a reply's answer, be
    refused with a wrong key; no record, traceback or error holds a key."""
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []
    with trio.fail_after(30):
        async with scene(band_platform) as s:
            room = await s.new_room()
            adapter = RecordingAdapter()
            async with serving(s.make_agent(adapter)):
                band_platform.faults.add(
                    "POST", r"/agent/chats/[^/]+/messages$", 503, 1, perform=True
                )
                word = token("secret")
                mid = await s.post(room, word)
                await s.wait_for(lambda: s.processed(room, mid))
            wrong = AgentSettings(
                agent_id=s.agent_id,
                api_key="not-the-key",
                rest_url=band_platform.rest_url,
                ws_url=band_platform.ws_url,
            )
            refused = Agent(PlatformRuntime(wrong, fast_config()), adapter, handle_signals=False)
            with pytest.raises(AuthenticationError) as info:
                await refused.serve()
            errors.append(info.value)
    texts = [r.getMessage() for r in caplog.records]
    texts += [
        "".join(traceback.format_exception(*r.exc_info)) for r in caplog.records if r.exc_info
    ]
    texts += ["".join(traceback.format_exception(e)) for e in errors]
    assert len(caplog.records) > 20  # DEBUG really was on
    for secret in _secrets(band_platform):
        assert not any(secret in text for text in texts), [t for t in texts if secret in t][:3]
