"""What the health, readiness and metrics listener costs an agent: the burst
of ``bench_agents.py``, band-trio's echo agent without and with the listener
(``BAND_HEALTH_PORT``) while a scraper reads ``/metrics``, ``/livez`` and
``/readyz``, side by side in one run.

The agent runs from the project's environment (it has ``prometheus-client``,
the ``metrics`` extra), both ways. The scraper runs in the benchmark process
and reads every ``--scrape-interval`` seconds, far more often than a
Prometheus server or a kubelet would (15 s and 10 s are usual), so that the
cost, if any, shows. The figure to compare is the agent's CPU seconds per
1000 messages; order alternates between repeats.

    uv run python benchmarks/bench_health.py --rooms 20 --messages 20 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bench_agents
import httpx
import trio
from bench_agents import RESULTS, machine, measure

VARIANTS = ("plain", "listener")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def scrape(port: int, interval: float, counts: dict[str, int]) -> None:
    """Read the three endpoints every ``interval`` seconds until cancelled."""
    base = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(timeout=5) as client:
        while True:
            for path in ("/metrics", "/livez", "/readyz"):
                try:
                    response = await client.get(base + path)
                except httpx.TransportError:
                    counts["refused"] += 1  # not listening yet, or already gone
                else:
                    counts[str(response.status_code)] = counts.get(str(response.status_code), 0) + 1
            await trio.sleep(interval)


async def one_run(
    variant: str, rooms: int, messages: int, workdir: Path, deadline: float, interval: float
) -> dict[str, Any]:
    counts = {"refused": 0}
    if variant == "plain":
        bench_agents.EXTRA_ENV["band-trio"] = {}
        result = await measure("band-trio", rooms, messages, workdir, deadline, None, None)
    else:
        port = free_port()
        bench_agents.EXTRA_ENV["band-trio"] = {"BAND_HEALTH_PORT": str(port)}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(scrape, port, interval, counts)
            result = await measure("band-trio", rooms, messages, workdir, deadline, None, None)
            nursery.cancel_scope.cancel()
    return {
        "variant": variant,
        "completed": result.completed,
        "error": result.error,
        "messages": result.messages,
        "cpu_s_per_1000": result.cpu_s_per_1000,
        "throughput_msg_s": result.throughput_msg_s,
        "latency_p50_ms": result.latency_p50_ms,
        "latency_p99_ms": result.latency_p99_ms,
        "sched_wait_agent_s": result.sched_wait_agent_s,
        "answers": counts,
    }


def median(runs: Sequence[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r["completed"] and r[key] is not None]
    return statistics.median(values) if values else None


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    bench_agents.TRIO_PYTHON = Path(sys.executable)  # the project's env: it has the extra
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="band-bench-health-") as tmp:
        for repeat in range(args.repeat):
            order = VARIANTS if repeat % 2 == 0 else tuple(reversed(VARIANTS))
            for variant in order:
                print(
                    f"[{variant}] {args.rooms}x{args.messages} (run {repeat + 1})", file=sys.stderr
                )
                run = await one_run(
                    variant,
                    args.rooms,
                    args.messages,
                    Path(tmp) / f"{variant}-{repeat}",
                    args.deadline,
                    args.scrape_interval,
                )
                run["repeat"] = repeat
                runs.append(run)
    summary = {
        variant: {
            key: median([r for r in runs if r["variant"] == variant], key)
            for key in ("cpu_s_per_1000", "throughput_msg_s", "latency_p50_ms", "latency_p99_ms")
        }
        for variant in VARIANTS
    }
    plain, listener = summary["plain"]["cpu_s_per_1000"], summary["listener"]["cpu_s_per_1000"]
    return {
        "machine": machine(),
        "command": " ".join(["benchmarks/bench_health.py", *sys.argv[1:]]),
        "scrape_interval_s": args.scrape_interval,
        "summary": summary,
        "cpu_ratio_listener_to_plain": listener / plain if plain and listener else None,
        "runs": runs,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rooms", type=int, default=20)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--scrape-interval", type=float, default=0.25, help="seconds")
    parser.add_argument("--name", default=None, help="results file name (without .json)")
    args = parser.parse_args(argv)
    report = trio.run(bench, args)
    print(json.dumps({k: report[k] for k in ("summary", "cpu_ratio_listener_to_plain")}, indent=2))
    if args.name:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
