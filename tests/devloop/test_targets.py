"""What a dev TARGET names: parsing, importing, finding the agent, building it."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from band_trio import Agent, SimpleAdapter
from band_trio.devloop.child import describe_load_error
from band_trio.devloop.targets import (
    TargetError,
    TargetKind,
    build_agent,
    import_target,
    parse_target,
    resolve_target,
    user_source_files,
)

ADAPTER = """
from band_trio import SimpleAdapter

class Echo(SimpleAdapter):
    async def on_message(self, msg, tools, history, participants_msg, contacts_msg,
                         *, is_session_bootstrap, room_id):
        await tools.send_message(msg.content, [msg.sender_id])
"""


@pytest.fixture(autouse=True)
def isolated_imports() -> Iterator[None]:
    """Imports of user code made by a test are forgotten after it."""
    modules, path = set(sys.modules), list(sys.path)
    yield
    for name in set(sys.modules) - modules:
        del sys.modules[name]
    sys.path[:] = path


def write(directory: Path, name: str, source: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(source))
    return path


def load(spec: str) -> Any:
    target = parse_target(spec)
    return resolve_target(import_target(target), target.attribute)


def fake_agent(adapter: object) -> Any:
    return ("agent for", adapter)


# --------------------------------------------------------------------------- parsing


def test_a_py_file_with_and_without_a_name(tmp_path: Path) -> None:
    file = tmp_path / "bot.py"
    target = parse_target(f"{file}:Echo")
    assert (target.path, target.module, target.attribute) == (file, None, "Echo")
    assert target.root == tmp_path
    assert target.default_name == "Echo"
    plain = parse_target(str(file))
    assert (plain.path, plain.attribute, plain.default_name) == (file, None, "bot")


def test_a_relative_file_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    target = parse_target("agents/bot.py")
    assert target.path == tmp_path / "agents" / "bot.py"
    assert target.root == tmp_path / "agents"


def test_a_module_with_and_without_a_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    target = parse_target("pkg.agents:build")
    assert (target.path, target.module, target.attribute) == (None, "pkg.agents", "build")
    assert target.root == tmp_path
    assert parse_target("pkg.agents").default_name == "agents"


@pytest.mark.parametrize("spec", ["", ":x", "bot.py:not-a-name", "not a module", "a..b"])
def test_malformed_targets_are_refused(spec: str) -> None:
    with pytest.raises(TargetError):
        parse_target(spec)


# --------------------------------------------------------------------------- finding


def test_an_adapter_class_defined_in_the_file_is_found(tmp_path: Path) -> None:
    resolved = load(str(write(tmp_path, "echo.py", ADAPTER)))
    assert (resolved.kind, resolved.name) == (TargetKind.ADAPTER_CLASS, "Echo")


def test_an_imported_or_abstract_class_is_not_a_candidate(tmp_path: Path) -> None:
    write(tmp_path, "base.py", ADAPTER)
    path = write(tmp_path, "main.py", "from base import Echo\n")
    with pytest.raises(TargetError, match="defines no adapter"):
        load(str(path))


def test_a_module_level_adapter_instance_wins_over_its_class(tmp_path: Path) -> None:
    path = write(tmp_path, "bot.py", ADAPTER + "\nbot = Echo()\n")
    resolved = load(str(path))
    assert (resolved.kind, resolved.name) == (TargetKind.ADAPTER, "bot")
    assert isinstance(resolved.obj, SimpleAdapter)


def test_a_conventional_factory_wins_over_a_class(tmp_path: Path) -> None:
    path = write(tmp_path, "bot.py", ADAPTER + "\ndef create_adapter():\n    return Echo()\n")
    resolved = load(str(path))
    assert (resolved.kind, resolved.name) == (TargetKind.FUNCTION, "create_adapter")


def test_a_module_level_agent_wins_over_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "BAND_AGENT_ID": "a1",
        "BAND_API_KEY": "k",
        "BAND_REST_URL": "http://127.0.0.1:9",
        "BAND_WS_URL": "ws://127.0.0.1:9/ws",
    }.items():
        monkeypatch.setenv(name, value)
    source = ADAPTER + "\nfrom band_trio import Agent\nagent = Agent.create(adapter=Echo())\n"
    resolved = load(str(write(tmp_path, "bot.py", source + "bot = Echo()\n")))
    assert (resolved.kind, resolved.name) == (TargetKind.AGENT, "agent")


def test_several_candidates_of_one_kind_are_listed(tmp_path: Path) -> None:
    source = ADAPTER + "\nclass Other(Echo):\n    pass\n"
    with pytest.raises(TargetError, match=r"several adapter classes \(Echo, Other\)"):
        load(str(write(tmp_path, "two.py", source)))
    assert load(f"{tmp_path / 'two.py'}:Other").name == "Other"


def test_a_named_attribute_of_no_usable_kind_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "bot.py", ADAPTER + "\nNUMBER = 3\n")
    with pytest.raises(TargetError, match="is a int"):
        load(f"{path}:NUMBER")
    with pytest.raises(TargetError, match="no attribute 'Missing'"):
        load(f"{path}:Missing")


def test_a_module_target_imports_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mypkg").mkdir()
    write(tmp_path / "mypkg", "__init__.py", "")
    write(tmp_path / "mypkg", "bots.py", ADAPTER)
    monkeypatch.chdir(tmp_path)
    resolved = load("mypkg.bots:Echo")
    assert resolved.kind is TargetKind.ADAPTER_CLASS
    with pytest.raises(TargetError, match=r"no module named 'mypkg\.nothing'"):
        load("mypkg.nothing")


def test_a_file_named_like_an_imported_module_does_not_shadow_it(tmp_path: Path) -> None:
    path = write(tmp_path, "trio.py", ADAPTER)
    import trio

    load(str(path))
    assert sys.modules["trio"] is trio


def test_a_missing_file_is_a_target_error(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="no such file"):
        load(str(tmp_path / "nope.py"))


# --------------------------------------------------------------------------- building


async def test_an_adapter_class_is_instantiated_and_wrapped(tmp_path: Path) -> None:
    resolved = load(str(write(tmp_path, "echo.py", ADAPTER)))
    built = await build_agent(resolved, make_agent=fake_agent)
    assert built[0] == "agent for"
    assert type(built[1]).__name__ == "Echo"


async def test_an_async_factory_is_awaited(tmp_path: Path) -> None:
    source = ADAPTER + "\nasync def make_adapter():\n    return Echo()\n"
    resolved = load(str(write(tmp_path, "bot.py", source)))
    built = await build_agent(resolved, make_agent=fake_agent)
    assert type(built[1]).__name__ == "Echo"


async def test_an_agent_building_function_is_served_as_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = ADAPTER + textwrap.dedent(
        """
        from band_trio import Agent
        def build_agent():
            return Agent.create(adapter=Echo(), agent_id="a1", api_key="k",
                                rest_url="http://127.0.0.1:9", ws_url="ws://127.0.0.1:9/ws")
        """
    )
    resolved = load(str(write(tmp_path, "bot.py", source)))
    built = await build_agent(resolved, make_agent=fake_agent)
    assert isinstance(built, Agent)
    assert built.runtime.agent_id == "a1"


async def test_a_factory_needing_arguments_says_so(tmp_path: Path) -> None:
    source = ADAPTER + "\ndef create_adapter(model):\n    return Echo()\n"
    resolved = load(str(write(tmp_path, "bot.py", source)))
    with pytest.raises(TargetError, match=r"needs arguments \(model\)"):
        await build_agent(resolved, make_agent=fake_agent)


async def test_a_factory_returning_something_else_says_what(tmp_path: Path) -> None:
    source = ADAPTER + "\ndef create_adapter():\n    return 42\n"
    resolved = load(str(write(tmp_path, "bot.py", source)))
    with pytest.raises(TargetError, match=r"create_adapter\(\) returned a int"):
        await build_agent(resolved, make_agent=fake_agent)


# --------------------------------------------------------------------------- errors, files


def test_a_syntax_error_is_described_with_its_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.py", "x = 1\ndef oops(:\n")
    with pytest.raises(SyntaxError) as info:
        load(str(path))
    text = describe_load_error(info.value)
    assert str(path) in text
    assert "line 2" in text
    assert "SyntaxError" in text
    assert "importlib" not in text
    assert "band_trio/devloop" not in text


def test_an_import_error_shows_the_users_frames_only(tmp_path: Path) -> None:
    path = write(tmp_path, "needy.py", "import helper_that_is_missing\n")
    with pytest.raises(ImportError) as info:
        load(str(path))
    text = describe_load_error(info.value)
    assert text.startswith("Traceback")
    assert f'File "{path}", line 1' in text
    assert "ModuleNotFoundError: No module named 'helper_that_is_missing'" in text
    assert "band_trio/devloop" not in text


def test_a_target_error_is_its_message_alone() -> None:
    assert describe_load_error(TargetError("no adapter here")) == "no adapter here"


def test_user_source_files_are_the_loaded_modules_under_the_root(tmp_path: Path) -> None:
    write(tmp_path, "helper.py", "VALUE = 1\n")
    path = write(tmp_path, "bot.py", "import helper\n" + ADAPTER)
    load(str(path))
    files = user_source_files(tmp_path, [str(tmp_path / "never_written.py")])
    assert files == sorted([str(tmp_path / "bot.py"), str(tmp_path / "helper.py")])
