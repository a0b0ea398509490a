"""``band-trio demo``: the whole conversation runs offline and exits 0."""

from __future__ import annotations

import io
import sys

import pytest
import trio

from band_trio.demo import DEMO_MESSAGES, run_demo


async def test_demo_runs_a_conversation_and_succeeds() -> None:
    out = io.StringIO()
    with trio.fail_after(30):
        status = await run_demo(out=out)
    text = out.getvalue()
    assert status == 0, text
    for line in DEMO_MESSAGES:
        assert line in text
    # Every human line is followed by the agent's answer quoting it.
    assert text.count("You said:") == len(DEMO_MESSAGES)
    assert f"{len(DEMO_MESSAGES)} of {len(DEMO_MESSAGES)} messages answered" in text


async def test_demo_reports_failure_when_no_answer_comes() -> None:
    out = io.StringIO()
    with trio.fail_after(30):
        status = await run_demo(messages=("one",), out=out, reply_timeout=0.0)
    assert status == 1


@pytest.mark.slow
async def test_band_trio_demo_command_exits_zero() -> None:
    """The first command of the README, as a real process."""
    with trio.fail_after(60):
        result = await trio.run_process(
            [sys.executable, "-m", "band_trio.cli", "demo"],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    out = result.stdout.decode()
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert f"{len(DEMO_MESSAGES)} of {len(DEMO_MESSAGES)} messages answered" in out
