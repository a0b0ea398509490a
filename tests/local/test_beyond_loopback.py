"""``--host 0.0.0.0``: ``band-trio dev`` and ``band-trio platform`` alike.

Both print one warning, keep the keys out of their text and print URLs a
client can connect to. Tests bind loopback only, so each command runs as a
real process whose platform binds 127.0.0.1 while it believes it was given
``0.0.0.0``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import trio

from band_trio.local.server import connect_host, exposure_warning
from tests.devloop.helpers import echo_source
from tests.local.cli_helpers import STARTUP_DEADLINE, stop_process

# The real command line, with the listening socket bound to loopback.
BIND_LOOPBACK = (
    "import sys; import band_trio.local.server as server; "
    "server.LocalPlatform._bind = lambda self, listener: listener.bind(('127.0.0.1', 0)); "
    "from band_trio.cli import main; sys.exit(main(sys.argv[1:]))"
)
KEY = re.compile(r"band_[a-z]+_[A-Za-z0-9_-]{16,}")
URL = re.compile(r"https?://[^\s/]+")


def test_a_wildcard_bind_is_reached_on_loopback() -> None:
    assert connect_host("0.0.0.0") == "127.0.0.1"
    assert connect_host("::") == "::1"
    assert connect_host("192.168.1.10") == "192.168.1.10"
    assert connect_host("127.0.0.1") == "127.0.0.1"


def test_the_warning_names_the_address_other_machines_use() -> None:
    warning = exposure_warning("192.168.1.10", "http://192.168.1.10:8123")
    assert "http://192.168.1.10:8123" in warning
    assert "not loopback" in warning
    assert "--json" in warning


async def exposed(args: list[str], cwd: Path, until: str) -> str:
    """What the command prints (stdout and stderr) up to the line holding
    ``until``, checked while it runs; the process is then stopped by its pid."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", BIND_LOOPBACK, *args, "--host", "0.0.0.0"],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    output = b""
    try:
        assert process.stdout is not None
        with trio.fail_after(STARTUP_DEADLINE):
            while until.encode() not in output or not output.endswith(b"\n"):
                chunk = await process.stdout.receive_some(65536)
                assert chunk, output.decode(errors="replace")
                output += chunk
        await check(output.decode())
    finally:
        await stop_process(process)
    return output.decode()


async def check(text: str) -> None:
    """One warning, no key, and every printed URL answers."""
    warnings = [line for line in text.splitlines() if "warning" in line.lower()]
    assert len(warnings) == 1, text
    assert "listening on 0.0.0.0, not loopback" in warnings[0]
    assert not KEY.search(text), text
    urls = {u for u in URL.findall(text) if "0.0.0.0" in u or "127.0.0.1" in u}
    assert urls, text
    assert not [u for u in urls if "0.0.0.0" in u], text
    async with httpx.AsyncClient() as client:
        for url in urls:
            response = await client.get(f"{url}/playground/app.js")
            assert response.status_code == 200, url


async def test_platform_beyond_loopback(tmp_path: Path) -> None:
    text = await exposed(["platform"], tmp_path, until="BAND_API_KEY=")
    assert "REST URL:      http://127.0.0.1:" in text


async def test_dev_beyond_loopback(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(echo_source("v1"))
    text = await exposed(["dev", "echo.py", "--no-chat"], tmp_path, until="another terminal:")
    assert "local Band platform at http://127.0.0.1:" in text
