"""``band-trio demo``: the whole conversation runs offline and exits 0."""

from __future__ import annotations

import io

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
