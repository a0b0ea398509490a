"""What a room's thread keeps: one checkpoint, and a budget of messages.

Two bounds keep a room's memory, and the CPU of its turns, flat as its
history grows:

* :class:`LatestCheckpointSaver`, the adapter's default checkpointer, keeps
  one checkpoint per thread (below);
* :func:`trim_plan`: once a turn leaves the thread with more messages than
  ``LangGraphAdapterConfig.max_thread_messages``, the next turn removes the
  oldest ones (``RemoveMessage``), cutting just before a human message so
  that every tool call keeps its result. A leading system message stays.

LangGraph's ``InMemorySaver`` keeps every checkpoint of a thread, each with a
full copy of every channel it changed: a room's ``messages`` list is stored
again at every super-step, so the saver grows with the square of the room's
history. A room's turns only ever continue its latest checkpoint, so this
saver keeps that one alone (with its pending writes and the channel values it
references) and drops the rest as soon as a newer one is stored.

Not kept by the saver: the history LangGraph's time travel reads
(``get_state_history``, resuming from an older ``checkpoint_id``). A thread
whose graph uses LangGraph's ``DeltaChannel`` (which rebuilds a value from its
ancestors' writes) keeps its ancestors until the channel stores a full
snapshot again. Give the adapter any other checkpointer to keep everything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import add_messages

__all__ = ["LatestCheckpointSaver", "trim_plan", "trims_messages"]

_DELTA_COUNTERS = "counters_since_delta_snapshot"


class LatestCheckpointSaver(InMemorySaver):
    """An in-memory checkpointer that keeps only the latest checkpoint of each
    thread (and namespace); see the module docs."""

    def __init__(self) -> None:
        super().__init__()
        # (thread, ns) -> channel -> versions with a stored value.
        self._versions: defaultdict[tuple[str, str], defaultdict[str, set[Any]]] = defaultdict(
            lambda: defaultdict(set)
        )
        # (thread, ns) -> checkpoint ids with stored writes.
        self._written: defaultdict[tuple[str, str], set[str]] = defaultdict(set)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint``, then drop the thread's older checkpoints."""
        saved = super().put(config, checkpoint, metadata, new_versions)
        thread_id = str(config["configurable"]["thread_id"])
        namespace = str(config["configurable"].get("checkpoint_ns", ""))
        key = (thread_id, namespace)
        versions = self._versions[key]
        for channel, version in new_versions.items():
            versions[channel].add(version)
        if not metadata.get(_DELTA_COUNTERS):
            self._keep_only(key, checkpoint)
        return saved

    def _keep_only(self, key: tuple[str, str], checkpoint: Checkpoint) -> None:
        thread_id, namespace = key
        latest = checkpoint["id"]
        stored = self.storage[thread_id][namespace]
        for checkpoint_id in [c for c in stored if c != latest]:
            del stored[checkpoint_id]
        written = self._written[key]
        for checkpoint_id in [c for c in written if c != latest]:
            self.writes.pop((thread_id, namespace, checkpoint_id), None)
            written.discard(checkpoint_id)
        current = checkpoint["channel_versions"]
        for channel, versions in self._versions[key].items():
            keep = current.get(channel)
            for version in [v for v in versions if v != keep]:
                self.blobs.pop((thread_id, namespace, channel, version), None)
                versions.discard(version)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes (kept while their checkpoint is the latest)."""
        super().put_writes(config, writes, task_id, task_path)
        configurable = config["configurable"]
        key = (str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", "")))
        self._written[key].add(str(configurable["checkpoint_id"]))

    def delete_thread(self, thread_id: str) -> None:
        """Forget everything stored for ``thread_id``."""
        super().delete_thread(thread_id)
        for key in [k for k in self._versions if k[0] == thread_id]:
            del self._versions[key]
        for key in [k for k in self._written if k[0] == thread_id]:
            del self._written[key]

    def stored_bytes(self) -> int:
        """The serialized size of everything stored (checkpoints, writes, values)."""
        total = sum(len(blob) for _, blob in self.blobs.values())
        for namespaces in self.storage.values():
            for checkpoints in namespaces.values():
                for (_, data), (_, meta), _parent in checkpoints.values():
                    total += len(data) + len(meta)
        for writes in self.writes.values():
            total += sum(len(value[1]) for _task, _channel, value, _path in writes.values())
        return total

    def checkpoint_count(self) -> int:
        """Checkpoints stored, over every thread and namespace."""
        return sum(len(c) for namespaces in self.storage.values() for c in namespaces.values())


def trims_messages(graph: object) -> bool:
    """True when ``graph``'s ``messages`` channel merges with ``add_messages``
    (so a ``RemoveMessage`` removes a message rather than being appended)."""
    channels = getattr(graph, "channels", None)
    channel = channels.get("messages") if isinstance(channels, dict) else None
    return getattr(channel, "operator", None) is add_messages


def trim_plan(messages: Sequence[BaseMessage], budget: int) -> list[RemoveMessage]:
    """The removals that bring ``messages`` within ``budget`` (see the module docs).

    The kept tail starts at the first human message from which at most
    ``budget`` messages remain; a leading system message is kept besides. No
    such message (one turn longer than the budget): nothing is removed.
    """
    if len(messages) <= budget:
        return []
    start = 1 if isinstance(messages[0], SystemMessage) else 0
    for cut in range(max(len(messages) - budget, start + 1), len(messages)):
        if isinstance(messages[cut], HumanMessage):
            return [RemoveMessage(id=m.id) for m in messages[start:cut] if m.id]
    return []
