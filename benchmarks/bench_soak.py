"""Soak without growth: does a long-running agent stop growing after warm-up?

One local Band platform runs in this process; the agent is
``peers/band_trio_soak_agent.py`` (an echo agent with the durable SQLite claims
ledger in a fresh state directory) in a subprocess, which reports its own size
on request. Two workloads, one agent process each:

* ``messages``: ``--rooms`` rooms (100), ``--messages`` messages (10,000)
  posted round-robin in ``--rounds`` rounds (10); after each round the driver
  waits until every message is ``processed``, counts the agent's answers,
  then measures;
* ``rooms``: ``--churn-rooms`` rooms (1,000) joined and left ``--cycles``
  times (4): each cycle adds the agent to every room, waits until it has
  joined them all, posts one message per room (``--churn-messages``), waits
  until all are processed, removes the agent from every room, waits until it
  has left them all, then measures.

Measured (by the agent on itself): resident memory (VmRSS, as is and after
``malloc_trim``), memory blocks held by Python's allocator, open file
descriptors, the ledger's files on disk, live Python objects after a
collection, and every per-room table it keeps; with
``--agent-env PYTHONTRACEMALLOC=1`` also the traced memory and its peak during
the round or cycle (add ``--agent-env BAND_SOAK_PEAK_SITES=1`` for the
allocation sites that held that peak). The report compares the
measurement after warm-up (``--warmup`` rounds or cycles, 2 by default) with
the last one and flags what still grows.

Usage::

    uv run python benchmarks/bench_soak.py                # both workloads, default sizes
    uv run python benchmarks/bench_soak.py --workload rooms --cycles 3
    uv run python benchmarks/bench_soak.py --json benchmarks/results/soak.json

Not a test: nothing here asserts; figures go to stdout (and ``--json``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform as py_platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from band_trio.local import HumanClient, LocalPlatform

HERE = Path(__file__).resolve().parent
PEER = HERE / "peers" / "band_trio_soak_agent.py"
DEADLINE = 600.0
"""Seconds any single wait may take before the run is abandoned."""
POLL = 0.05


class Peer:
    """The agent subprocess: send it commands, read its JSON answers."""

    def __init__(self, process: trio.Process, log: Path) -> None:
        self.process = process
        self.log = log
        self._buffer = b""

    async def _line(self) -> str:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            data = await self.process.stdout.receive_some()
            if not data:
                raise RuntimeError("the agent exited:\n" + self.log.read_text()[-4000:])
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    async def ready(self) -> None:
        while (await self._line()).strip() != "READY":
            pass

    async def measure(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(b"measure\n")
        while True:
            line = await self._line()
            if line.startswith("{"):
                return dict(json.loads(line))

    async def mark(self) -> None:
        """Tell the agent a measurement point was taken (its peak starts again)."""
        assert self.process.stdin is not None
        await self.process.stdin.send_all(b"mark\n")

    async def quit(self) -> None:
        with trio.CancelScope(shield=True):
            if self.process.returncode is None and self.process.stdin is not None:
                with contextlib.suppress(trio.BrokenResourceError):
                    await self.process.stdin.send_all(b"quit\n")
                with trio.move_on_after(20):
                    await self.process.wait()
            if self.process.returncode is None:
                self.process.kill()
                await self.process.wait()


async def start_peer(
    platform: LocalPlatform, workdir: Path, extra_env: dict[str, str] | None = None
) -> Peer:
    creds = platform.agents[0]
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("BAND_")}
    env.update(
        {
            "BAND_AGENT_ID": creds.id,
            "BAND_API_KEY": creds.api_key,
            "BAND_REST_URL": platform.rest_url,
            "BAND_WS_URL": platform.ws_url,
            "BAND_STATE_DIR": str(workdir / "state"),
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra_env or {})
    log = workdir / "agent.log"
    with open(log, "wb") as err:  # noqa: ASYNC230 - a local file, opened once
        process = await trio.lowlevel.open_process(
            [sys.executable, str(PEER)],
            env=env,
            stdin=-1,  # subprocess.PIPE
            stdout=-1,
            stderr=err,
        )
    peer = Peer(process, log)
    with trio.fail_after(60):
        await peer.ready()
    return peer


# --------------------------------------------------------------------------- waiting


async def wait_until(peer: Peer, predicate: Any, what: str) -> None:
    """Poll cheap platform state until ``predicate()``; fail if the agent exits."""
    with trio.fail_after(DEADLINE):
        while not predicate():
            if peer.process.poll() is not None:
                raise RuntimeError(
                    f"the agent exited while {what}:\n" + peer.log.read_text()[-4000:]
                )
            await trio.sleep(POLL)


async def settled(peer: Peer, predicate: Any) -> dict[str, Any]:
    """Measure every quarter second until ``predicate(tables)`` holds."""
    with trio.fail_after(DEADLINE):
        while True:
            sample = await peer.measure()
            if predicate(sample["tables"]):
                return sample
            await trio.sleep(0.25)


def joined_all(
    platform: LocalPlatform, agent_id: str, rooms: Sequence[str], *, joined: bool
) -> bool:
    return all(platform.joined(agent_id, f"chat_room:{r}") is joined for r in rooms)


class Outstanding:
    """Posted messages not yet processed, checked incrementally
    (only the outstanding ones are looked at on each poll)."""

    def __init__(self, platform: LocalPlatform, agent_id: str) -> None:
        self.platform = platform
        self.agent_id = agent_id
        self.pending: list[tuple[str, str]] = []

    def add(self, room_id: str, message_id: str) -> None:
        self.pending.append((room_id, message_id))

    def done(self) -> bool:
        rooms = self.platform.state.rooms
        left = []
        for room_id, message_id in self.pending:
            delivery = rooms[room_id].by_id[message_id].deliveries.get(self.agent_id)
            if delivery is None or delivery.status != "processed":
                left.append((room_id, message_id))
        self.pending = left
        return not left


def answers(platform: LocalPlatform, agent_id: str, rooms: Sequence[str], asked: int) -> int:
    """The agent's text messages in the rooms (the echo agent answers each
    message once); a line is printed when they are not one per message asked."""
    count = sum(
        1
        for room_id in rooms
        for message in platform.state.rooms[room_id].messages
        if message.sender_id == agent_id and message.message_type == "text"
    )
    if count != asked:
        print(f"  !! {count} answers to {asked} messages", flush=True)
    return count


async def post_round(
    platform: LocalPlatform, agent_id: str, rooms: Sequence[str], per_room: int, tag: str
) -> Outstanding:
    outstanding = Outstanding(platform, agent_id)
    for m in range(per_room):
        for r, room_id in enumerate(rooms):
            sent = platform.post_message(room_id, f"{tag}-{r}-{m} please echo", [agent_id])
            outstanding.add(room_id, sent["id"])
            # Let the platform's socket writers run: the poster costs little.
            await trio.lowlevel.checkpoint()
    return outstanding


async def in_parallel(calls: Sequence[Any], limit: int = 16) -> None:
    limiter = trio.CapacityLimiter(limit)

    async def one(call: Any) -> None:
        async with limiter:
            await call()

    async with trio.open_nursery() as nursery:
        for call in calls:
            nursery.start_soon(one, call)


# --------------------------------------------------------------------------- workloads


def _point(label: str, started: float, sample: dict[str, Any], **extra: Any) -> dict[str, Any]:
    point = {"at": label, "seconds": round(time.monotonic() - started, 1), **extra, **sample}
    tables = sample.get("tables", {})
    ledger = sum(sample.get("ledger_bytes", {}).values())
    print(
        f"  {label:>10}  {point['seconds']:7.1f} s  rss {sample['rss_kib'] / 1024:6.1f}"
        f" ({sample['rss_trimmed_kib'] / 1024:6.1f} trimmed) MiB  blocks {sample['py_blocks']:8d}"
        f"  arenas {sample.get('py_arenas', -1):4d}"
        f"  fds {sample['fds']:4d}  ledger {ledger / 1024:8.1f} KiB"
        f"  objects {sample['gc_objects']:8d}  rooms {tables.get('rooms', 0):5d}"
        f"  completed {tables.get('claims_completed', 0):6d}"
        f"  known {tables.get('claims_known_replies', 0):6d}" + _peak_text(sample.get("peak", {})),
        flush=True,
    )
    for site in sample.get("peak", {}).get("peak_sites", ())[:5]:
        print(f"      at the peak: {site}", flush=True)
    return point


def _peak_text(peak: dict[str, Any]) -> str:
    if "traced_peak_kib" not in peak:
        return ""
    return (
        f"  traced {peak['traced_kib'] / 1024:6.1f} MiB"
        f" (peak {peak['traced_peak_kib'] / 1024:6.1f})"
    )


def local_platform(args: argparse.Namespace) -> LocalPlatform:
    platform = LocalPlatform(host="127.0.0.1", port=0)
    if args.socket_queue:
        platform.hub.queue_size = args.socket_queue
    return platform


async def messages_workload(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = []
    async with trio.open_nursery() as nursery:
        platform = local_platform(args)
        await nursery.start(platform.serve)
        agent_id = platform.agents[0].id
        async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
            rooms: list[str] = [""] * args.rooms

            async def make(i: int) -> None:
                room = await human.create_room(f"soak room {i}")
                await human.add_participant(room["id"], agent_id)
                rooms[i] = room["id"]

            await in_parallel([lambda i=i: make(i) for i in range(args.rooms)])
            peer = await start_peer(platform, workdir, args.agent_env)
            try:
                started = time.monotonic()
                await wait_until(
                    peer, lambda: joined_all(platform, agent_id, rooms, joined=True), "joining"
                )
                points.append(_point("start", started, await peer.measure(), messages=0))
                await peer.mark()
                per_round = args.messages // args.rounds
                per_room = max(1, per_round // args.rooms)
                total = 0
                for n in range(1, args.rounds + 1):
                    outstanding = await post_round(platform, agent_id, rooms, per_room, f"r{n}")
                    total += per_room * len(rooms)
                    await wait_until(peer, outstanding.done, f"answering round {n}")
                    sample = await peer.measure()
                    replies = answers(platform, agent_id, rooms, total)
                    points.append(
                        _point(f"round {n}", started, sample, messages=total, answers=replies)
                    )
                    await peer.mark()
            finally:
                await peer.quit()
        nursery.cancel_scope.cancel()
    return points


async def rooms_workload(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = []
    async with trio.open_nursery() as nursery:
        platform = local_platform(args)
        await nursery.start(platform.serve)
        agent_id = platform.agents[0].id
        async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
            rooms: list[str] = [""] * args.churn_rooms

            async def make(i: int) -> None:
                rooms[i] = (await human.create_room(f"churn room {i}"))["id"]

            await in_parallel([lambda i=i: make(i) for i in range(args.churn_rooms)])
            peer = await start_peer(platform, workdir, args.agent_env)
            try:
                started = time.monotonic()
                points.append(_point("start", started, await peer.measure(), cycle=0))
                await peer.mark()
                for n in range(1, args.cycles + 1):
                    await in_parallel(
                        [lambda r=r: human.add_participant(r, agent_id) for r in rooms]
                    )
                    await wait_until(
                        peer, lambda: joined_all(platform, agent_id, rooms, joined=True), "joining"
                    )
                    if args.churn_messages:
                        outstanding = await post_round(
                            platform, agent_id, rooms, args.churn_messages, f"c{n}"
                        )
                        await wait_until(peer, outstanding.done, f"answering cycle {n}")
                    await in_parallel(
                        [lambda r=r: human.remove_participant(r, agent_id) for r in rooms]
                    )
                    await wait_until(
                        peer, lambda: joined_all(platform, agent_id, rooms, joined=False), "leaving"
                    )
                    # The platform forgets the membership at once; the agent
                    # leaves its rooms (cleanup, phx_leave) a moment later.
                    sample = await settled(
                        peer, lambda t: t["rooms"] == 0 and t["join_waiters"] == 0
                    )
                    asked = n * len(rooms) * args.churn_messages
                    replies = answers(platform, agent_id, rooms, asked)
                    points.append(
                        _point(
                            f"cycle {n}", started, sample, cycle=n, messages=asked, answers=replies
                        )
                    )
                    await peer.mark()
            finally:
                await peer.quit()
        nursery.cancel_scope.cancel()
    return points


# --------------------------------------------------------------------------- report


def flat(point: dict[str, Any]) -> dict[str, int]:
    """The figures of one measurement, flattened: rss_kib, fds, gc_objects,
    ledger_bytes (all files), table sizes."""
    values = {
        "rss_kib": point["rss_kib"],
        "rss_trimmed_kib": point["rss_trimmed_kib"],
        "py_blocks": point["py_blocks"],
        "py_arenas": point.get("py_arenas", -1),
        "py_arenas_reclaimed": point.get("py_arenas_reclaimed", -1),
        "fds": point["fds"],
        "gc_objects": point["gc_objects"],
        "ledger_bytes": sum(point["ledger_bytes"].values()),
    }
    values.update(point["tables"])
    return values


def growth(points: Sequence[dict[str, Any]], warmup: int) -> dict[str, dict[str, int]]:
    """Each figure after warm-up and at the end."""
    after, end = flat(points[min(warmup, len(points) - 1)]), flat(points[-1])
    return {k: {"after_warmup": after[k], "end": end.get(k, 0)} for k in after}


def print_growth(name: str, table: dict[str, dict[str, int]]) -> None:
    print(f"\n{name}: after warm-up -> end")
    for key, row in table.items():
        a, b = row["after_warmup"], row["end"]
        change = "" if a == b else f"  ({b - a:+d})"
        print(f"  {key:22} {a:>12} -> {b:>12}{change}")


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "machine": {
            "python": py_platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_start": os.getloadavg()[0],
        },
        "args": vars(args) | {"json": str(args.json) if args.json else None},
    }
    with tempfile.TemporaryDirectory(prefix="band-soak-") as tmp:
        root = Path(tmp)
        if args.workload in ("messages", "both"):
            print(f"messages: {args.messages} into {args.rooms} rooms, {args.rounds} rounds")
            (root / "messages").mkdir()
            points = await messages_workload(args, root / "messages")
            result["messages"] = {"points": points, "growth": growth(points, args.warmup)}
            print_growth("messages", result["messages"]["growth"])
        if args.workload in ("rooms", "both"):
            print(f"rooms: {args.churn_rooms} rooms joined and left {args.cycles} times")
            (root / "rooms").mkdir()
            points = await rooms_workload(args, root / "rooms")
            result["rooms"] = {"points": points, "growth": growth(points, args.warmup)}
            print_growth("rooms", result["rooms"]["growth"])
    result["machine"]["loadavg_end"] = os.getloadavg()[0]
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=("messages", "rooms", "both"), default="both")
    parser.add_argument("--rooms", type=int, default=100)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--churn-rooms", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=4)
    parser.add_argument("--churn-messages", type=int, default=1, help="messages per room per cycle")
    parser.add_argument(
        "--socket-queue",
        type=int,
        default=0,
        help="frames the platform queues for one socket before it drops it "
        "(default: the local platform's own bound)",
    )
    parser.add_argument("--warmup", type=int, default=2, help="rounds/cycles counted as warm-up")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument(
        "--agent-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the agent (inherited BAND_* variables are not passed on)",
    )
    args = parser.parse_args(argv)
    args.agent_env = dict(pair.split("=", 1) for pair in args.agent_env)
    result = trio.run(bench, args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
