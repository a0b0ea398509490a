"""Every file a tutorial page shows is whole, and runs as a reader would run it.

A page includes a file of ``examples/`` (or of an adapter's ``examples/``)
entirely, never a fragment of it, so the reader can copy it and run it. Each
such file is copied here into a scratch project outside the clone and run
with this project's Python as a separate process: a script that brings its own
embedded platform runs to its end; the echo agent is served against a local
platform and stopped by its pid; the testing tutorial's test file runs under
pytest with the ``pytest.ini`` the page shows, and nothing else.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from band_trio import HumanClient
from band_trio.local import LocalPlatform

REPO = Path(__file__).resolve().parent.parent
TUTORIAL = REPO / "docs" / "tutorial"
EXAMPLES = REPO / "examples"

WHOLE_FILE_OPTIONS = {"language", "caption", "linenos", "emphasize-lines", "class", "name"}
"""Options of ``literalinclude`` that show the file whole."""

SELF_CONTAINED = {
    # script: patterns of lines its output holds (it starts its own platform)
    EXAMPLES / "embedding.py": [
        re.escape("Echo: You said: @demo/echo @demo/shout hello agents"),
        re.escape("Shout: @DEMO/ECHO @DEMO/SHOUT HELLO AGENTS"),
        "serve returned at once after cancel",
        "stuck message: processing",
    ],
    EXAMPLES / "claude_agent.py": [
        "Demo User: @demo/claude please keep it short",
        re.escape("Claude: @demo Noted: I will keep my answers short."),
        re.escape("memory: Prefers short answers."),
    ],
    REPO / "adapters" / "langgraph" / "examples" / "scripted_agent.py": [
        re.escape("Demo User: @demo/langgraph what is LangGraph?"),
        re.escape(
            "LangGraph: @demo Hello Demo User! You asked: @demo/langgraph what is LangGraph?"
        ),
    ],
    REPO / "adapters" / "pydantic_ai" / "examples" / "function_model_agent.py": [
        re.escape("Demo User: @demo/pydanticai what is pydantic-ai?"),
        re.escape(
            "PydanticAI: @demo Hello Demo User! You asked: @demo/pydanticai what is pydantic-ai?"
        ),
    ],
}
CODEX_EXAMPLE = REPO / "adapters" / "codex" / "examples" / "scripted_codex.py"
"""Self-contained too, but it drives the real ``codex`` command a reader installs."""
CODEX_EXAMPLE_LINES = [r".*: .*hello!", r"Codex: .*Hello from Codex!"]
ECHO_AGENT = EXAMPLES / "echo_agent.py"
TESTING_FILES = [EXAMPLES / "test_echo_adapter.py", EXAMPLES / "pytest.ini"]


def includes() -> list[tuple[Path, Path, set[str]]]:
    """(page, included file, options) of every ``literalinclude`` of the tutorial."""
    found = []
    pattern = re.compile(r"^\.\. literalinclude:: (\S+)\n((?:   :[^\n]*\n)*)", re.MULTILINE)
    for page in sorted(TUTORIAL.glob("*.rst")):
        for match in pattern.finditer(page.read_text(encoding="utf-8")):
            options = set(re.findall(r"^   :([\w-]+):", match.group(2), re.MULTILINE))
            found.append((page, (page.parent / match.group(1)).resolve(), options))
    return found


def runnable_includes() -> set[Path]:
    """The included files that are code or configuration a reader runs."""
    return {path for _, path, _ in includes() if path.suffix in {".py", ".ini"}}


def test_the_tutorial_includes_files() -> None:
    assert ECHO_AGENT in runnable_includes()


def test_a_tutorial_page_includes_each_file_whole() -> None:
    fragments = [
        f"{page.name}: {path.name} with :{', :'.join(sorted(options - WHOLE_FILE_OPTIONS))}:"
        for page, path, options in includes()
        if options - WHOLE_FILE_OPTIONS
    ]
    assert fragments == []


def test_every_file_the_tutorial_includes_is_run_from_a_scratch_project() -> None:
    run_here = {*SELF_CONTAINED, CODEX_EXAMPLE, ECHO_AGENT, *TESTING_FILES}
    assert runnable_includes() == run_here


def test_the_testing_page_shows_the_pytest_configuration() -> None:
    page = (TUTORIAL / "testing.rst").read_text(encoding="utf-8")
    assert ".. literalinclude:: ../../examples/pytest.ini" in page
    assert "trio_mode = true" in (EXAMPLES / "pytest.ini").read_text(encoding="utf-8")


def scratch_project(tmp_path: Path, *files: Path) -> Path:
    """A folder outside the clone holding copies of ``files``, as a reader's."""
    project = tmp_path / "project"
    project.mkdir()
    for file in files:
        shutil.copy(file, project / file.name)
    return project


def names_in(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def reader_env() -> dict[str, str]:
    """The environment of a reader's shell: nothing points into the clone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BAND_", "PYTEST_"))}
    env.pop("PYTHONPATH", None)
    return env


async def run(
    command: list[str], cwd: Path, deadline: float, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run ``command`` to its end (killed by its pid past ``deadline``)."""
    with trio.fail_after(deadline):
        done = await trio.run_process(
            command,
            cwd=cwd,
            env=reader_env() if env is None else env,
            capture_stdout=True,
            stderr=subprocess.STDOUT,
            check=False,
        )
    return done.returncode, done.stdout.decode(errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SELF_CONTAINED), ids=lambda p: str(p.relative_to(REPO)))
async def test_a_self_contained_tutorial_script_runs_from_a_scratch_project(
    script: Path, tmp_path: Path
) -> None:
    project = scratch_project(tmp_path, script)
    returncode, output = await run([sys.executable, script.name], project, deadline=120)
    assert returncode == 0, output
    lines = output.splitlines()
    for expected in SELF_CONTAINED[script]:
        assert any(re.fullmatch(expected, line) for line in lines), (expected, output)


@pytest.mark.slow
async def test_the_codex_tutorial_script_runs_from_a_scratch_project(tmp_path: Path) -> None:
    """As a reader who installed codex runs it: ``codex`` on ``PATH``. Skipped
    where node or codex is missing, an error where ``BAND_REQUIRE_CODEX`` is set
    (as ``.ci/run`` does), as for the Codex adapter's own real-binary tests."""
    codex = os.environ.get("BAND_CODEX") or shutil.which("codex")
    if not codex or shutil.which("node") is None:
        missing = "the Codex tutorial's script needs node and codex (npm install @openai/codex)"
        if os.environ.get("BAND_REQUIRE_CODEX", "").strip() not in ("", "0"):
            pytest.fail(missing)
        pytest.skip(missing)
    env = reader_env()
    env["PATH"] = os.pathsep.join([str(Path(codex).parent), env.get("PATH", "")])
    project = scratch_project(tmp_path, CODEX_EXAMPLE)
    returncode, output = await run(
        [sys.executable, CODEX_EXAMPLE.name], project, deadline=180, env=env
    )
    assert returncode == 0, output
    lines = output.splitlines()
    for expected in CODEX_EXAMPLE_LINES:
        assert any(re.fullmatch(expected, line) for line in lines), (expected, output)


@pytest.mark.slow
async def test_the_testing_tutorial_passes_under_pytest_in_a_scratch_project(
    tmp_path: Path,
) -> None:
    project = scratch_project(tmp_path, ECHO_AGENT, *TESTING_FILES)
    returncode, output = await run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], project, deadline=300
    )
    assert returncode == 0, output
    assert "3 passed" in output


@pytest.mark.slow
async def test_the_echo_agent_runs_from_a_scratch_project_and_stops_on_sigterm(
    band_platform: LocalPlatform, tmp_path: Path
) -> None:
    project = scratch_project(tmp_path, ECHO_AGENT)
    creds = band_platform.agents[0]
    env = {
        **reader_env(),
        **band_platform.agent_env(creds),
        "BAND_STATE_DIR": str(tmp_path / "state"),
        "BAND_SHUTDOWN_TIMEOUT": "5",
    }
    async with HumanClient(
        base_url=band_platform.rest_url, api_key=band_platform.user.api_key
    ) as human:
        room = await human.create_room("echo process")
        await human.add_participant(room["id"], creds.id)
        proc = await trio.lowlevel.open_process(
            [sys.executable, ECHO_AGENT.name],
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            sent = await human.post_message(room["id"], "hello process", [creds.handle])
            state = band_platform.state.rooms[room["id"]]

            def processed() -> bool:
                delivery = state.by_id[sent["id"]].deliveries.get(creds.id)
                return delivery is not None and str(delivery.status) == "processed"

            with trio.fail_after(60):
                await band_platform.wait_for(processed)
            os.kill(proc.pid, signal.SIGTERM)
            with trio.fail_after(30):
                returncode = await proc.wait()
        finally:
            if proc.returncode is None:
                os.kill(proc.pid, signal.SIGKILL)
            with trio.CancelScope(shield=True):
                await proc.wait()
    assert returncode == 0
    replies = [m.content for m in state.messages if m.sender_id == creds.id]
    assert replies == [f"@[[{band_platform.user.id}]] You said: @demo/echo hello process"]
    # BAND_STATE_DIR from the environment chose where the ledger lives.
    assert names_in(tmp_path) == ["project", "state"]
