"""Issue 2, item 12: every REST response of the local platform parses with the
official generated models of ``band-client-rest``.

The probe (``peers/rest_models_probe.py``) runs in a peer venv, with the
current band-client-rest (0.0.51) and with the one band-sdk 6.0.1 pins (0.0.46),
and talks to a LocalPlatform served in this test's nursery (or started by
``band-trio platform --json``); it prints one JSON line per call. The platform description (with its API keys) travels in the
environment, never on a command line.

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.interop.conftest import PEERS, describe_platform, json_lines, peer_env
from tests.interop.peers.endpoints import AGENT_ENDPOINTS, HUMAN_ENDPOINTS
from tests.interop.venvs import band_client_rest_python, band_sdk_python

pytestmark = [pytest.mark.interop, pytest.mark.slow]  # peers run as real processes

PROBE = PEERS / "rest_models_probe.py"
PROBE_DEADLINE = 120


async def run_probe(python: Path, platform: Any) -> tuple[int, list[dict[str, Any]], str]:
    env = peer_env({"BAND_PLATFORM_JSON": json.dumps(describe_platform(platform))})
    with trio.fail_after(PROBE_DEADLINE):
        done = await trio.run_process(
            [str(python), str(PROBE)],
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return done.returncode, json_lines(done.stdout), done.stderr.decode(errors="replace")


def report(lines: list[dict[str, Any]], stderr: str) -> str:
    bad = [line for line in lines if not line["ok"]]
    text = "\n".join(f"  {b['endpoint']} [{b['case']}] -> {b['status']}: {b['error']}" for b in bad)
    return f"{len(bad)} of {len(lines)} calls failed:\n{text}\nprobe stderr:\n{stderr[-4000:]}"


#: Which band-client-rest each peer venv holds: the current release, and the
#: one band-sdk 6.0.1 pins (the models the official agent really parses with).
CLIENT_VERSIONS = {"band-client-rest": "0.0.51", "band-sdk": "0.0.46"}


@pytest.fixture(params=sorted(CLIENT_VERSIONS))
async def probe_venv(request: pytest.FixtureRequest) -> tuple[str, Path]:
    make = band_client_rest_python if request.param == "band-client-rest" else band_sdk_python
    return request.param, await trio.to_thread.run_sync(make)


async def test_every_endpoint_parses_with_the_official_models(
    band_platform: Any, probe_venv: tuple[str, Path]
) -> None:
    venv_name, python = probe_venv
    returncode, lines, stderr = await run_probe(python, band_platform)
    assert f"band-client-rest {CLIENT_VERSIONS[venv_name]}:" in stderr, stderr[-4000:]

    assert lines, f"the probe printed nothing (exit {returncode}):\n{stderr[-4000:]}"
    assert all(line["ok"] for line in lines), report(lines, stderr)
    assert returncode == 0, stderr[-4000:]

    assert len(AGENT_ENDPOINTS) == 38
    assert {line["endpoint"] for line in lines} == set(AGENT_ENDPOINTS) | set(HUMAN_ENDPOINTS)
    passed = {line["endpoint"] for line in lines if line["ok"] and line["implemented"]}
    assert sorted(set(AGENT_ENDPOINTS) - passed) == []
    # The local platform serves every human endpoint of (protocol, "Human endpoints
    # (/api/v1/me) — brief"), not only the required ones (HUMAN_REQUIRED); keep it
    # that way.
    assert sorted(set(HUMAN_ENDPOINTS) - passed) == []
    unknown = sorted(
        {f"{line['endpoint']}: {key}" for line in lines for key in line["unknown_keys"]}
    )
    if unknown:  # informational: extras the official models keep but do not declare
        print("keys the official models do not declare:", *unknown, sep="\n  ")


async def test_the_probe_reports_a_response_the_official_models_reject(
    band_platform: Any, rest_models_python: Path
) -> None:
    # The probe must not pass vacuously: make the platform answer one endpoint
    # with a status and body it never sends, and the probe has to say so.
    band_platform.faults.add("GET", r"^/api/v1/agent/memories$", 500, 1)
    returncode, lines, stderr = await run_probe(rest_models_python, band_platform)

    assert returncode == 1, stderr[-4000:]
    faulted = [line for line in lines if line["endpoint"] == "GET /api/v1/agent/memories"]
    assert faulted[0]["case"] == "list"
    assert (faulted[0]["ok"], faulted[0]["status"]) == (False, 500), report(lines, stderr)
    assert all(line["ok"] for line in faulted[1:]), report(lines, stderr)


async def test_the_probe_refuses_a_bad_platform_description(rest_models_python: Path) -> None:
    env = peer_env({"BAND_PLATFORM_JSON": json.dumps({"rest_url": "http://127.0.0.1:9"})})
    with trio.fail_after(PROBE_DEADLINE):
        done = await trio.run_process(
            [str(rest_models_python), str(PROBE)],
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"bad platform description" in done.stderr


async def read_line(stream: trio.abc.ReceiveStream) -> bytes:
    """The first line a process prints (without its newline)."""
    buffer = b""
    while b"\n" not in buffer:
        chunk = await stream.receive_some()
        if not chunk:
            raise AssertionError(f"the process closed its stdout after {buffer!r}")
        buffer += chunk
    return buffer.split(b"\n", 1)[0]


async def test_the_command_line_platform_serves_the_official_client(
    rest_models_python: Path,
) -> None:
    # `band-trio platform --json` prints the description the probe reads;
    # the probe then runs against that separate process.
    cli = Path(sys.executable).with_name("band-trio")
    process = await trio.lowlevel.open_process(
        [str(cli), "platform", "--json", "--port", "0"],
        stdout=subprocess.PIPE,
        env=peer_env({}),
    )
    try:
        assert process.stdout is not None
        with trio.fail_after(PROBE_DEADLINE):
            description = json.loads(await read_line(process.stdout))
            assert set(description) >= {"rest_url", "ws_url", "user", "agents"}
            env = peer_env({"BAND_PLATFORM_JSON": json.dumps(description)})
            done = await trio.run_process(
                [str(rest_models_python), str(PROBE)],
                env=env,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        lines = json_lines(done.stdout)
        stderr = done.stderr.decode(errors="replace")
        assert lines, stderr[-4000:]
        assert all(line["ok"] for line in lines), report(lines, stderr)
        assert done.returncode == 0
        # Ctrl+C stops it cleanly.
        process.send_signal(signal.SIGINT)
        with trio.fail_after(PROBE_DEADLINE):
            assert await process.wait() == 0
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
                await process.wait()
            if process.stdout is not None:
                await process.stdout.aclose()
