"""The cost of band-trio-claude per turn: the adapter against claude-agent-sdk alone.

The real ``claude`` CLI (the one bundled in the claude-agent-sdk wheel) answers
from a scripted Messages API (``adapters/claude/tests``' stub, streaming SSE)
in both contenders; each turn is one model request that calls one in-process
MCP tool, then one that ends the turn:

* ``sdk``: a Trio program (``trio.run``) with one ``ClaudeSDKClient`` per
  room, each sending its room's prompts one after another and reading each
  turn to its result; the tool (``mcp__bench__noop``) returns at once. What
  claude-agent-sdk costs with nothing around it.
* ``ours``: a band-trio agent running ``ClaudeAgentAdapter`` on the local
  platform; a person posts each room's messages one after another (the next
  once the previous one is processed); the tool is ``band_send_message``,
  which posts the reply. What a Band agent costs on top: the runtime, the
  platform I/O of each turn, the adapter.

* ``plain``: the same band-trio agent and platform with a ``SimpleAdapter``
  that does a Claude turn's Band work and nothing else (a ``thought``, the
  ``tool_call``, the reply through ``band_send_message``, the ``tool_result``
  and the usage ``task`` event, through the helpers the Claude adapter
  uses), no model, no CLI. What the runtime costs any adapter doing that
  work; ``ours`` less ``plain`` is the adapter's share (the SDK included).

Each contender is a child process; the figure is the CPU time of that
process alone (``/proc/<pid>/stat``: not the CLIs it starts, not the platform
or the stub, which run in this process). The turns of all rooms run at once.
Memory: the agent's RSS (and the CLIs' RSS) once every room is idle with its
CLI still open, and again once the idle timeout closed every CLI.

The scripted model gives every tool use an id of its own, as the API does:
with one id for every turn (as a first draft had), the CLI drops a room's
second tool use as a repeat and the model answers the emptied turn the same
way, without end, which is why that draft hung on its smallest run.

Usage::

    uv run python benchmarks/bench_claude.py                      # 20 rooms x 10 turns
    uv run python benchmarks/bench_claude.py --rooms 20 --turns 50  # the 1,000-turn run

Measured (benchmarks/README.md): 16.1 against 3.3 ms of CPU per turn over
1,000 turns (5.0x), 16.3 against 3.9 over 200 (4.2x); the agent holds about
0.2 MiB per idle room with its CLI open, each CLI 205-250 MiB. With the
split (4 rooms x 10 turns, five runs while CI ran): sdk 4.5-6.0, ours
14.0-21.5, plain (the runtime's share) 4.75-7.0 ms per turn: 3.1-3.8x in
all, 2.0-2.7x for the adapter's share (ours less plain) against the SDK
alone. A CPU profile (``--profile``, on process time) finds about 1 of the
profiled 80 ms per turn in the adapter's own modules (nothing is rebuilt per
turn: the MCP server, schemas and options once per CLI, the system prompt
once); the SDK works harder than in its bare run (``jsonschema.validate``
of each tool call checks the larger Band schema: 0.8 against 0.2 ms); the
rest is spread thin (the kernel's share is under 1 ms per turn; garbage
collection over the larger heap took about 0.1 s more in a 40-turn run).

``--no-emit`` (no event posts, the reply and marks stay): ours 10.0-10.5
against 4.0-4.5 ms, plain 2.25-2.5. 1.2x is not reachable: it leaves about
0.9 ms per turn beyond the bare SDK, less than the runtime's least Band work
per message.

``--profile PREFIX`` writes ``PREFIX.<kind>.prof`` per contender (cProfile
on process time, start-up and warm-up included)::

    uv run python benchmarks/bench_claude.py --rooms 4 --turns 10 --profile benchmarks/results/claude
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform as py_platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "adapters" / "anthropic" / "tests"))
sys.path.insert(0, str(ROOT / "adapters" / "claude" / "tests"))

SEND = "mcp__band__band_send_message"
NOOP = "mcp__bench__noop"
MODEL = "claude-test"
IDLE_TIMEOUT = 15.0
"""Seconds the agent keeps an idle room's CLI (longer than a room waits between its turns)."""
_SENDER = re.compile(r"^\[[^\]]*\(@([^)]+)\)\]: ", re.M)
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def offline_env(stub_url: str, home: Path) -> dict[str, str]:
    from claude_support import offline_env as env

    return env(stub_url, home)


# ---------------------------------------------------------------- the child processes


async def run_sdk(stub_url: str, home: Path, rooms: int, turns: int) -> None:
    """The baseline: claude-agent-sdk alone, one client per room."""
    from claude_agent_sdk import (
        ClaudeAgentOptions,
        ClaudeSDKClient,
        ResultMessage,
        create_sdk_mcp_server,
        tool,
    )

    @tool("noop", "Does nothing.", {"type": "object", "properties": {}})
    async def noop(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "ok"}]}

    async def room(index: int) -> None:
        options = ClaudeAgentOptions(
            model=MODEL,
            env=offline_env(stub_url, home),
            cwd=home,
            tools=[],
            allowed_tools=[NOOP],
            mcp_servers={"bench": create_sdk_mcp_server("bench", tools=[noop])},
            system_prompt="You answer benchmark prompts.",
        )
        client = ClaudeSDKClient(options)
        await client.connect()
        for turn in range(turns):
            await client.query(f"[Bench (@bench)]: room {index} turn {turn}")
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    break
        clients.append(client)

    clients: list[Any] = []
    await room(-1)  # warm-up (lazy imports, the first CLI start): not measured
    await clients.pop().disconnect()
    print("ready", flush=True)
    sys.stdin.readline()  # go
    async with trio.open_nursery() as nursery:
        for index in range(rooms):
            nursery.start_soon(room, index)
    print("done", flush=True)
    sys.stdin.readline()  # the parent measured memory
    for client in clients:
        await client.disconnect()


def plain_adapter(emit: bool) -> Any:
    """A SimpleAdapter doing a Claude turn's Band work with no model or CLI:
    the thought, tool_call, reply (through the tool), tool_result and usage
    posts, through the same helpers the Claude adapter uses."""
    from band_trio import AgentToolsProtocol, PlatformMessage, SimpleAdapter
    from band_trio.adapter import (
        Usage,
        emit_usage,
        post_thought,
        post_tool_call,
        post_tool_result,
        run_tool_call,
    )

    class PlainAdapter(SimpleAdapter[Any]):
        turns = 0

        async def on_message(
            self,
            msg: PlatformMessage,
            tools: AgentToolsProtocol,
            history: Any,
            participants_msg: str | None,
            contacts_msg: str | None,
            *,
            is_session_bootstrap: bool,
            room_id: str,
        ) -> None:
            self.turns += 1
            call_id = f"toolu_{self.turns}"
            args = {"content": "ok", "mentions": [f"@{msg.sender_handle}"]}
            if emit:
                await post_thought(tools, "Reply.")
                await post_tool_call(tools, "band_send_message", args, call_id)
            output = await run_tool_call(
                tools,
                "band_send_message",
                args,
                "",
                custom_tools=self.custom_tools,
                post_events=False,
            )
            if emit:
                await post_tool_result(tools, "band_send_message", output.text, call_id)
                await emit_usage(
                    tools, Usage.reported(input_tokens=10, output_tokens=5, cost_usd=0.001)
                )

    return PlainAdapter()


async def run_ours(stub_url: str, home: Path, kind: str = "ours") -> None:
    """band-trio with ClaudeAgentAdapter (or, for ``plain``, the same Band
    work without Claude), serving until its input ends."""
    from band_trio_claude import ClaudeAgentAdapter, ClaudeAgentConfig

    import band_trio

    config = ClaudeAgentConfig(
        env=offline_env(stub_url, home),
        model=MODEL,
        cwd=home,
        idle_timeout=IDLE_TIMEOUT,
        # Every room keeps its CLI, as in the baseline (the default bound, 16,
        # would close and resume CLIs between turns).
        max_live_clients=int(os.environ["BENCH_ROOMS"]),
    )
    # BENCH_EMIT=none: no thought, tool_call, tool_result or usage posts in either.
    emit = os.environ.get("BENCH_EMIT") != "none"
    adapter = (
        plain_adapter(emit)
        if kind == "plain"
        else ClaudeAgentAdapter(config, emit=None if emit else [])
    )
    async with band_trio.open_agent(
        adapter=adapter,
        agent_id=os.environ["BENCH_AGENT_ID"],
        api_key=os.environ["BENCH_API_KEY"],
        rest_url=os.environ["BENCH_REST_URL"],
        ws_url=os.environ["BENCH_WS_URL"],
        config=band_trio.AgentConfig(state_dir=None, max_attempts=1),
    ):
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.read)


# ---------------------------------------------------------------- measuring


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the process itself (not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def sys_seconds(pid: int) -> float:
    """The system (kernel) part of :func:`cpu_seconds`."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[12]) / _TICKS


def rss_mib(pid: int) -> float:
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return pages * _PAGE / 2**20


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out += [int(p) for p in text]
    return out


def make_stub() -> Any:
    from anthropic_stub import Reply, Request, message, text, thinking, tool_use
    from claude_support import ClaudeStub, last_user_text, tool_results

    class BenchStub(ClaudeStub):
        """Every model request calls the offered tool once, then ends the turn."""

        calls = 0

        def _answer(self, request: Request) -> Reply:
            body = request.body
            names = (
                [str(t.get("name", "")) for t in (body.get("tools") or [])]
                if isinstance(body, dict)
                else []
            )
            if not isinstance(body, dict) or body.get("stream") is None or not names:
                return message(text("Untitled"))
            if tool_results(body):
                return message(text("Done."))
            self.calls += 1
            call_id = f"toolu_{self.calls}"
            if SEND in names:
                handles = _SENDER.findall(last_user_text(body))
                args = {"content": "ok", "mentions": [f"@{handles[-1]}"] if handles else []}
                return message(thinking("Reply."), tool_use(call_id, SEND, args))
            return message(thinking("Call."), tool_use(call_id, NOOP, {}))

    return BenchStub()


def _popen(kind: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--child", kind, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


async def spawn(kind: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    process = _popen(kind, args, env)
    assert process.stdout is not None
    # Read in a thread: the platform, in this process, must serve the start-up.
    line = (await trio.to_thread.run_sync(process.stdout.readline)).strip()
    if line != "ready":
        process.kill()
        raise RuntimeError(f"the {kind} contender did not start: {line!r}")
    return process


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def wait_gone(pids: list[int], deadline: float) -> None:
    with trio.fail_after(deadline):
        while any(alive(p) for p in pids):  # noqa: ASYNC110 (a process's end announces nothing)
            await trio.sleep(0.1)


async def bench_sdk(stub: Any, rooms: int, turns: int) -> dict[str, float]:
    home = Path(tempfile.mkdtemp(prefix="bench-claude-sdk-"))
    process = await spawn("sdk", [stub.url, str(home), str(rooms), str(turns)], {})
    assert process.stdin is not None
    assert process.stdout is not None
    before = cpu_seconds(process.pid)
    sys_before = sys_seconds(process.pid)
    began = time.perf_counter()
    process.stdin.write("go\n")
    process.stdin.flush()
    line = await trio.to_thread.run_sync(process.stdout.readline)
    wall = time.perf_counter() - began
    cpu = cpu_seconds(process.pid) - before
    kernel = sys_seconds(process.pid) - sys_before
    if line.strip() != "done":
        raise RuntimeError(f"the sdk contender failed: {line!r}")
    clis = children(process.pid)
    live_rss = rss_mib(process.pid)
    cli_rss = sum(rss_mib(p) for p in clis)
    process.stdin.write("close\n")
    process.stdin.close()
    await trio.to_thread.run_sync(process.wait)
    return {
        "turns": rooms * turns,
        "wall_s": wall,
        "cpu_s": cpu,
        "sys_s": kernel,
        "rss_live_mib": live_rss,
        "cli_rss_per_room_mib": cli_rss / rooms,
    }


async def bench_ours(stub: Any, rooms: int, turns: int, kind: str = "ours") -> dict[str, float]:
    from band_trio.local import HumanClient, open_local_platform

    home = Path(tempfile.mkdtemp(prefix="bench-claude-ours-"))
    async with open_local_platform() as platform:
        creds = platform.agents[0]

        def status(room_id: str, message_id: str) -> str | None:
            delivery = platform.state.rooms[room_id].by_id[message_id].deliveries.get(creds.id)
            return None if delivery is None else str(delivery.status)

        async def drive(human: HumanClient, room_id: str, count: int) -> None:
            for turn in range(count):
                sent = await human.post_message(
                    room_id, f"@{creds.handle} turn {turn}", [creds.handle]
                )
                mid = str(sent["id"])

                def settled(mid: str = mid) -> bool:
                    return status(room_id, mid) in ("processed", "failed")

                with trio.fail_after(120):
                    await platform.wait_for(settled)
                if status(room_id, mid) != "processed":
                    raise RuntimeError(f"turn {turn} of room {room_id} failed")

        async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
            room_ids = []
            for index in range(rooms):
                room = await human.create_room(f"bench {index}")
                await human.add_participant(room["id"], creds.id)
                room_ids.append(str(room["id"]))
            process = await spawn(
                kind,
                [stub.url, str(home)],
                {
                    "BENCH_AGENT_ID": creds.id,
                    "BENCH_API_KEY": creds.api_key,
                    "BENCH_REST_URL": platform.rest_url,
                    "BENCH_WS_URL": platform.ws_url,
                    "BENCH_ROOMS": str(rooms),
                },
            )
            assert process.stdin is not None
            try:
                # Warm-up (lazy imports, the first CLI start): not measured.
                warm = await human.create_room("bench warm-up")
                await human.add_participant(warm["id"], creds.id)
                await drive(human, str(warm["id"]), 1)
                await human.remove_participant(warm["id"], creds.id)
                with trio.fail_after(60):
                    while children(process.pid):  # noqa: ASYNC110 (as in wait_gone)
                        await trio.sleep(0.1)
                before = cpu_seconds(process.pid)
                sys_before = sys_seconds(process.pid)
                empty_rss = rss_mib(process.pid)
                began = time.perf_counter()

                async with trio.open_nursery() as nursery:
                    for room_id in room_ids:
                        nursery.start_soon(drive, human, room_id, turns)
                wall = time.perf_counter() - began
                cpu = cpu_seconds(process.pid) - before
                kernel = sys_seconds(process.pid) - sys_before
                clis = children(process.pid)
                live_rss = rss_mib(process.pid)
                cli_rss = sum(rss_mib(p) for p in clis)
                await wait_gone(clis, IDLE_TIMEOUT + 60)  # the idle timer closes them
                await trio.sleep(1.0)
                closed_rss = rss_mib(process.pid)
            finally:
                process.stdin.close()
                await trio.to_thread.run_sync(process.wait)
    return {
        "turns": rooms * turns,
        "wall_s": wall,
        "cpu_s": cpu,
        "sys_s": kernel,
        "rss_empty_mib": empty_rss,
        "rss_live_mib": live_rss,
        "rss_closed_mib": closed_rss,
        "cli_rss_per_room_mib": cli_rss / rooms,
        "clis_live": len(clis),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    stub = make_stub()
    results: dict[str, Any] = {
        "python": py_platform.python_version(),
        "rooms": args.rooms,
        "turns_per_room": args.turns,
    }
    async with trio.open_nursery() as nursery:
        await nursery.start(stub.serve)
        results["sdk"] = await bench_sdk(stub, args.rooms, args.turns)
        results["ours"] = await bench_ours(stub, args.rooms, args.turns)
        results["plain"] = await bench_ours(stub, args.rooms, args.turns, "plain")
        nursery.cancel_scope.cancel()
    sdk, ours, plain = results["sdk"], results["ours"], results["plain"]
    turns = args.rooms * args.turns
    results["cpu_ms_per_turn"] = {
        "sdk": 1000 * sdk["cpu_s"] / turns,
        "ours": 1000 * ours["cpu_s"] / turns,
        "runtime": 1000 * plain["cpu_s"] / turns,
        "adapter": 1000 * (ours["cpu_s"] - plain["cpu_s"]) / turns,
    }
    results["cpu_ratio"] = ours["cpu_s"] / sdk["cpu_s"]
    # The adapter's own share: ours less the runtime's Band work, against the SDK alone.
    results["adapter_cpu_ratio"] = (ours["cpu_s"] - plain["cpu_s"]) / sdk["cpu_s"]
    results["agent_rss_per_live_room_mib"] = (ours["rss_live_mib"] - ours["rss_empty_mib"]) / (
        args.rooms
    )
    results["agent_rss_per_closed_room_mib"] = (
        ours["rss_closed_mib"] - ours["rss_empty_mib"]
    ) / args.rooms
    return results


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10, help="turns per room")
    parser.add_argument("--json", type=Path, help="write the results here too")
    parser.add_argument(
        "--no-emit",
        action="store_true",
        help="the agents post no thought, tool_call, tool_result or usage events",
    )
    parser.add_argument(
        "--profile",
        help="cProfile each contender process (warm-up included) into PROFILE.<kind>.prof",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, stub_url, home, *rest = args.child
        profile = os.environ.get("BENCH_PROFILE")
        profiler = cProfile.Profile(time.process_time) if profile else None
        if profiler is not None:
            profiler.enable()
        if kind == "sdk":
            trio.run(run_sdk, stub_url, Path(home), int(rest[0]), int(rest[1]))
        else:
            trio.run(run_ours, stub_url, Path(home), kind)
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(f"{profile}.{kind}.prof")
        return
    if args.no_emit:
        os.environ["BENCH_EMIT"] = "none"
    if args.profile:
        os.environ["BENCH_PROFILE"] = str(Path(args.profile).resolve())
    results = trio.run(main, args)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    cli()
