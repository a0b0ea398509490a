"""Many rooms in one agent: band-trio against the official band-sdk, side by side.

The set-up is ``bench_agents.py``'s (one local platform in this process,
counting every request of the agent exactly; each contender an echo agent
SUBPROCESS in its own virtual environment). Per contender and number of rooms
R (1,000 / 5,000 / 10,000 by default), on a fresh platform:

1. register an agent and create R rooms holding the user and the agent (in
   process, no HTTP);
2. **start-up**: start the agent; time until its socket has joined every
   topic, and until it has called ``GET /messages/next`` for every room (all
   rooms joined and drained); REST calls per room until then, by route; RSS;
3. **reconnect**: drop the agent's socket (no close frame); time until every
   room has had a ``/next`` after the drop and the room listing was read
   again; REST calls per room from the drop until then plus ``--settle``
   seconds (a second pass would show here), by route;
4. **idle**: REST calls per room over ``--idle`` seconds with nothing posted;
5. **paced load**: ``--rate`` messages per second, each to the next of the R
   rooms (a stride through them, so they spread over all rooms), for
   ``--seconds``; latency = echo ``inserted_at`` - message ``inserted_at``
   (p50/p99), next to the platform's own share of it: the mean time the
   platform took to serve the requests of one turn (``/processing``, the
   reply, ``/processed``) as the probe measured them server-side;
6. peak RSS; stop the agent (SIGINT).

Memory per idle room = (RSS after start-up with R rooms - RSS of the same
contender started with no rooms) / R.

Usage::

    uv run python benchmarks/bench_rooms.py                        # 1k/5k/10k trio, 1k sdk
    uv run python benchmarks/bench_rooms.py --rooms 1000 --sdk-rooms 1000
    uv run python benchmarks/bench_rooms.py --rooms 10000 --sdk none --project-python

Results: ``benchmarks/results/<name>.json``. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import trio

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import bench_agents as ba  # noqa: E402
from _probe import ConnectionProbe, install  # noqa: E402

from band_trio.local import LocalPlatform  # noqa: E402
from band_trio.local._input import Obj  # noqa: E402

RESULTS = HERE / "results"
NEXT_SUFFIX = "/messages/next"


class RoomProbe(ConnectionProbe):
    """The connection probe, also counting ``/next`` calls per room and the
    room listings of one principal."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watch: str | None = None
        self.next_by_room: Counter[str] = Counter()
        self.next_rooms_since: set[str] = set()
        self.listings = 0

    def _attribute(self, conn: Any, scope: dict[str, Any]) -> None:
        super()._attribute(conn, scope)
        if scope.get("type") != "http" or conn.principal != self.watch:
            return
        path = scope.get("path", "")
        if path.endswith(NEXT_SUFFIX):
            room = path[: -len(NEXT_SUFFIX)].rsplit("/", 1)[1]
            self.next_by_room[room] += 1
            self.next_rooms_since.add(room)
        elif path.endswith("/agent/chats") and scope.get("method") == "GET":
            self.listings += 1


@attrs.define
class RoomsResult:
    contender: str
    rooms: int
    error: str | None = None
    joined_s: float | None = None
    drained_s: float | None = None
    startup_calls_per_room: float | None = None
    startup_routes: dict[str, int] = attrs.Factory(dict)
    cpu_s_startup: float | None = None
    wait_s_startup: float | None = None
    cpu_s_reconnect: float | None = None
    rss_idle_kib: int | None = None
    idle_kib_per_room: float | None = None
    reconnect_s: float | None = None
    reconnect_calls_per_room: float | None = None
    reconnect_routes: dict[str, int] = attrs.Factory(dict)
    idle_seconds: float = 0.0
    idle_calls_per_room_minute: float | None = None
    idle_calls_per_second: float | None = None
    paced_messages: int = 0
    paced_answered: int = 0
    paced_duplicates: int = 0
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    platform_turn_ms: float | None = None
    peak_rss_kib: int | None = None
    sched_wait_agent_s: float | None = None
    loadavg_before: float | None = None
    loadavg_after: float | None = None
    exit_status: int | None = None


def make_rooms_inproc(platform: LocalPlatform, agent_id: str, count: int) -> list[str]:
    """``count`` rooms holding the user and the agent, created in this process."""
    state = platform.state
    user = state.users[platform.user.id]
    rooms: list[str] = []
    for i in range(count):
        room = state.create_room(user, Obj({"chat": {"title": f"scale room {i}"}}))
        state.add_participant(user, room.id, Obj({"participant": {"participant_id": agent_id}}))
        rooms.append(room.id)
    return rooms


def _route_delta(after: Counter[str], before: Counter[str]) -> dict[str, int]:
    return {k: v for k, v in sorted((after - before).items(), key=lambda kv: -kv[1])}


async def _wait(proc: ba.AgentProcess, predicate: Any, what: str, interval: float = 0.05) -> None:
    while not predicate():
        if not proc.alive():
            raise ba.AgentDied(f"{proc.contender} exited while {what}:\n" + proc.log_tail())
        await trio.sleep(interval)


async def run_rooms(
    platform: LocalPlatform,
    probe: RoomProbe,
    contender: str,
    rooms_n: int,
    workdir: Path,
    args: argparse.Namespace,
    baseline_rss: int | None,
) -> RoomsResult:
    result = RoomsResult(contender, rooms_n, idle_seconds=args.idle)
    result.loadavg_before = ba.loadavg()
    agent = platform.register_agent(f"Scale {contender} {rooms_n} {os.urandom(2).hex()}", "echo")
    probe.watch = agent.id
    counters = probe.counters(agent.id)
    rooms = make_rooms_inproc(platform, agent.id, rooms_n)
    proc: ba.AgentProcess | None = None
    try:
        t0 = time.monotonic()
        proc = await ba.start_agent(contender, agent, platform, workdir)
        topics = {f"agent_control:{agent.id}", f"agent_rooms:{agent.id}"} | ba.room_topics(rooms)

        def all_joined() -> bool:
            # Cheap first (this poll runs in the platform's process): count
            # the topics of the agent's sockets, then check them all once.
            joined = sum(len(conn.topics) for conn in platform.hub.connections(agent.id))
            return joined >= len(topics) and topics <= platform.hub.joined_topics(agent.id)

        def all_drained() -> bool:
            # Only the agent's rooms are counted, so the count says it all.
            return len(probe.next_rooms_since) >= rooms_n

        with trio.fail_after(args.deadline):
            await _wait(proc, all_joined, "joining", 0.02)
            result.joined_s = time.monotonic() - t0
            await _wait(proc, all_drained, "draining", 0.02)
            result.drained_s = time.monotonic() - t0
        # CPU the agent used, and time it was runnable but waited for a CPU
        # (the machine's contention), both until all rooms drained.
        result.cpu_s_startup = ba.cpu_seconds(proc.pid)
        result.wait_s_startup = ba.sched_wait_seconds(proc.pid)
        if rooms_n:
            result.startup_calls_per_room = counters.requests / rooms_n
        result.startup_routes = dict(counters.routes)
        await trio.sleep(1.0)
        result.rss_idle_kib = ba.status_kib(proc.pid, "VmRSS")
        if baseline_rss is not None and rooms_n:
            result.idle_kib_per_room = (result.rss_idle_kib - baseline_rss) / rooms_n
        if not rooms_n:
            return result

        # ---------------------------------------------------------- reconnect
        routes_before = counters.routes.copy()
        requests_before = counters.requests
        listings_before = probe.listings
        probe.next_rooms_since = set()
        t1 = time.monotonic()
        cpu_before = ba.cpu_seconds(proc.pid)
        await platform.drop_agent_sockets(agent.id)
        with trio.fail_after(args.deadline):
            await _wait(
                proc,
                lambda: all_drained() and probe.listings - listings_before >= 1 and all_joined(),
                "recovering from the drop",
                0.02,
            )
        result.reconnect_s = time.monotonic() - t1
        result.cpu_s_reconnect = ba.cpu_seconds(proc.pid) - cpu_before
        await trio.sleep(args.settle)
        result.reconnect_calls_per_room = (counters.requests - requests_before) / rooms_n
        result.reconnect_routes = _route_delta(counters.routes, routes_before)

        # ---------------------------------------------------------- idle
        if args.idle > 0:
            before = counters.requests
            await trio.sleep(args.idle)
            calls = counters.requests - before
            result.idle_calls_per_second = calls / args.idle
            result.idle_calls_per_room_minute = calls / rooms_n * 60.0 / args.idle

        # ---------------------------------------------------------- paced load
        if args.rate > 0 and args.seconds > 0:
            await paced_load(platform, probe, agent.id, rooms, proc, result, args)
        result.peak_rss_kib = ba.status_kib(proc.pid, "VmHWM")
        result.sched_wait_agent_s = ba.sched_wait_seconds(proc.pid)
        return result
    except (trio.TooSlowError, ba.AgentDied) as exc:
        result.error = "deadline exceeded" if isinstance(exc, trio.TooSlowError) else str(exc)
        if proc is not None and proc.alive():
            result.peak_rss_kib = ba.status_kib(proc.pid, "VmHWM")
        return result
    finally:
        result.loadavg_after = ba.loadavg()
        if proc is not None:
            result.exit_status = await ba.stop_agent(proc)


async def paced_load(
    platform: LocalPlatform,
    probe: RoomProbe,
    agent_id: str,
    rooms: Sequence[str],
    proc: ba.AgentProcess,
    result: RoomsResult,
    args: argparse.Namespace,
) -> None:
    counters = probe.counters(agent_id)
    seconds_before = dict(counters.route_seconds)
    routes_before = counters.routes.copy()
    total = int(args.rate * args.seconds)
    # A stride co-prime with the room count visits every room before any twice.
    stride = next(
        s for s in range(max(len(rooms) // 3, 1), len(rooms) + 1) if math.gcd(s, len(rooms)) == 1
    )
    salt = os.urandom(4).hex()
    posted: list[ba.Posted] = []
    start = trio.current_time()
    for i in range(total):
        await trio.sleep_until(start + i / args.rate)
        room_id = rooms[(i * stride) % len(rooms)]
        token = f"bench-{i}-0-{salt}"
        sent = platform.post_message(room_id, f"{token} please echo", [agent_id])
        posted.append(ba.Posted(room_id, sent["id"], token))
    tracker = ba.ReplyTracker(platform, agent_id, posted)
    result.paced_messages = total
    with trio.move_on_after(args.deadline):
        await _wait(proc, tracker.poll, "answering the paced load", 0.1)
    result.paced_answered = total - len(tracker.unreplied)
    state = platform.state
    latencies = []
    for p in posted:
        replies = tracker.replies[p.token]
        if not replies:
            continue
        result.paced_duplicates += len(replies) - 1
        message = state.rooms[p.room_id].by_id[p.message_id]
        latencies.append(ba.parse_ts(replies[0].inserted_at) - ba.parse_ts(message.inserted_at))
    if latencies:
        result.latency_p50_ms = ba.percentile(latencies, 50) * 1000
        result.latency_p99_ms = ba.percentile(latencies, 99) * 1000
    served = counters.routes - routes_before
    turn_ms = 0.0
    for key in (
        "POST /api/v1/agent/chats/{id}/messages/{id}/processing",
        "POST /api/v1/agent/chats/{id}/messages",
        "POST /api/v1/agent/chats/{id}/messages/{id}/processed",
    ):
        if served[key]:
            spent = counters.route_seconds.get(key, 0.0) - seconds_before.get(key, 0.0)
            turn_ms += 1000 * spent / served[key]
    result.platform_turn_ms = turn_ms


async def measure(
    contender: str, rooms_n: int, workdir: Path, args: argparse.Namespace, baseline: int | None
) -> RoomsResult:
    platform = LocalPlatform(seed_demo=False)
    probe = RoomProbe(
        lambda key: p.id if (p := platform.state.authenticate(key)) is not None else None
    )
    with install(probe):
        async with trio.open_nursery() as nursery:
            await nursery.start(platform.serve)
            result = await run_rooms(platform, probe, contender, rooms_n, workdir, args, baseline)
            nursery.cancel_scope.cancel()
    return result


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    plan: list[tuple[str, int]] = []
    for rooms_n in args.rooms:
        if args.sdk in ("band-trio", "both"):
            plan.append(("band-trio", rooms_n))
        if args.sdk in ("band-sdk", "both") and rooms_n in args.sdk_rooms:
            plan.append(("band-sdk", rooms_n))
    contenders = sorted({c for c, _ in plan})
    results: list[RoomsResult] = []
    baselines: dict[str, int | None] = {}
    with tempfile.TemporaryDirectory(prefix="band-rooms-") as tmp:
        if "band-trio" in contenders and not args.project_python:
            print("[band-trio] installing it into its own venv (no extras)", file=sys.stderr)
            ba.TRIO_PYTHON = await trio.to_thread.run_sync(
                partial(ba.build_band_trio_env, Path(tmp) / "band-trio-venv", bytecode=True)
            )
        for contender in contenders:
            print(f"[{contender}] idle baseline (no rooms)", file=sys.stderr)
            base = await measure(contender, 0, Path(tmp) / f"{contender}-base", args, None)
            baselines[contender] = base.rss_idle_kib
        for contender, rooms_n in plan:
            print(f"[{contender}] {rooms_n} rooms", file=sys.stderr)
            r = await measure(
                contender, rooms_n, Path(tmp) / f"{contender}-{rooms_n}", args, baselines[contender]
            )
            results.append(r)
            print(
                f"  joined {r.joined_s}, drained {r.drained_s}, reconnect {r.reconnect_s}, "
                f"error {r.error}",
                file=sys.stderr,
            )
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": ba.machine(),
        "command": " ".join(["benchmarks/bench_rooms.py", *sys.argv[1:]]),
        "baselines_rss_kib": baselines,
        "extra_env": ba.EXTRA_ENV,
        "results": [attrs.asdict(r) for r in results],
    }


def _fmt(value: Any, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def print_table(results: Sequence[RoomsResult]) -> None:
    rows = [
        ("all rooms joined (s)", "joined_s", ".2f"),
        ("all rooms joined and drained (s)", "drained_s", ".2f"),
        ("agent CPU s until then", "cpu_s_startup", ".2f"),
        ("agent waited for a CPU until then (s)", "wait_s_startup", ".2f"),
        ("REST calls / room, start-up", "startup_calls_per_room", ".3f"),
        ("reconnect: all rooms drained (s)", "reconnect_s", ".2f"),
        ("REST calls / room, reconnect", "reconnect_calls_per_room", ".3f"),
        ("agent CPU s for the reconnect", "cpu_s_reconnect", ".2f"),
        ("REST calls / room / idle minute", "idle_calls_per_room_minute", ".4f"),
        ("idle REST calls / s", "idle_calls_per_second", ".2f"),
        ("RSS after start-up (MiB)", "rss_idle_kib", ".1f"),
        ("idle memory per room (KiB)", "idle_kib_per_room", ".1f"),
        ("paced latency p50 (ms)", "latency_p50_ms", ".1f"),
        ("paced latency p99 (ms)", "latency_p99_ms", ".1f"),
        ("platform's share of a turn (ms)", "platform_turn_ms", ".1f"),
        ("peak RSS (MiB)", "peak_rss_kib", ".1f"),
    ]
    for rooms_n in sorted({r.rooms for r in results}):
        group = [r for r in results if r.rooms == rooms_n]
        names = [r.contender for r in group]
        print(
            f"\n{rooms_n} rooms | "
            + " | ".join(names)
            + (" | trio / sdk" if len(group) == 2 else "")
        )
        for label, attr, spec in rows:
            values = [getattr(r, attr) for r in group]
            shown = [
                _fmt(
                    v / 1024 if v is not None and attr in ("rss_idle_kib", "peak_rss_kib") else v,
                    spec,
                )
                for v in values
            ]
            line = f"{label} | " + " | ".join(shown)
            if len(group) == 2 and values[0] is not None and values[1]:
                line += f" | {values[0] / values[1]:.2f}×"
            print(line)
        for r in group:
            if r.error:
                print(f"{r.contender}: error: {r.error}")
            print(
                f"{r.contender}: paced {r.paced_answered}/{r.paced_messages} answered, "
                f"{r.paced_duplicates} duplicate replies"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rooms", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument(
        "--sdk-rooms", type=int, nargs="*", default=[1000], help="room counts band-sdk runs"
    )
    parser.add_argument("--sdk", choices=("both", "band-trio", "band-sdk"), default="both")
    parser.add_argument("--idle", type=float, default=60.0, help="idle window (s)")
    parser.add_argument("--settle", type=float, default=2.0, help="after a reconnect (s)")
    parser.add_argument("--rate", type=float, default=100.0, help="paced messages per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="paced load duration")
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds per phase")
    parser.add_argument(
        "--project-python",
        action="store_true",
        help="run band-trio with this project's python instead of its own agent-only venv",
    )
    parser.add_argument("--name", default=None, help="results file name (without .json)")
    for contender, flag in (("band-trio", "--trio-env"), ("band-sdk", "--sdk-env")):
        parser.add_argument(
            flag,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help=f"extra environment for the {contender} agent (an experiment; repeatable)",
        )
    args = parser.parse_args(argv)
    for contender, pairs in (("band-trio", args.trio_env), ("band-sdk", args.sdk_env)):
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key:
                parser.error(f"expected KEY=VALUE, got {pair!r}")
            ba.EXTRA_ENV[contender][key] = value
    if args.name is None:
        args.name = "rooms-" + dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    RESULTS.mkdir(exist_ok=True)
    report = trio.run(bench, args)
    print_table([RoomsResult(**r) for r in report["results"]])
    path = RESULTS / f"{args.name}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nresults: {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
