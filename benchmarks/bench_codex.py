"""The Codex adapter's own cost, against the fake app-server
(``adapters/codex/tests/fake_codex.py``, the same program the tests script).

* **Per-turn overhead**: N native turns (``turn/start``, a usage
  notification, ``turn/completed``) on one thread, in two ways side by side:
  ``raw``, a blocking client writing and reading the pipes directly (the
  least any client can do), and ``adapter``, band-trio-codex's
  ``CodexProcess`` and ``CodexTurn`` under ``trio.run`` (reader task,
  pending-request slots, the turn's channel and deadlines). Wall time and
  this process's CPU time per turn; the fake's own time is the same in both.
* **Memory per idle room**: K rooms each with a live app-server (the fake),
  then the same rooms with their processes closed: this process's RSS and
  the children's RSS, per room.

Usage::

    uv run python benchmarks/bench_codex.py                  # 300 turns, 20 rooms
    uv run python benchmarks/bench_codex.py --turns 1000 --rooms 50 \\
        --json benchmarks/results/codex.json
    uv run python benchmarks/bench_codex.py --codex node_modules/.bin/codex  # + the real one
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform as py_platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from band_trio_codex import CodexAdapter, CodexConfig, CodexProcess
from band_trio_codex.turn import CodexTurn, UsageAnchor

FAKE = Path(__file__).parent.parent / "adapters" / "codex" / "tests" / "fake_codex.py"
USAGE = {"usage": {"total": {"inputTokens": 10, "outputTokens": 2}, "last": {"inputTokens": 10}}}


def _script(directory: Path) -> list[str]:
    script = directory / "script.json"
    script.write_text(json.dumps({"turns": [], "default": [USAGE]}))
    return [sys.executable, str(FAKE), str(script), str(directory / "log.jsonl")]


def _tree_rss_kib(pid: int) -> int:
    """RSS of a process and its descendants (the npm ``codex`` is a node
    launcher running the native binary)."""
    total = _rss_kib(pid)
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return total
    return total + sum(_tree_rss_kib(int(child)) for child in children)


def _rss_kib(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def raw_turns(argv: list[str], turns: int) -> tuple[float, float]:
    """Blocking client: (wall, CPU) seconds for ``turns`` turns."""
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None
    assert child.stdout is not None
    ids = iter(range(1, 10**9))

    def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        ident = next(ids)
        child.stdin.write(json.dumps({"id": ident, "method": method, "params": params}) + "\n")
        child.stdin.flush()
        while True:
            message = json.loads(child.stdout.readline())
            if message.get("id") == ident and "method" not in message:
                return message

    call("initialize", {"clientInfo": {"name": "raw", "version": "0"}})
    thread = call("thread/start", {})["result"]["thread"]["id"]
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(turns):
        call("turn/start", {"threadId": thread, "input": [{"type": "text", "text": "hi"}]})
        while json.loads(child.stdout.readline()).get("method") != "turn/completed":
            pass
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    child.stdin.close()
    child.wait()
    return wall, cpu


async def adapter_turns(argv: list[str], turns: int) -> tuple[float, float]:
    """band-trio-codex: (wall, CPU) seconds for ``turns`` turns."""
    adapter = CodexAdapter(CodexConfig(command=argv))
    process = CodexProcess(
        "bench",
        argv,
        dict(os.environ),
        None,
        request_timeout=30,
        max_line_bytes=1 << 20,
        event_buffer=256,
    )
    await process.open()
    await process.request("initialize", {"clientInfo": {"name": "bench", "version": "0"}})
    process.thread_id = (await process.request("thread/start", {}))["thread"]["id"]
    anchor = UsageAnchor(known_total=True)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(turns):
        turn = CodexTurn(adapter, None, process, anchor)  # type: ignore[arg-type]
        outcome = await turn.run([{"type": "text", "text": "hi"}], 30)
        assert outcome.status == "completed"
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await process.close(5)
    return wall, cpu


async def idle_memory(argv: list[str], rooms: int, *, thread: bool = True) -> dict[str, float]:
    """RSS per idle room with a live app-server, and with it closed (KiB)."""
    before = _rss_kib()
    processes = []
    for index in range(rooms):
        process = CodexProcess(
            f"room-{index}",
            argv,
            dict(os.environ),
            None,
            request_timeout=30,
            max_line_bytes=1 << 20,
            event_buffer=256,
        )
        await process.open()
        await process.request("initialize", {"clientInfo": {"name": "bench", "version": "0"}})
        if thread:
            process.thread_id = (await process.request("thread/start", {}))["thread"]["id"]
        processes.append(process)
    live_self = _rss_kib() - before
    children = sum(_tree_rss_kib(p.pid) for p in processes if p.pid is not None)
    async with trio.open_nursery() as nursery:
        for process in processes:
            nursery.start_soon(process.close, 5.0)
    closed_self = _rss_kib() - before
    return {
        "live_agent_kib_per_room": live_self / rooms,
        "live_child_kib_per_room": children / rooms,
        "closed_agent_kib_per_room": closed_self / rooms,
        "closed_child_kib_per_room": 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--rooms", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--codex", type=Path, help="also measure live rooms of this real codex (initialized)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-codex-") as tmp:
        argv = _script(Path(tmp))
        raw = min((raw_turns(argv, args.turns) for _ in range(args.repeat)), key=lambda r: r[0])
        ours = min(
            (trio.run(adapter_turns, argv, args.turns) for _ in range(args.repeat)),
            key=lambda r: r[0],
        )
        memory = trio.run(idle_memory, argv, args.rooms)
        if args.codex is not None:
            home = Path(tmp) / "codex-home"
            home.mkdir()
            os.environ["CODEX_HOME"] = str(home)
            real = trio.run(
                functools.partial(idle_memory, thread=False),
                [str(args.codex), "app-server"],
                args.rooms,
            )
            memory["real_codex_child_kib_per_room"] = real["live_child_kib_per_room"]
            memory["real_codex_agent_kib_per_room"] = real["live_agent_kib_per_room"]
    result = {
        "python": py_platform.python_version(),
        "turns": args.turns,
        "rooms": args.rooms,
        "raw_ms_per_turn": 1000 * raw[0] / args.turns,
        "adapter_ms_per_turn": 1000 * ours[0] / args.turns,
        "raw_cpu_ms_per_turn": 1000 * raw[1] / args.turns,
        "adapter_cpu_ms_per_turn": 1000 * ours[1] / args.turns,
        "wall_ratio": ours[0] / raw[0],
        "cpu_ratio": ours[1] / raw[1] if raw[1] else None,
        **memory,
    }
    print(json.dumps(result, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
