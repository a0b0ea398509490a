"""band-trio's agent runtime against the official band-sdk, side by side.

One local Band platform runs in this process (so it can count connections
exactly, see ``_probe.py``). For each contender an echo agent runs as a
SUBPROCESS: band-trio's ``peers/band_trio_echo_agent.py`` with this project's
python, band-sdk's interop peer with the python of its own virtual environment
(``tests/interop/venvs.py`` builds it on first use). Per workload of R rooms x M
messages:

1. register a fresh agent, create R rooms holding the user and the agent;
2. start the agent; wait until its socket joined every topic and it has made no
   HTTP request for a while (observable platform state, under a deadline);
3. read its RSS (idle with R rooms) and CPU time, post R x M messages that
   mention it, all at once, from the human side;
4. wait (deadline) until every message is ``processed`` for the agent and has
   its echo; wait until the agent is quiet again and read its CPU time;
5. read its peak RSS and stop it by pid (SIGINT, then SIGKILL).

Figures: throughput (messages / (last processed_at - first inserted_at), both
platform timestamps), latency p50/p99 (reply inserted_at - message inserted_at),
CPU seconds per 1,000 messages (utime+stime from /proc/<pid>/stat), peak RSS
(VmHWM), memory per idle room ((RSS with R idle rooms - RSS with none) / R;
the no-room RSS comes from one extra start of each contender), the most HTTP
connections the agent had open at once, and its TCP connects (churn).

Usage::

    uv run python benchmarks/bench_agents.py                   # 20x20 and 200x5, both contenders
    uv run python benchmarks/bench_agents.py --rooms 20 --messages 20 --sdk band-trio

Without ``--rooms``/``--messages`` it runs 20x20 and 200x5 for both contenders
and prints the ratios (band-trio / band-sdk) against the performance targets
(``targets``). Results go to ``benchmarks/results/<name>.json``. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform as py_platform
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:  # for tests.interop.venvs (the band-sdk venv)
    sys.path.insert(0, str(REPO))

from _probe import ConnectionProbe, PrincipalConnections, install  # noqa: E402

from band_trio.local import (  # noqa: E402
    AgentCredentials,
    HumanClient,
    LocalPlatform,
)

CONTENDERS = ("band-trio", "band-sdk")
SUITE = ((20, 20), (200, 5))

#: Agent start-up: imports, /agent/me, connect, join every room.
CONNECT_DEADLINE = 180.0
#: No HTTP request from the agent for this long means it is idle.
QUIET_WINDOW = 1.0
#: SIGINT, then SIGKILL after this long.
STOP_GRACE = 15.0
#: Human-side posts in flight at once (HTTP connections of the user). All
#: posts start at once but wait on this limit before they enter httpx: with
#: hundreds of requests queued inside httpcore's pool, its request-to-connection
#: assignment (O(queued x connections) per request) made the posting side cost
#: the platform process more than a third of its CPU.
POST_CONNECTIONS = 16

TOKEN_RE = re.compile(r"bench-(\d+)-(\d+)-([0-9a-f]{8})")

CLK_TCK = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- /proc


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    fields = text[text.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def sched_wait_seconds(pid: int | str) -> float:
    """Time the process's main thread spent runnable but waiting for a CPU
    (``/proc/<pid>/schedstat``): other load on the machine shows up here."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def status_kib(pid: int, key: str) -> int:
    """A ``kB`` value of ``/proc/<pid>/status`` (VmRSS, VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def own_cpu_seconds() -> float:
    """CPU time of this process: the platform (and the human side posting)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def loadavg() -> float:
    """The 1-minute load average (other work on the machine skews the figures)."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


# --------------------------------------------------------------------------- profiling


@attrs.frozen
class Profile:
    """Profile one contender: ``cprofile`` runs the whole agent under cProfile
    (it roughly doubles its CPU time); ``py-spy`` samples it, from outside, only
    while the messages are processed (raw collapsed stacks, one per line)."""

    tool: str
    path: Path


async def start_py_spy(pid: int, path: Path) -> trio.Process:
    command = ["uvx", "py-spy", "record", "--pid", str(pid), "--rate", "200"]
    command += ["--format", "raw", "--nonblocking", "--output", str(path)]
    process = await trio.lowlevel.open_process(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    await trio.sleep(1.0)  # let it attach before the load starts
    return process


async def stop_py_spy(process: trio.Process) -> None:
    """SIGINT makes py-spy write its output; kill it if it hangs. Shielded."""
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            with trio.move_on_after(30):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


# --------------------------------------------------------------------------- contenders


#: The python of band-trio's own agent-only environment (set by ``bench``).
TRIO_PYTHON: Path | None = None


def band_trio_command() -> list[str]:
    python = TRIO_PYTHON if TRIO_PYTHON is not None else Path(sys.executable)
    return [str(python), str(HERE / "peers" / "band_trio_echo_agent.py")]


def band_sdk_command() -> list[str]:
    from tests.interop.venvs import band_sdk_python

    return [str(band_sdk_python()), str(HERE / "peers" / "band_sdk_echo_agent.py")]


#: Extra environment per contender (``--trio-env`` / ``--sdk-env``), for experiments.
EXTRA_ENV: dict[str, dict[str, str]] = {c: {} for c in CONTENDERS}


def build_band_trio_env(root: Path, *, bytecode: bool) -> Path:
    """Install band-trio as an agent would have it, in its own venv, and return
    its python: ``pip install band-trio`` without extras (no local platform, so
    no Hypercorn and no h2), the dependency versions of ``uv.lock``, compiled to
    bytecode at install as pip does for band-sdk's venv (``bytecode=False``
    leaves it out). The platform and the human side keep running from the
    project's environment, in this process.
    """
    uv = ["uv"]
    python = root / "bin" / "python"
    subprocess.run([*uv, "venv", "--quiet", "--python", sys.executable, str(root)], check=True)
    requirements = root / "requirements.txt"
    subprocess.run(
        [
            *uv,
            "export",
            "--quiet",
            "--frozen",
            "--no-dev",
            "--no-hashes",
            "--no-emit-project",
            "--output-file",
            str(requirements),
        ],
        cwd=REPO,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    install = [*uv, "pip", "install", "--quiet", "--python", str(python)]
    if bytecode:
        install.append("--compile-bytecode")
    subprocess.run([*install, "-r", str(requirements)], check=True)
    subprocess.run([*install, "--no-deps", str(REPO)], check=True)
    return python


def agent_env(
    contender: str, agent: AgentCredentials, platform: LocalPlatform, workdir: Path
) -> dict[str, str]:
    # Inherited BAND_* settings would change what is measured: only ours count.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.upper().startswith("BAND_")
    }
    tmp = workdir / "tmp"  # band-sdk keeps a per-agent lock file in TMPDIR
    tmp.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "BAND_AGENT_ID": agent.id,
            "BAND_API_KEY": agent.api_key,
            "BAND_REST_URL": platform.rest_url,
            "BAND_WS_URL": platform.ws_url,
            "BAND_STATE_DIR": str(workdir / "state"),  # band-trio's durable ledger
            "BAND_ECHO_LOG_LEVEL": "WARNING",
            "TMPDIR": str(tmp),
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(EXTRA_ENV[contender])
    return env


@attrs.define
class AgentProcess:
    """One running contender."""

    contender: str
    process: trio.Process
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


async def start_agent(
    contender: str,
    agent: AgentCredentials,
    platform: LocalPlatform,
    workdir: Path,
    profile: Path | None = None,
) -> AgentProcess:
    command = band_trio_command() if contender == "band-trio" else band_sdk_command()
    env = agent_env(contender, agent, platform, workdir)
    if profile is not None:
        env["BAND_BENCH_PROFILE"] = str(profile)
    log_path = workdir / "agent.log"
    async with await trio.open_file(log_path, "wb") as log:
        process = await trio.lowlevel.open_process(
            command, env=env, stdout=log.wrapped, stderr=log.wrapped
        )
    return AgentProcess(contender, process, log_path)


async def stop_agent(agent: AgentProcess) -> int | None:
    """SIGINT, then SIGKILL after ``STOP_GRACE``; always reaps. Shielded."""
    with trio.CancelScope(shield=True):
        if agent.process.returncode is None:
            agent.process.send_signal(signal.SIGINT)
            with trio.move_on_after(STOP_GRACE):
                await agent.process.wait()
        if agent.process.returncode is None:
            agent.process.kill()
            await agent.process.wait()
    return agent.process.returncode


# --------------------------------------------------------------------------- waiting


class AgentDied(RuntimeError):
    pass


def room_topics(rooms: Iterable[str]) -> set[str]:
    return {f"{kind}:{r}" for r in rooms for kind in ("chat_room", "room_participants")}


async def wait_until(
    platform: LocalPlatform, agent: AgentProcess, predicate: Any, what: str, interval: float = 0.05
) -> None:
    """Poll ``predicate`` (cheap checks on platform state) until it holds; fail
    at once if the agent process exits. The caller puts a deadline around it."""
    while not predicate():
        if not agent.alive():
            raise AgentDied(
                f"{agent.contender} exited ({agent.process.returncode}) while {what}:\n"
                + agent.log_tail()
            )
        await trio.sleep(interval)


async def wait_quiet(counters: PrincipalConnections, agent: AgentProcess) -> None:
    """Until the agent made no HTTP request for ``QUIET_WINDOW`` seconds."""
    last = -1
    since = time.monotonic()
    while True:
        if not agent.alive():
            raise AgentDied(f"{agent.contender} exited while settling:\n" + agent.log_tail())
        if counters.requests != last:
            last = counters.requests
            since = time.monotonic()
        elif time.monotonic() - since >= QUIET_WINDOW:
            return
        await trio.sleep(0.05)


# --------------------------------------------------------------------------- workload


def parse_ts(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@attrs.define
class Posted:
    room_id: str
    message_id: str
    token: str


class ReplyTracker:
    """Follows, incrementally, which posted messages are processed and echoed."""

    def __init__(self, platform: LocalPlatform, agent_id: str, posted: Sequence[Posted]) -> None:
        self.platform = platform
        self.agent_id = agent_id
        self.by_token = {p.token: p for p in posted}
        self.replies: dict[str, list[Any]] = {p.token: [] for p in posted}
        self.unprocessed = {p.token for p in posted}
        self.unreplied = {p.token for p in posted}
        self._scanned: dict[str, int] = {}
        self._rooms = sorted({p.room_id for p in posted})

    def poll(self) -> bool:
        """Update from the platform state; True once everything is done."""
        state = self.platform.state
        for room_id in self._rooms:
            room = state.rooms[room_id]
            start = self._scanned.get(room_id, 0)
            for message in room.messages[start:]:
                if message.sender_id != self.agent_id or message.message_type != "text":
                    continue
                match = TOKEN_RE.search(message.content)
                if match and match.group(0) in self.replies:
                    self.replies[match.group(0)].append(message)
                    self.unreplied.discard(match.group(0))
            self._scanned[room_id] = len(room.messages)
        for token in list(self.unprocessed):
            p = self.by_token[token]
            delivery = state.rooms[p.room_id].by_id[p.message_id].deliveries.get(self.agent_id)
            if delivery is not None and delivery.status == "processed":
                self.unprocessed.discard(token)
        return not self.unprocessed and not self.unreplied


async def make_rooms(human: HumanClient, agent_id: str, count: int) -> list[str]:
    rooms: list[str] = [""] * count
    limit = trio.CapacityLimiter(16)

    async def one(i: int) -> None:
        async with limit:
            room = await human.create_room(f"bench room {i}")
            await human.add_participant(room["id"], agent_id)
            rooms[i] = room["id"]

    async with trio.open_nursery() as nursery:
        for i in range(count):
            nursery.start_soon(one, i)
    return rooms


#: How the human side posts: "inproc" (default) calls the platform in this
#: process, "http" goes through the human REST API (``--post``).
POST_MODE = "inproc"


async def post_all(
    platform: LocalPlatform,
    human: HumanClient,
    agent_id: str,
    rooms: Sequence[str],
    messages: int,
) -> list[Posted]:
    """Post ``len(rooms) * messages`` messages at once, round-robin over the rooms.

    ``inproc``: through :meth:`LocalPlatform.post_message` (same validation and
    pushes as the human REST API, without its HTTP), yielding to the platform's
    socket writers after each message: the load generator then costs the
    platform's CPU almost nothing, so the agents, not the poster, set the pace.
    ``http``: through the human REST API, ``POST_CONNECTIONS`` in flight.
    """
    posted: list[Posted] = []
    salt = os.urandom(4).hex()
    if POST_MODE == "inproc":
        for m in range(messages):
            for r, room_id in enumerate(rooms):
                token = f"bench-{r}-{m}-{salt}"
                sent = platform.post_message(room_id, f"{token} please echo", [agent_id])
                posted.append(Posted(room_id, sent["id"], token))
                await trio.lowlevel.checkpoint()
        return posted

    limit = trio.CapacityLimiter(POST_CONNECTIONS)

    async def one(r: int, m: int) -> None:
        token = f"bench-{r}-{m}-{salt}"
        async with limit:
            sent = await human.post_message(rooms[r], f"{token} please echo", [agent_id])
        posted.append(Posted(rooms[r], sent["id"], token))

    async with trio.open_nursery() as nursery:
        for m in range(messages):
            for r in range(len(rooms)):
                nursery.start_soon(one, r, m)
    return posted


@attrs.define
class RunResult:
    contender: str
    rooms: int
    messages_per_room: int
    completed: bool = False
    error: str | None = None
    messages: int = 0
    processed: int = 0
    replied: int = 0
    duplicate_replies: int = 0
    throughput_msg_s: float | None = None
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    processed_p50_ms: float | None = None
    processed_p99_ms: float | None = None
    cpu_s_per_1000: float | None = None
    cpu_s_startup: float | None = None
    rss_idle_kib: int | None = None
    rss_idle_no_rooms_kib: int | None = None
    idle_kib_per_room: float | None = None
    peak_rss_kib: int | None = None
    max_http_connections: int | None = None
    tcp_connects: int | None = None
    tcp_connects_during_load: int | None = None
    ws_connects: int | None = None
    http_requests_during_load: int | None = None
    startup_s: float | None = None
    #: start of the process until every topic is joined (no quiet window)
    joined_s: float | None = None
    post_span_s: float | None = None
    exit_status: int | None = None
    agent_cpu_util: float | None = None
    platform_cpu_util: float | None = None
    loadavg_before: float | None = None
    loadavg_after: float | None = None
    repeat: int = 0
    sched_wait_agent_s: float | None = None
    sched_wait_platform_s: float | None = None
    requests_per_message: dict[str, float] = attrs.Factory(dict)
    #: mean time the platform took to answer each route (app entry to return)
    server_ms_per_request: dict[str, float] = attrs.Factory(dict)


async def run_workload(
    platform: LocalPlatform,
    probe: ConnectionProbe,
    human: HumanClient,
    contender: str,
    rooms_n: int,
    messages_n: int,
    workdir: Path,
    deadline: float,
    baseline_rss: int | None,
    profile: Profile | None,
) -> RunResult:
    result = RunResult(contender, rooms_n, messages_n)
    result.loadavg_before = loadavg()
    agent = platform.register_agent(
        f"Bench {contender} {rooms_n}x{messages_n} {os.urandom(2).hex()}",
        "Echo agent for the benchmark",
    )
    counters = probe.counters(agent.id)
    rooms = await make_rooms(human, agent.id, rooms_n) if rooms_n else []
    proc: AgentProcess | None = None
    try:
        t0 = time.monotonic()
        cprofile = profile.path if profile is not None and profile.tool == "cprofile" else None
        proc = await start_agent(contender, agent, platform, workdir, cprofile)
        topics = {f"agent_control:{agent.id}", f"agent_rooms:{agent.id}"} | room_topics(rooms)
        with trio.fail_after(CONNECT_DEADLINE):
            await wait_until(
                platform,
                proc,
                lambda: topics <= platform.hub.joined_topics(agent.id),
                "connecting and joining its rooms",
            )
            result.joined_s = time.monotonic() - t0
            await wait_quiet(counters, proc)
        result.startup_s = time.monotonic() - t0 - QUIET_WINDOW
        result.rss_idle_kib = status_kib(proc.pid, "VmRSS")
        result.cpu_s_startup = cpu_seconds(proc.pid)
        if baseline_rss is not None and rooms_n:
            result.rss_idle_no_rooms_kib = baseline_rss
            result.idle_kib_per_room = (result.rss_idle_kib - baseline_rss) / rooms_n
        if not messages_n or not rooms_n:
            result.completed = True
            return result

        connects_before = counters.http_connects + counters.ws_connects
        requests_before = counters.requests
        routes_before = counters.routes.copy()
        route_seconds_before = dict(counters.route_seconds)
        spy = None
        if profile is not None and profile.tool == "py-spy":
            spy = await start_py_spy(proc.pid, profile.path)
        cpu_before = cpu_seconds(proc.pid)
        platform_cpu_before = own_cpu_seconds()
        waits_before = sched_wait_seconds(proc.pid), sched_wait_seconds("self")
        wall_before = time.monotonic()
        with trio.fail_after(deadline):
            posted = await post_all(platform, human, agent.id, rooms, messages_n)
            tracker = ReplyTracker(platform, agent.id, posted)
            result.messages = len(posted)
            try:
                await wait_until(platform, proc, tracker.poll, "answering", interval=0.05)
                await wait_quiet(counters, proc)
            finally:
                result.processed = len(posted) - len(tracker.unprocessed)
                result.replied = len(posted) - len(tracker.unreplied)
        cpu_after = cpu_seconds(proc.pid)
        wall = time.monotonic() - wall_before
        result.agent_cpu_util = (cpu_after - cpu_before) / wall
        result.platform_cpu_util = (own_cpu_seconds() - platform_cpu_before) / wall
        result.sched_wait_agent_s = sched_wait_seconds(proc.pid) - waits_before[0]
        result.sched_wait_platform_s = sched_wait_seconds("self") - waits_before[1]
        if spy is not None:
            await stop_py_spy(spy)
        result.loadavg_after = loadavg()
        result.peak_rss_kib = status_kib(proc.pid, "VmHWM")
        result.requests_per_message = {
            k: round(v / len(posted), 3)
            for k, v in sorted((counters.routes - routes_before).items(), key=lambda kv: -kv[1])
        }
        served = counters.routes - routes_before
        result.server_ms_per_request = {
            k: round(1000 * (v - route_seconds_before.get(k, 0.0)) / served[k], 2)
            for k, v in counters.route_seconds.items()
            if served[k]
        }
        result.tcp_connects_during_load = (
            counters.http_connects + counters.ws_connects - connects_before
        )
        result.http_requests_during_load = counters.requests - requests_before
        result.cpu_s_per_1000 = (cpu_after - cpu_before) / len(posted) * 1000

        state = platform.state
        first_post = min(
            parse_ts(state.rooms[p.room_id].by_id[p.message_id].inserted_at) for p in posted
        )
        last_processed = 0.0
        latencies: list[float] = []
        processed_latencies: list[float] = []
        for p in posted:
            message = state.rooms[p.room_id].by_id[p.message_id]
            posted_at = parse_ts(message.inserted_at)
            delivery = message.deliveries[agent.id]
            assert delivery.processed_at is not None
            done_at = parse_ts(delivery.processed_at)
            last_processed = max(last_processed, done_at)
            processed_latencies.append(done_at - posted_at)
            replies = tracker.replies[p.token]
            result.duplicate_replies += len(replies) - 1
            latencies.append(parse_ts(replies[0].inserted_at) - posted_at)
        result.throughput_msg_s = len(posted) / max(last_processed - first_post, 1e-6)
        result.post_span_s = (
            max(parse_ts(state.rooms[p.room_id].by_id[p.message_id].inserted_at) for p in posted)
            - first_post
        )
        result.latency_p50_ms = percentile(latencies, 50) * 1000
        result.latency_p99_ms = percentile(latencies, 99) * 1000
        result.processed_p50_ms = percentile(processed_latencies, 50) * 1000
        result.processed_p99_ms = percentile(processed_latencies, 99) * 1000
        result.completed = True
        return result
    except (trio.TooSlowError, AgentDied) as exc:
        result.error = (
            f"deadline exceeded ({result.processed}/{result.messages} processed, "
            f"{result.replied} replied)"
            if isinstance(exc, trio.TooSlowError)
            else str(exc)
        )
        if proc is not None and proc.alive():
            result.peak_rss_kib = status_kib(proc.pid, "VmHWM")
        return result
    finally:
        result.max_http_connections = counters.max_http_open
        result.tcp_connects = counters.http_connects + counters.ws_connects
        result.ws_connects = counters.ws_connects
        if proc is not None:
            result.exit_status = await stop_agent(proc)


# --------------------------------------------------------------------------- report


def aggregate(results: Sequence[RunResult]) -> list[RunResult]:
    """One row per (contender, workload): the median of each figure over the
    completed repeats (the first failed run when none completed)."""
    groups: dict[tuple[str, int, int], list[RunResult]] = {}
    for r in results:
        groups.setdefault((r.contender, r.rooms, r.messages_per_room), []).append(r)
    rows = []
    for runs in groups.values():
        done = [r for r in runs if r.completed]
        if not done:
            rows.append(runs[0])
            continue
        row = attrs.evolve(done[0])
        for field in attrs.fields(RunResult):
            values = [getattr(r, field.name) for r in done]
            numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            if numbers and len(numbers) == len(values):
                median = statistics.median(numbers)
                all_int = all(isinstance(v, int) for v in numbers)
                setattr(row, field.name, round(median) if all_int else median)
        row.duplicate_replies = max(r.duplicate_replies for r in done)
        row.max_http_connections = max(r.max_http_connections or 0 for r in done)
        rows.append(row)
    return rows


ROWS: tuple[tuple[str, str, str], ...] = (
    ("throughput_msg_s", "throughput (msg/s)", "{:.1f}"),
    ("latency_p50_ms", "latency p50 (ms)", "{:.0f}"),
    ("latency_p99_ms", "latency p99 (ms)", "{:.0f}"),
    ("cpu_s_per_1000", "CPU s / 1000 msg", "{:.2f}"),
    ("peak_rss_kib", "peak RSS (MiB)", "mib"),
    ("idle_kib_per_room", "idle KiB / room", "{:.1f}"),
    ("max_http_connections", "max HTTP conns open", "{:d}"),
    ("tcp_connects_during_load", "TCP connects (load)", "{:d}"),
    ("tcp_connects", "TCP connects (total)", "{:d}"),
    ("joined_s", "all rooms joined (s)", "{:.2f}"),
    ("startup_s", "start-up (s)", "{:.2f}"),
    ("post_span_s", "first to last post (s)", "{:.2f}"),
    ("agent_cpu_util", "agent CPU busy (load)", "{:.0%}"),
    ("platform_cpu_util", "platform CPU busy (load)", "{:.0%}"),
    ("sched_wait_agent_s", "agent waited for CPU (s)", "{:.2f}"),
    ("sched_wait_platform_s", "platform waited for CPU(s)", "{:.2f}"),
)


def fmt(value: Any, spec: str) -> str:
    if value is None:
        return "-"
    if spec == "mib":
        return f"{value / 1024:.1f}"
    return spec.format(value)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def print_table(results: Sequence[RunResult], out: Any = sys.stdout) -> None:
    workloads = sorted({(r.rooms, r.messages_per_room) for r in results}, key=lambda w: w[0] * w[1])
    for rooms_n, messages_n in workloads:
        here = {
            r.contender: r
            for r in results
            if (r.rooms, r.messages_per_room) == (rooms_n, messages_n)
        }
        names = [c for c in CONTENDERS if c in here]
        print(f"\nR={rooms_n} rooms x M={messages_n} messages", file=out)
        header = f"  {'':24}" + "".join(f"{n:>14}" for n in names)
        if len(names) == 2:
            header += f"{'trio/sdk':>12}"
        print(header, file=out)
        for key, label, spec in ROWS:
            values = [getattr(here[n], key) for n in names]
            line = f"  {label:24}" + "".join(f"{fmt(v, spec):>14}" for v in values)
            if len(names) == 2:
                q = ratio(values[0], values[1])
                line += f"{'-' if q is None else f'{q:.2f}x':>12}"
            print(line, file=out)
        for n in names:
            r = here[n]
            if not r.completed:
                print(f"  !! {n}: {r.error}", file=out)
            elif r.duplicate_replies:
                print(f"  !! {n}: {r.duplicate_replies} duplicate replies", file=out)


@attrs.define
class Target:
    name: str
    measured: float | None
    limit: float
    at_most: bool

    @property
    def met(self) -> bool | None:
        if self.measured is None:
            return None
        return self.measured <= self.limit if self.at_most else self.measured >= self.limit


def targets(results: Sequence[RunResult]) -> list[Target]:
    """The performance targets: band-trio / band-sdk ratios and band-trio's HTTP
    connection cap (None where a run is missing)."""

    def get(contender: str, rooms_n: int, messages_n: int) -> RunResult | None:
        for r in results:
            if (r.contender, r.rooms, r.messages_per_room) == (contender, rooms_n, messages_n):
                return r if r.completed else None
        return None

    def pair(rooms_n: int, messages_n: int, key: str) -> float | None:
        t, s = get("band-trio", rooms_n, messages_n), get("band-sdk", rooms_n, messages_n)
        if t is None or s is None:
            return None
        return ratio(getattr(t, key), getattr(s, key))

    trio_conns = [r.max_http_connections for r in results if r.contender == "band-trio"]
    return [
        Target("CPU per message 20x20 (trio/sdk)", pair(20, 20, "cpu_s_per_1000"), 0.4, True),
        Target("throughput 20x20 (trio/sdk)", pair(20, 20, "throughput_msg_s"), 2.5, False),
        Target("throughput 200x5 (trio/sdk)", pair(200, 5, "throughput_msg_s"), 10.0, False),
        Target("peak memory 20x20 (trio/sdk)", pair(20, 20, "peak_rss_kib"), 0.75, True),
        Target("peak memory 200x5 (trio/sdk)", pair(200, 5, "peak_rss_kib"), 0.75, True),
        Target(
            "max HTTP connections (band-trio)",
            float(max(c for c in trio_conns if c is not None)) if trio_conns else None,
            64,
            True,
        ),
    ]


def print_targets(found: Sequence[Target], out: Any = sys.stdout) -> None:
    print("\nPerformance targets", file=out)
    for t in found:
        sign = "<=" if t.at_most else ">="
        measured = "-" if t.measured is None else f"{t.measured:.2f}"
        verdict = {None: "n/a", True: "met", False: "MISSED"}[t.met]
        print(f"  {t.name:36} {measured:>8}  (target {sign} {t.limit:g})  {verdict}", file=out)


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "python": py_platform.python_version(),
        "platform": py_platform.platform(),
    }


# --------------------------------------------------------------------------- main


async def measure(
    contender: str,
    rooms_n: int,
    messages_n: int,
    workdir: Path,
    deadline: float,
    baseline_rss: int | None,
    profile: Profile | None,
) -> RunResult:
    """One run on a fresh platform (so no run inherits another's rooms,
    messages or sockets)."""
    platform = LocalPlatform(seed_demo=False)
    probe = ConnectionProbe(
        lambda key: p.id if (p := platform.state.authenticate(key)) is not None else None
    )
    with install(probe):
        async with trio.open_nursery() as nursery:
            await nursery.start(platform.serve)
            transport = httpx.AsyncHTTPTransport(
                limits=httpx.Limits(
                    max_connections=POST_CONNECTIONS, max_keepalive_connections=POST_CONNECTIONS
                )
            )
            async with HumanClient(
                base_url=platform.rest_url, api_key=platform.user.api_key, transport=transport
            ) as human:
                result = await run_workload(
                    platform,
                    probe,
                    human,
                    contender,
                    rooms_n,
                    messages_n,
                    workdir,
                    deadline,
                    baseline_rss,
                    profile,
                )
            nursery.cancel_scope.cancel()
    return result


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    contenders = CONTENDERS if args.sdk == "both" else (args.sdk,)
    if args.rooms is None and args.messages is None:
        workloads: Sequence[tuple[int, int]] = SUITE
    else:
        workloads = ((args.rooms or 20, args.messages or 20),)
    results: list[RunResult] = []
    baselines: dict[str, RunResult] = {}
    global TRIO_PYTHON
    with tempfile.TemporaryDirectory(prefix="band-bench-") as tmp:
        if "band-trio" in contenders:
            print("[band-trio] installing it into its own venv (no extras)", file=sys.stderr)
            TRIO_PYTHON = await trio.to_thread.run_sync(
                partial(
                    build_band_trio_env, Path(tmp) / "band-trio-venv", bytecode=not args.no_bytecode
                )
            )
        for contender in contenders:
            print(f"[{contender}] idle baseline (no rooms)", file=sys.stderr)
            base = await measure(
                contender, 0, 0, Path(tmp) / f"{contender}-base", args.deadline, None, None
            )
            baselines[contender] = base
            if base.error:
                print(f"  failed: {base.error}", file=sys.stderr)
        for repeat in range(args.repeat):
            # Alternate who goes first, so neither always meets a warmer machine.
            order = contenders if repeat % 2 == 0 else tuple(reversed(contenders))
            for rooms_n, messages_n in workloads:
                for contender in order:
                    label = f"{contender}-{rooms_n}x{messages_n}-{repeat}"
                    print(
                        f"[{contender}] R={rooms_n} x M={messages_n} (run {repeat + 1})",
                        file=sys.stderr,
                    )
                    profile = None
                    if args.profile:
                        suffix = "prof" if args.profile == "cprofile" else "stacks.txt"
                        profile = Profile(args.profile, RESULTS / f"{args.name}-{label}.{suffix}")
                    r = await measure(
                        contender,
                        rooms_n,
                        messages_n,
                        Path(tmp) / label,
                        args.deadline,
                        baselines[contender].rss_idle_kib,
                        profile,
                    )
                    r.repeat = repeat
                    results.append(r)
                    print(
                        f"  done: {r.processed}/{r.messages} processed in "
                        f"{r.messages / r.throughput_msg_s if r.throughput_msg_s else 0:.1f} s"
                        + (f", error: {r.error}" if r.error else ""),
                        file=sys.stderr,
                    )
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join(["benchmarks/bench_agents.py", *sys.argv[1:]]),
        "extra_env": EXTRA_ENV,
        "band_trio_bytecode": not args.no_bytecode,
        "post": args.post,
        "band_trio_env": "own venv: band-trio without extras, uv.lock versions",
        "baselines": [attrs.asdict(b) for b in baselines.values()],
        "results": [attrs.asdict(r) for r in results],
    }


RESULTS = HERE / "results"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rooms", type=int, help="rooms R (default: the 20x20 + 200x5 suite)")
    parser.add_argument("--messages", type=int, help="messages per room M")
    parser.add_argument("--sdk", choices=("both", *CONTENDERS), default="both")
    parser.add_argument("--name", default=None, help="results file name (without .json)")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds per workload")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per workload and contender (medians shown)"
    )
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="install band-trio without compiling bytecode (it then compiles from source at every start)",
    )
    parser.add_argument(
        "--post",
        choices=("inproc", "http"),
        default="inproc",
        help="how the human side posts the load: in this process (default) or over "
        "the human REST API with 16 connections (the poster then bounds the throughput)",
    )
    parser.add_argument(
        "--profile",
        choices=("cprofile", "py-spy"),
        help="profile the agents: cProfile (whole run, about 2x slower) or py-spy "
        "(sampling, load phase only; run through uvx); output in benchmarks/results/",
    )
    for contender, flag in (("band-trio", "--trio-env"), ("band-sdk", "--sdk-env")):
        parser.add_argument(
            flag,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help=f"extra environment for the {contender} agent (an experiment; repeatable)",
        )
    args = parser.parse_args(argv)
    global POST_MODE
    POST_MODE = args.post
    for contender, pairs in (("band-trio", args.trio_env), ("band-sdk", args.sdk_env)):
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key:
                parser.error(f"expected KEY=VALUE, got {pair!r}")
            EXTRA_ENV[contender][key] = value
    if args.name is None:
        args.name = "agents-" + dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    RESULTS.mkdir(exist_ok=True)
    report = trio.run(bench, args)
    results = aggregate([RunResult(**r) for r in report["results"]])
    if args.repeat > 1:
        print(f"\nmedians of {args.repeat} runs (max HTTP connections: the maximum)")
    report["summary"] = [attrs.asdict(r) for r in results]
    print_table(results)
    if args.sdk == "both":
        found = targets(results)
        print_targets(found)
        report["targets"] = [{**attrs.asdict(t), "met": t.met} for t in found]
    path = RESULTS / f"{args.name}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nresults: {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
