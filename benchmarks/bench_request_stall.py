"""How long one client's heavy JSON bodies make another client's request wait
on the local platform.

The platform runs in its own process (``band-trio platform --json``). A user
reads ``GET /api/v1/me/chats`` one request at a time, a short pause between
requests, for ``--seconds``; its latencies are recorded. That runs once with
no other traffic (the baseline) and once per attack, while an agent (a keyed
client) sends the heaviest JSON bodies the platform decodes, back to back
over ``--attackers`` connections, each body as large as the platform accepts
(4 MiB, or up to its value count) and of one kind:

* ``floats`` -- an array of floats (each decoded number is checked for
  being finite, in Python);
* ``objects`` -- an object of empty objects (decoded in C only);
* ``integers`` -- an array of 40-digit integers (the most digits the platform
  takes);
* ``strings`` -- an array of short strings of ``\\u`` escapes (decoded in C
  only, no Python call in between);
* ``escapes`` -- one string of ``\\u`` escaped surrogate pairs.

Each body is a memory the platform refuses (422) only after decoding it, so
nothing is stored and the runs stay comparable. Reported per run: the user's
p50 / p99 / max latency in milliseconds, their ratio to the baseline, and how
many bodies the attack got decoded.

Run::

    uv run python benchmarks/bench_request_stall.py
    uv run python benchmarks/bench_request_stall.py --seconds 10 --attackers 4 --json

Figures are machine-dependent; they are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import httpx
import trio
from bench_rest_roundtrip import _platform

from band_trio.local.asgi import MAX_JSON_BODY, MAX_JSON_INTEGER_DIGITS, MAX_JSON_VALUES

_PREFIX = b'{"memory":{"content":"x","system":"long_term","type":"semantic","segment":"user",'
_SUFFIX = b"}}"


def _memory(field: bytes) -> bytes:
    return _PREFIX + field + _SUFFIX


def attack_bodies() -> dict[str, bytes]:
    """The heaviest body of each kind, within the platform's bounds."""
    values = MAX_JSON_VALUES - 100
    room = MAX_JSON_BODY - 200
    integers = min(values, room // (MAX_JSON_INTEGER_DIGITS + 1))
    escapes = room // 12
    return {
        "floats": _memory(b'"metadata":[' + b",".join([b"1.5e300"] * values) + b"]"),
        "objects": _memory(
            b'"metadata":{' + b",".join(b'"%d":{}' % index for index in range(values // 2)) + b"}"
        ),
        "integers": _memory(
            b'"metadata":[' + b",".join([b"9" * MAX_JSON_INTEGER_DIGITS] * integers) + b"]"
        ),
        "strings": _memory(b'"metadata":[' + b",".join([b'"\\u00e9"'] * values) + b"]"),
        "escapes": _memory(b'"metadata":{"text":"' + b"\\ud83d\\ude00" * escapes + b'"}'),
    }


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def observe(url: str, key: str, seconds: float, pause: float) -> list[float]:
    """The user's GET latencies (seconds) over ``seconds``."""
    latencies = []
    async with httpx.AsyncClient(base_url=url, headers={"x-api-key": key}) as client:
        await client.get("/api/v1/me/chats")  # connect first, outside the figures
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            started = time.perf_counter()
            response = await client.get("/api/v1/me/chats")
            latencies.append(time.perf_counter() - started)
            response.raise_for_status()
            await trio.sleep(pause)
    return latencies


async def attack(url: str, key: str, body: bytes, done: list[int]) -> None:
    """Send ``body`` back to back until cancelled; count the answers in ``done``."""
    headers = {"x-api-key": key, "content-type": "application/json"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        while True:
            response = await client.post("/api/v1/agent/memories", content=body)
            if response.status_code not in (400, 422):
                raise RuntimeError(f"unexpected answer {response.status_code}: {response.text}")
            done[0] += 1


async def one_run(args: argparse.Namespace, platform: dict[str, Any], body: bytes | None) -> Any:
    url = platform["rest_url"]
    done = [0]
    async with trio.open_nursery() as nursery:
        if body is not None:
            for _ in range(args.attackers):
                nursery.start_soon(attack, url, platform["agents"][0]["api_key"], body, done)
            await trio.sleep(1)  # let the attack reach the platform first
        latencies = await observe(url, platform["user"]["api_key"], args.seconds, args.pause)
        nursery.cancel_scope.cancel()
    return {
        "requests": len(latencies),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "max_ms": round(max(latencies) * 1000, 2),
        "bodies_decoded": done[0],
    }


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    bodies = attack_bodies()
    kinds = args.kinds.split(",") if args.kinds else list(bodies)
    results: dict[str, Any] = {
        "seconds": args.seconds,
        "attackers": args.attackers,
        "body_bytes": {kind: len(bodies[kind]) for kind in kinds},
    }
    async with _platform(in_process=False, pythonpath=args.platform_path) as platform:
        baseline = await one_run(args, platform, None)
        results["baseline"] = baseline
        for kind in kinds:
            run = await one_run(args, platform, bodies[kind])
            for figure in ("p50_ms", "p99_ms"):
                run[figure.replace("_ms", "_ratio")] = round(run[figure] / baseline[figure], 1)
            results[kind] = run
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="observation per run")
    parser.add_argument("--attackers", type=int, default=4, help="connections sending bodies")
    parser.add_argument("--pause", type=float, default=0.01, help="seconds between user GETs")
    parser.add_argument("--kinds", default="", help="comma-separated kinds (default: all)")
    parser.add_argument(
        "--platform-path",
        default=None,
        help="a directory holding another band_trio for the platform to run (an earlier "
        "version, for a side-by-side run); the bodies are this version's",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    results = trio.run(bench, args)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{args.attackers} attacking connections, {args.seconds:.0f} s per run")
    print(
        f"{'run':10} {'GETs':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'p50 x':>6} {'p99 x':>6} {'bodies':>7}"
    )
    for kind in ("baseline", *results["body_bytes"]):
        run = results[kind]
        print(
            f"{kind:10} {run['requests']:>5} {run['p50_ms']:>8} {run['p99_ms']:>8} "
            f"{run['max_ms']:>8} {run.get('p50_ratio', 1.0):>6} {run.get('p99_ratio', 1.0):>6} "
            f"{run['bodies_decoded']:>7}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
