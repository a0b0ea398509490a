"""Open WebSocket upgrades the way band-sdk does and report how it reads a refusal.

Runs only with the python of the band-sdk venv. For each case it calls the
official ``band.client.streaming.errors.probe_upgrade_error`` (the SDK's own
diagnostic handshake with the ``websockets`` library: protocol, "HTTP upgrade refusals"), which
parses the platform's refusal body, and also reports the raw HTTP status.

Input on stdin: a JSON list of ``{"name", "url", "headers"}``.
Output on stdout: one JSON object per case: ``{"name", "status", "connected",
"parsed"}`` where ``parsed`` is ``null`` or ``{status_code, code, message,
request_id, retry_after, is_connection_conflict}``.

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

from band.client.streaming.errors import probe_upgrade_error
from websockets.asyncio.client import connect


async def raw_status(url: str, headers: dict[str, str]) -> tuple[int | None, bool]:
    """(HTTP status of a refusal, whether the upgrade succeeded)."""
    try:
        async with connect(url, additional_headers=headers, open_timeout=5):
            return 101, True
    except Exception as exc:
        response = getattr(exc, "response", None)
        return getattr(response, "status_code", None), False


async def run(cases: list[dict[str, Any]]) -> None:
    logger = logging.getLogger("upgrade_probe")
    for case in cases:
        url, headers = case["url"], case["headers"]
        parsed = await probe_upgrade_error(url, headers, logger=logger, redact=str)
        status, connected = await raw_status(url, headers)
        print(
            json.dumps(
                {
                    "name": case["name"],
                    "status": status,
                    "connected": connected,
                    "parsed": None
                    if parsed is None
                    else {
                        "status_code": parsed.status_code,
                        "code": parsed.code,
                        "message": parsed.message,
                        "request_id": parsed.request_id,
                        "retry_after": parsed.retry_after,
                        "is_connection_conflict": parsed.is_connection_conflict,
                    },
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(run(json.load(sys.stdin)))
