"""The agent of ``benchmarks/bench_soak.py``: an echo agent that reports its size.

It answers every message with ``echo: <content>`` (like
``band_trio_echo_agent.py``) and reads commands on stdin, one per line:

* ``measure``: print one JSON line with what the soak watches for growth:
  resident memory (as is, and after handing free heap back to the system),
  memory blocks and arenas Python's allocator holds (and the arenas it has
  given back), open file descriptors, the ledger's files on disk, live Python
  objects, and the size of every per-room table the agent keeps (rooms,
  Phoenix topics, the claims state's tables, held messages);
* ``mark``: a measurement point was taken: the peak below starts again;
* ``quit`` (or end of input): shut down gracefully and exit.

When Python traces allocations (``PYTHONTRACEMALLOC=1``), ``measure`` also
reports the traced memory now and its peak since the last ``mark``: the
allocator keeps the arenas a peak needed, so a peak that grows from cycle to
cycle shows in resident memory even when nothing stays alive. With
``BAND_SOAK_PEAK_SITES=1`` as well, the agent snapshots its allocations
whenever a new peak is reached, and ``measure`` names the allocation sites
that held the most at that peak beyond what they hold now (the snapshots are
themselves Python objects: compare peaks, not blocks or RSS, in that mode).

It prints ``READY`` once the agent is connected. The per-room tables are read
from private attributes: this is a measurement probe, not an example of the
public API. Configuration comes from the environment, as for the echo peer.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
import os
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import trio

from band_trio import Agent, AgentConfig
from band_trio.adapter import AgentToolsProtocol, HistoryProvider, PlatformMessage, SimpleAdapter


class EchoAdapter(SimpleAdapter[HistoryProvider]):
    """Answers each message with ``echo: <content>`` to its sender."""

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: HistoryProvider,
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        await tools.send_message(f"echo: {msg.content}", [msg.sender_id])


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def _ledger_bytes(state_dir: Path) -> dict[str, int]:
    """Sizes of the ledger's files (database, WAL, shared memory)."""
    return {
        p.name: p.stat().st_size for p in sorted(state_dir.rglob("ledger.sqlite3*")) if p.is_file()
    }


def _tables(agent: Agent) -> dict[str, int]:
    engine: Any = agent._engine
    if engine is None:
        return {}
    claims: Any = engine._svc.ledger._state
    link: Any = agent._link
    sizes = {
        "rooms": len(engine._rooms),
        "held_synthetic": sum(len(v) for v in engine._held_synthetic.values()),
        "claims_in_flight": len(claims._in_flight),
        "claims_attempts": len(claims._attempts),
        "claims_replies": len(claims._replies),
        "claims_intents": len(claims._intents),
        "claims_acks": len(claims._acks),
        "claims_ack_failures": len(claims._ack_failures),
        "claims_completed": sum(len(t) for t in claims._completed.values()),
        "claims_failed": sum(len(t) for t in claims._failed.values()),
        "claims_known_replies": sum(len(t) for t in claims._known.values()),
        "claims_rooms": len(set(claims._completed) | set(claims._known) | set(claims._failed)),
    }
    if link is not None:
        sizes["phoenix_topics"] = len(link._proto._topics)
        sizes["join_waiters"] = len(link._join_waiters) + len(link._leave_waiters)
    return sizes


def _type_counts() -> dict[str, int]:
    """Live objects per type (``BAND_SOAK_TYPES=1``: to find what grows)."""
    counts: dict[str, int] = {}
    for obj in gc.get_objects():
        name = type(obj).__qualname__
        counts[name] = counts.get(name, 0) + 1
    return counts


def _arenas() -> tuple[int, int]:
    """pymalloc arenas (1 MiB each) in use now, and how many it has given back
    since start, from ``sys._debugmallocstats``, which writes to the C-level
    stderr: it is caught in a temporary file. (-1, -1) when pymalloc is not
    the allocator in use (``PYTHONMALLOC``, or allocation tracing)."""
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        counts: dict[str, int] = {}
        for line in out.read().decode(errors="replace").splitlines():
            for key in ("# arenas allocated current", "# arenas reclaimed"):
                if line.startswith(key):
                    counts[key] = int(line.split("=")[1].strip().replace(",", ""))
    return (
        counts.get("# arenas allocated current", -1),
        counts.get("# arenas reclaimed", -1),
    )


def _trim_heap() -> None:
    """Hand free heap memory back to the system (glibc), so that RSS shows
    what is live rather than the high-water mark of an earlier burst."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: left untrimmed
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class PeakWatch:
    """The traced peak since the last mark, and what held it (when asked)."""

    def __init__(self) -> None:
        self.sites = bool(os.environ.get("BAND_SOAK_PEAK_SITES"))
        self._best = 0
        self._snapshot: tracemalloc.Snapshot | None = None

    async def watch(self) -> None:
        """Snapshot the allocations at each new peak (sampled every 0.1 s)."""
        while True:
            await trio.sleep(0.1)
            current, _ = tracemalloc.get_traced_memory()
            if current > self._best:
                self._best = current
                self._snapshot = None  # let the old one go before taking the next
                self._snapshot = tracemalloc.take_snapshot()

    def report(self) -> dict[str, Any]:
        current, peak = tracemalloc.get_traced_memory()
        out: dict[str, Any] = {"traced_kib": current // 1024, "traced_peak_kib": peak // 1024}
        if self._snapshot is not None:
            now = tracemalloc.take_snapshot()
            top = self._snapshot.compare_to(now, "lineno")[:15]
            out["peak_sites"] = [
                f"{d.size_diff // 1024} KiB in {d.count_diff} blocks: "
                f"{d.traceback[0].filename}:{d.traceback[0].lineno}"
                for d in top
            ]
        return out

    def mark(self) -> None:
        tracemalloc.reset_peak()
        self._best = 0
        self._snapshot = None


def measure(agent: Agent, state_dir: Path, peaks: PeakWatch | None) -> dict[str, Any]:
    gc.collect()
    rss = _status_kib("VmRSS")
    _trim_heap()
    arenas, reclaimed = _arenas()
    return {
        "rss_kib": rss,
        "rss_trimmed_kib": _status_kib("VmRSS"),
        "py_blocks": sys.getallocatedblocks(),
        "py_arenas": arenas,
        "py_arenas_reclaimed": reclaimed,
        "fds": len(os.listdir("/proc/self/fd")),
        "ledger_bytes": _ledger_bytes(state_dir),
        "gc_objects": len(gc.get_objects()),
        "gc_types": _type_counts() if os.environ.get("BAND_SOAK_TYPES") else {},
        "tables": _tables(agent),
        "peak": peaks.report() if peaks is not None else {},
    }


async def _within(scope: trio.CancelScope, run: Any) -> None:
    with scope:
        await run()


async def main() -> None:
    config = AgentConfig.from_env()
    state_dir = Path(os.environ["BAND_STATE_DIR"])
    agent = Agent.create(adapter=EchoAdapter(), config=config)
    peaks = PeakWatch() if tracemalloc.is_tracing() else None
    async with trio.open_nursery() as nursery:
        await nursery.start(agent.serve)
        watching = trio.CancelScope()
        if peaks is not None and peaks.sites:
            nursery.start_soon(_within, watching, peaks.watch)
        print("READY", flush=True)
        stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        pending = b""
        while True:
            data = await stdin.receive_some()
            if not data:
                break
            pending += data
            lines = pending.split(b"\n")
            pending = lines.pop()
            if b"quit" in lines:
                break
            for line in lines:
                if line.strip() == b"measure":
                    print(json.dumps(measure(agent, state_dir, peaks)), flush=True)
                elif line.strip() == b"mark" and peaks is not None:
                    peaks.mark()
        watching.cancel()
        agent.request_shutdown()


if __name__ == "__main__":
    logging.basicConfig(
        level=os.environ.get("BAND_ECHO_LOG_LEVEL", "WARNING"),
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    trio.run(main)
