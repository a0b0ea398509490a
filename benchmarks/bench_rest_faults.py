"""REST faults, out of process and in real time: is every message still
answered exactly once, none marked failed, none lost, and how fast does the
agent drain?

The harness (this process) runs the local Band platform on 127.0.0.1 and
drives a real agent in a subprocess: ``peers/band_trio_echo_agent.py``, an
echo adapter that catches nothing, default ``AgentConfig`` and REST settings,
the durable claims ledger in a fresh state directory. For each scenario it
makes ``--rooms`` rooms (20), waits until the agent has joined them, turns the
platform's fault injection on for every agent REST call (a share
``--faults`` of them, 20 %, seeded), posts ``--messages`` messages (200)
round-robin as the user, turns the faults off after ``--fault-seconds`` (30),
and polls the platform until every message is ``processed`` or
``--give-up`` seconds (60) have passed. Scenarios (``--scenario``, all by
default):

* ``503-before``: a 503 without ``Retry-After``, the call not performed;
* ``503-after``: the call performed, its answer lost behind a 503;
* ``5xx-after``: the call performed, its answer lost behind a 502 or a 504
  (half each);
* ``half-open``: no REST fault; the agent's WebSocket goes silent without
  closing (no frame either way, TCP open) for ``--freeze-seconds`` (45), one
  message posted per room at its start. Reported: when the silent socket
  closed, when a new one was open, when it had joined every room again, and
  when the messages were all processed, in seconds from the start of the
  silence.

Reported per scenario: the faults that fired, messages processed, answered
once, answered more than once, lost (not processed when the run ends),
failed attempts on the platform, the drain time from the first post, and the
50th / 99th percentile of a message's time from post to ``processed`` (as
polled every 50 ms). The agent is stopped by its pid (SIGTERM, then SIGKILL).

Usage::

    uv run python benchmarks/bench_rest_faults.py
    uv run python benchmarks/bench_rest_faults.py --scenario 503-before --repeat 3
    uv run python benchmarks/bench_rest_faults.py --json benchmarks/results/rest-faults.json

Not a test: nothing here asserts; figures go to stdout (and ``--json``).
"""

from __future__ import annotations

import argparse
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
PEER = HERE / "peers" / "band_trio_echo_agent.py"
AGENT_REST = r"^/api/v1/agent/"
SCENARIOS = ("503-before", "503-after", "5xx-after", "half-open")
POLL = 0.05


def inject(platform: LocalPlatform, scenario: str, share: float) -> list[Any]:
    """The fault rules of ``scenario`` on every agent REST call."""
    faults = platform.faults
    if scenario == "503-before":
        return [faults.add("*", AGENT_REST, 503, 10**9, probability=share)]
    if scenario == "503-after":
        return [faults.add("*", AGENT_REST, 503, 10**9, probability=share, perform=True)]
    half = share / 2
    return [
        faults.add("*", AGENT_REST, 502, 10**9, probability=half, perform=True),
        # Drawn only for the calls the 502 rule let through.
        faults.add("*", AGENT_REST, 504, 10**9, probability=half / (1 - half), perform=True),
    ]


async def start_agent(
    platform: LocalPlatform, workdir: Path, extra_env: dict[str, str]
) -> tuple[trio.Process, Path]:
    """The echo agent as a subprocess, once it printed READY."""
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
    env.update(extra_env)
    log = workdir / "agent.log"
    with open(log, "wb") as err:  # noqa: ASYNC230 - a local file, opened once
        process = await trio.lowlevel.open_process(
            [sys.executable, str(PEER)], env=env, stdout=-1, stderr=err
        )
    assert process.stdout is not None
    seen = b""
    with trio.fail_after(60):
        while b"READY" not in seen:
            data = await process.stdout.receive_some()
            if not data:
                raise RuntimeError("the agent exited:\n" + log.read_text()[-4000:])
            seen += data
    return process, log


async def stop_agent(process: trio.Process) -> float:
    """SIGTERM, then SIGKILL after 20 s; the seconds the graceful stop took."""
    started = time.monotonic()
    if process.returncode is None:
        process.terminate()
        with trio.move_on_after(20):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
    return time.monotonic() - started


def percentile(values: Sequence[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def half_open(
    platform: LocalPlatform, agent_id: str, rooms: Sequence[str], args: argparse.Namespace
) -> dict[str, Any]:
    """Freeze the agent's sockets; time their replacement."""
    frozen = {c.id for c in platform.hub.connections(agent_id)}
    platform.faults.freeze_sockets(frozen)
    start = time.monotonic()
    posted = [
        (room_id, platform.post_message(room_id, "please echo h0x", [agent_id])["id"])
        for room_id in rooms
    ]
    closed = connected = back = answered = None
    while time.monotonic() - start < args.give_up:
        now = time.monotonic() - start
        live = platform.hub.connections(agent_id)
        if closed is None and not frozen & {c.id for c in live}:
            closed = now
        fresh = [c for c in live if c.id not in frozen]
        if connected is None and fresh:
            connected = now
        if back is None and fresh and all(f"chat_room:{r}" in fresh[0].topics for r in rooms):
            back = now
        if answered is None and all(
            (d := platform.state.rooms[r].by_id[m].deliveries.get(agent_id)) is not None
            and d.status == "processed"
            for r, m in posted
        ):
            answered = now
        if now >= args.freeze_seconds:
            platform.faults.thaw()
        if None not in (closed, connected, back, answered):
            break
        await trio.sleep(POLL)
    platform.faults.thaw()
    return {
        "silent_socket_closed_s": None if closed is None else round(closed, 2),
        "reconnected_s": None if connected is None else round(connected, 2),
        "rejoined_s": None if back is None else round(back, 2),
        "messages_processed_s": None if answered is None else round(answered, 2),
    }


async def run_scenario(args: argparse.Namespace, scenario: str, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="band-faults-") as tmp:
        workdir = Path(tmp)
        async with trio.open_nursery() as nursery:
            platform = LocalPlatform(host="127.0.0.1", port=0)
            platform.faults.reseed(seed)
            await nursery.start(platform.serve)
            agent_id = platform.agents[0].id
            async with HumanClient(
                base_url=platform.rest_url, api_key=platform.user.api_key
            ) as human:
                rooms = []
                for i in range(args.rooms):
                    room = await human.create_room(f"faults room {i}")
                    await human.add_participant(room["id"], agent_id)
                    rooms.append(room["id"])
            process, log = await start_agent(platform, workdir, args.agent_env)
            try:
                with trio.fail_after(60):
                    # Polled: joining wakes no waiter in the harness.
                    while True:
                        if all(
                            platform.joined(agent_id, f"{kind}:{r}")
                            for r in rooms
                            for kind in ("chat_room", "room_participants")
                        ):
                            break
                        await trio.sleep(POLL)
                if scenario == "half-open":
                    return {"scenario": scenario} | await half_open(platform, agent_id, rooms, args)
                rules = inject(platform, scenario, args.faults)
                start = time.monotonic()
                posted: dict[str, tuple[str, str, float]] = {}
                for n in range(args.messages):
                    room_id = rooms[n % len(rooms)]
                    word = f"w{n}x"
                    sent = platform.post_message(room_id, f"please echo {word}", [agent_id])
                    posted[sent["id"]] = (room_id, word, time.monotonic())
                    await trio.lowlevel.checkpoint()
                latency: dict[str, float] = {}
                drained: float | None = None
                faults_on = True
                while True:
                    now = time.monotonic()
                    for message_id, (room_id, _, at) in posted.items():
                        if message_id in latency:
                            continue
                        message = platform.state.rooms[room_id].by_id[message_id]
                        delivery = message.deliveries.get(agent_id)
                        if delivery is not None and delivery.status == "processed":
                            latency[message_id] = now - at
                    if len(latency) == len(posted):
                        drained = now - start
                        break
                    if faults_on and now - start >= args.fault_seconds:
                        platform.faults.clear()
                        faults_on = False
                    if now - start >= args.give_up:
                        break
                    if process.poll() is not None:
                        raise RuntimeError("the agent exited:\n" + log.read_text()[-4000:])
                    await trio.sleep(POLL)
                platform.faults.clear()
                fired = sum(rule.hits for rule in rules)
            finally:
                stop_seconds = await stop_agent(process)
                if args.keep_log is not None:
                    with open(args.keep_log, "ab") as kept:  # noqa: ASYNC230 - a local file
                        kept.write(f"=== {scenario} seed {seed}\n".encode() + log.read_bytes())
                # The platform serves until cancelled (an early return too).
                nursery.cancel_scope.cancel()
        replies: list[int] = []
        failed_attempts = 0
        for message_id, (room_id, word, _) in posted.items():
            room = platform.state.rooms[room_id]
            replies.append(
                sum(
                    1
                    for m in room.messages
                    if m.sender_id == agent_id
                    and m.message_type == "text"
                    and m.content.endswith(f" {word}")
                )
            )
            delivery = room.by_id[message_id].deliveries.get(agent_id)
            if delivery is not None:
                failed_attempts += sum(1 for a in delivery.attempts if a.status == "failed")
        values = list(latency.values())
        return {
            "scenario": scenario,
            "seed": seed,
            "faults_fired": fired,
            "processed": len(latency),
            "answered_once": replies.count(1),
            "duplicated": sum(1 for n in replies if n > 1),
            "lost": len(posted) - len(latency),
            "failed_attempts": failed_attempts,
            "drained_after_s": None if drained is None else round(drained, 2),
            "p50_s": None if not values else round(percentile(values, 0.5) or 0.0, 2),
            "p99_s": None if not values else round(percentile(values, 0.99) or 0.0, 2),
            "agent_stop_s": round(stop_seconds, 2),
        }


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    results = []
    for scenario in args.scenario or SCENARIOS:
        for n in range(args.repeat):
            result = await run_scenario(args, scenario, args.seed + n)
            print(json.dumps(result), flush=True)
            results.append(result)
    return {
        "machine": {
            "python": py_platform.python_version(),
            "cpus": os.cpu_count(),
            "system": py_platform.platform(),
        },
        "settings": {
            "rooms": args.rooms,
            "messages": args.messages,
            "faults": args.faults,
            "fault_seconds": args.fault_seconds,
            "give_up": args.give_up,
            "freeze_seconds": args.freeze_seconds,
        },
        "results": results,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", choices=SCENARIOS)
    parser.add_argument("--rooms", type=int, default=20)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--faults", type=float, default=0.2, help="share of REST calls faulted")
    parser.add_argument("--fault-seconds", type=float, default=30.0)
    parser.add_argument("--give-up", type=float, default=60.0)
    parser.add_argument("--freeze-seconds", type=float, default=45.0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument(
        "--agent-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the agent (inherited BAND_* variables are not passed on)",
    )
    parser.add_argument(
        "--keep-log", type=Path, default=None, help="append the agent's stderr log here"
    )
    args = parser.parse_args(argv)
    args.agent_env = dict(pair.split("=", 1) for pair in args.agent_env)
    result = trio.run(bench, args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
