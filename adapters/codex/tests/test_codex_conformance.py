"""CodexAdapter passes the conformance kit against the fake app-server.

The kit plays each scenario in one ``trio.run`` under a virtual clock; the
app-server is a real child process (the fake, ``fake_codex.py``), answering
every turn with one ``band_send_message`` call mentioning the sender. Virtual
time jumps only once every task was blocked for ``AUTOJUMP`` real seconds,
longer than the fake takes to start or to answer, so its work takes no
virtual time and the kit's timeouts stay meaningful.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from band_trio_codex import CodexAdapter
from codex_support import FakeCodex
from hypothesis import HealthCheck, settings

from band_trio.testing.conformance import AdapterConformance, RunOptions

AUTOJUMP = 1.0
"""Real seconds every task must be blocked before virtual time jumps."""
PROFILE = "band-conformance-codex-fake"

settings.register_profile(
    PROFILE,
    max_examples=4,
    deadline=timedelta(minutes=2),
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class TestCodexAdapterConformance(AdapterConformance):
    profile = PROFILE

    @pytest.fixture(autouse=True)
    def _fake(self, tmp_path: Path) -> Iterator[None]:
        self.fake = FakeCodex(tmp_path)
        self.fake.script(default=[{"answer_sender": "Heard you."}])
        yield
        # The scenarios really ran on the fake app-server, and its replies went out.
        assert self.fake.received("turn/start")
        answers = self.fake.answers()
        assert answers
        assert any(answer["result"]["success"] for answer in answers)

    def make_adapter(self) -> CodexAdapter:
        return CodexAdapter(self.fake.config(close_timeout=1.0, interrupt_timeout=1.0))

    def make_options(self) -> RunOptions:
        return RunOptions(autojump_threshold=AUTOJUMP, block_threshold=1.0)
