"""Validate WebSocket event payloads with the OFFICIAL validator of band-sdk.

Runs only with the python of the band-sdk venv (``tests/interop/venvs.py``),
where ``band_sdk_core`` (the compiled helper band-sdk 6.0.1 uses to validate
every push: protocol, "Validation rules common to all events") is installed; band-trio never imports it.

Input on stdin: one JSON object per line, ``{"topic", "event", "payload"}``.
Output on stdout: one JSON object per input line, ``{"topic", "event", "ok",
"error"}``. Exit status 0 when every payload validated, 1 otherwise, 2 on bad
input.

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

import json
import sys

import band_sdk_core


def main() -> int:
    failures = 0
    for number, raw in enumerate(sys.stdin, 1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
            topic, event, payload = item["topic"], item["event"], item["payload"]
        except (ValueError, KeyError, TypeError) as exc:
            print(f"event_validator: bad input line {number}: {exc}", file=sys.stderr)
            return 2
        try:
            band_sdk_core.validate_event_payload(event, payload)
        except ValueError as exc:
            failures += 1
            issues = getattr(exc, "issues", None) or ()
            error = "; ".join(f"{path}: {message}" for path, _code, message in issues) or str(exc)
            print(json.dumps({"topic": topic, "event": event, "ok": False, "error": error}))
        else:
            print(json.dumps({"topic": topic, "event": event, "ok": True, "error": None}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
