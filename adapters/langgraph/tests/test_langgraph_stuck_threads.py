"""The adapter reports its bridge's stuck threads to the agent
(``band_trio.adapter.ReportsStuckThreads``), so they reach the statistics and
the ``band_trio_adapter_stuck_threads`` metric."""

from __future__ import annotations

from band_trio_langgraph import LangGraphAdapter
from band_trio_langgraph.testing import ScriptedChatModel

from band_trio.adapter import ReportsStuckThreads


def test_the_adapter_reports_its_bridges_stuck_threads() -> None:
    adapter = LangGraphAdapter(model=ScriptedChatModel(script=["hello"]))
    assert isinstance(adapter, ReportsStuckThreads)
    assert adapter.stuck_threads() == adapter.bridge.statistics().stuck_threads == 0
