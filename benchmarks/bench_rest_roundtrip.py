"""REST round trips per second on loopback: band-trio's RestClient against the
embedded local platform.

Two scenarios:

* ``me`` — ``GET /agent/me`` (the cheapest authenticated call), N calls spread
  over C concurrent tasks; reports calls/s, latency percentiles and how many TCP
  connections the client opened (one pooled ``httpx.AsyncClient``: connections
  should be reused, not churned);
* ``lifecycle`` — a human posts M messages mentioning the agent across R rooms
  (not timed); the agent drains every room concurrently with the real turn
  sequence ``/next`` → ``/processing`` → reply ``POST /messages`` →
  ``/processed``; reports messages/s and REST calls/s.

By default the platform runs in its own process (``band-trio platform --json``)
so the client and the server do not share an event loop; ``--in-process`` runs
it inside this Trio run instead.

Run::

    uv run python benchmarks/bench_rest_roundtrip.py
    uv run python benchmarks/bench_rest_roundtrip.py --calls 5000 --concurrency 1,8,32 --json

Figures are machine-dependent; they are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from band_trio.local import HumanClient, LocalPlatform
from band_trio.wire._pool import PooledTransport
from band_trio.wire.models import MentionRequest
from band_trio.wire.rest import RestClient, RestConfig


class _Connects:
    """Connections the client's transport opened since ``start`` (benchmark only)."""

    def __init__(self, transport: PooledTransport) -> None:
        self._transport = transport
        self._start = transport.opened

    @property
    def connects(self) -> int:
        return self._transport.opened - self._start


def _count_connections(rest: RestClient) -> _Connects | None:
    # RestClient's own transport counts what it opens (None behind a proxy,
    # where httpx's transport is used).
    transport = getattr(getattr(rest, "_client", None), "_transport", None)
    return _Connects(transport) if isinstance(transport, PooledTransport) else None


@asynccontextmanager
async def _platform(
    in_process: bool, pythonpath: str | None = None
) -> AsyncIterator[dict[str, Any]]:
    """Yields ``{rest_url, user: {api_key}, agents: [{id, api_key, handle}]}``.

    ``pythonpath``: a directory holding another ``band_trio`` (a checkout of
    an earlier version) for the platform process to run instead of this one.
    """
    if in_process:
        async with trio.open_nursery() as nursery:
            platform = LocalPlatform()
            await nursery.start(platform.serve)
            agent = platform.agents[0]
            yield {
                "rest_url": platform.rest_url,
                "user": {"api_key": platform.user.api_key},
                "agents": [{"id": agent.id, "api_key": agent.api_key, "handle": agent.handle}],
            }
            nursery.cancel_scope.cancel()
        return
    code = "import sys; from band_trio.cli import main; sys.exit(main(['platform', '--json']))"
    env = None
    if pythonpath is not None:  # and not the working directory first
        env = {**os.environ, "PYTHONPATH": pythonpath, "PYTHONSAFEPATH": "1"}
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        assert proc.stdout is not None
        line = b""
        with trio.fail_after(30):
            while b"\n" not in line:
                chunk = await proc.stdout.receive_some()
                if not chunk:
                    raise RuntimeError("the platform exited before printing its JSON line")
                line += chunk
        yield json.loads(line.split(b"\n", 1)[0])
    finally:
        with trio.CancelScope(shield=True):
            proc.send_signal(signal.SIGINT)
            with trio.move_on_after(10):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1)))
    return sorted_values[index]


async def bench_me(info: dict[str, Any], calls: int, concurrency: int) -> dict[str, Any]:
    agent = info["agents"][0]
    async with RestClient(base_url=info["rest_url"], api_key=agent["api_key"]) as rest:
        await rest.get_me()  # warm up: one connection, imports, route caches
        counter = _count_connections(rest)
        latencies: list[float] = []
        per_task = [calls // concurrency + (i < calls % concurrency) for i in range(concurrency)]

        async def worker(n: int) -> None:
            for _ in range(n):
                start = time.perf_counter()
                await rest.get_me()
                latencies.append(time.perf_counter() - start)

        start = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for n in per_task:
                nursery.start_soon(worker, n)
        elapsed = time.perf_counter() - start
        stats = rest.statistics()
    latencies.sort()
    return {
        "scenario": "me",
        "concurrency": concurrency,
        "calls": calls,
        "seconds": round(elapsed, 3),
        "calls_per_s": round(calls / elapsed, 1),
        "p50_ms": round(_percentile(latencies, 0.50) * 1000, 2),
        "p99_ms": round(_percentile(latencies, 0.99) * 1000, 2),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 2),
        "new_connections": counter.connects if counter else None,
        "retries": stats.retries,
    }


async def bench_lifecycle(info: dict[str, Any], messages: int, rooms: int) -> dict[str, Any]:
    agent = info["agents"][0]
    async with HumanClient(base_url=info["rest_url"], api_key=info["user"]["api_key"]) as human:
        room_ids = []
        for i in range(rooms):
            room = await human.create_room(f"bench {i}")
            await human.add_participant(room["id"], agent["id"])
            room_ids.append(room["id"])
        for i in range(messages):
            await human.post_message(
                room_ids[i % rooms], f"@{agent['handle']} task {i}", [agent["handle"]]
            )

    config = RestConfig(max_connections=min(64, max(1, rooms)))
    async with RestClient(
        base_url=info["rest_url"], api_key=agent["api_key"], config=config
    ) as rest:
        me = await rest.get_me()
        counter = _count_connections(rest)
        handled = 0

        async def drain(room_id: str) -> None:
            nonlocal handled
            while (message := await rest.next_message(room_id)) is not None:
                await rest.mark_processing(room_id, message.id)
                await rest.send_message(room_id, "done", [MentionRequest(id=message.sender_id)])
                await rest.mark_processed(room_id, message.id)
                handled += 1

        before = rest.statistics()
        start = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for room_id in room_ids:
                nursery.start_soon(drain, room_id)
        elapsed = time.perf_counter() - start
        after = rest.statistics()
    assert me.id == agent["id"]
    if handled != messages:
        raise RuntimeError(f"drained {handled} of {messages} messages")
    calls = after.calls - before.calls
    return {
        "scenario": "lifecycle",
        "rooms": rooms,
        "messages": messages,
        "seconds": round(elapsed, 3),
        "messages_per_s": round(messages / elapsed, 1),
        "rest_calls": calls,
        "calls_per_s": round(calls / elapsed, 1),
        "new_connections": counter.connects if counter else None,
        "retries": after.retries - before.retries,
    }


async def main(args: argparse.Namespace) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    async with _platform(args.in_process) as info:
        for concurrency in args.concurrency:
            results.append(await bench_me(info, args.calls, concurrency))
        results.append(await bench_lifecycle(info, args.messages, args.rooms))
    return results


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="GET /agent/me calls per run")
    parser.add_argument(
        "--concurrency", type=_ints, default=[1, 8, 32], help="comma list (default 1,8,32)"
    )
    parser.add_argument("--messages", type=int, default=400, help="messages for the lifecycle run")
    parser.add_argument("--rooms", type=int, default=20, help="rooms for the lifecycle run")
    parser.add_argument("--in-process", action="store_true", help="run the platform in-process")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args()
    results = trio.run(main, args)
    where = "in-process" if args.in_process else "separate process"
    if args.json:
        for row in results:
            print(json.dumps({**row, "platform": where}))
        return
    print(f"band-trio RestClient vs local platform ({where}), Python {sys.version.split()[0]}")
    for row in results:
        if row["scenario"] == "me":
            print(
                f"  GET /agent/me  c={row['concurrency']:<3} {row['calls_per_s']:>8} calls/s"
                f"  p50 {row['p50_ms']} ms  p99 {row['p99_ms']} ms"
                f"  new connections {row['new_connections']}"
            )
        else:
            print(
                f"  lifecycle      rooms={row['rooms']} {row['messages_per_s']:>8} messages/s"
                f"  ({row['calls_per_s']} REST calls/s, {row['rest_calls']} calls,"
                f" new connections {row['new_connections']})"
            )


if __name__ == "__main__":
    cli()
