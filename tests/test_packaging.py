"""Packaging: the embedded local platform is the optional extra ``band-trio[local]``.

An agent-only install (``pip install band-trio``) has no Hypercorn. These tests
recreate that install with the current interpreter: each subprocess starts with
a ``sitecustomize`` (first on ``PYTHONPATH``) that hides Hypercorn from the
site-packages, then checks that everything an agent touches works and that every
way into the local platform fails with one clear error naming the fix.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import sysconfig
import textwrap
import tomllib
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio

import band_trio
from band_trio.errors import BandError, MissingExtraError

ROOT = Path(__file__).resolve().parent.parent
HINT = "pip install 'band-trio[local]'"
DEADLINE = 60.0
ONLY_FOR_THE_EXTRA = frozenset({"hypercorn", "h2", "hpack", "hyperframe", "priority"})
"""What ``band-trio[local]`` adds to an agent-only install (see uv.lock)."""


@pytest.fixture(scope="module")
def no_extra(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a subprocess in which ``hypercorn`` is not installed.

    The interpreter's site-packages is swapped (by a ``sitecustomize``) for a
    directory of links to everything in it except the packages (and their
    ``dist-info``) that only the extra brings: what an install without it has.
    """
    site_packages = Path(sysconfig.get_paths()["purelib"])
    assert (site_packages / "hypercorn").is_dir(), "the dev environment lacks the extra"
    root = tmp_path_factory.mktemp("no-local-extra")
    filtered = root / "site-packages"
    filtered.mkdir()
    for entry in site_packages.iterdir():
        if entry.name.lower().partition("-")[0] not in ONLY_FOR_THE_EXTRA:
            (filtered / entry.name).symlink_to(entry)
    customize = root / "customize"
    customize.mkdir()
    (customize / "sitecustomize.py").write_text(
        "import sys\n\n"
        f"sys.path[:] = [{str(filtered)!r} if p == {str(site_packages)!r} else p for p in sys.path]\n"
    )
    return _env(customize)


def _env(*prepend: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        env.pop(name, None)
    paths = [str(p) for p in prepend]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


async def _python(
    args: Sequence[str], env: dict[str, str], cwd: Path = ROOT
) -> trio.CompletedProcess[bytes]:
    """Run the current interpreter with ``args``, killed (by pid) at the deadline."""
    with trio.fail_after(DEADLINE):
        return await trio.run_process(
            [sys.executable, *args],
            env=env,
            cwd=cwd,
            check=False,
            capture_stdout=True,
            capture_stderr=True,
        )


async def _python_code(code: str, env: dict[str, str]) -> trio.CompletedProcess[bytes]:
    return await _python(["-c", textwrap.dedent(code)], env)


def _describe(result: trio.CompletedProcess[bytes]) -> str:
    return (
        f"exit status {result.returncode}\n--- stdout\n{result.stdout.decode()}"
        f"\n--- stderr\n{result.stderr.decode()}"
    )


# -- the harness really hides hypercorn (else every test below proves nothing) --


async def test_the_harness_hides_what_only_the_extra_installs(no_extra: dict[str, str]) -> None:
    code = """
        import importlib.metadata
        import importlib.util

        for name in sorted(NAMES):
            try:
                importlib.metadata.distribution(name)
            except importlib.metadata.PackageNotFoundError:
                dist = "no-dist"
            else:
                dist = "dist"
            spec = "no-spec" if importlib.util.find_spec(name) is None else "spec"
            print(name, dist, spec)
    """.replace("NAMES", repr(set(ONLY_FOR_THE_EXTRA)))
    hidden = await _python_code(code, no_extra)
    assert hidden.returncode == 0, _describe(hidden)
    expected = sorted(ONLY_FOR_THE_EXTRA)
    assert hidden.stdout.decode().splitlines() == [f"{n} no-dist no-spec" for n in expected]

    installed = await _python_code(code, _env())
    assert installed.returncode == 0, _describe(installed)
    assert installed.stdout.decode().splitlines() == [f"{n} dist spec" for n in expected]


# -- an agent never needs the extra -----------------------------------------------

_AGENT_CODE = """
    import sys

    import band_trio
    import band_trio.agent
    import band_trio.cli
    import band_trio.demo
    import band_trio.errors
    import band_trio.testing
    import band_trio.tools
    import band_trio.wire
    from band_trio import AgentConfig, SimpleAdapter


    class Echo(SimpleAdapter):
        async def on_message(self, msg, tools, history, participants_msg, contacts_msg,
                             *, is_session_bootstrap, room_id):
            await tools.send_message(msg.content, [msg.sender_id])


    agent = band_trio.Agent.create(
        adapter=Echo(),
        agent_id="agent-1",
        api_key="key-1",
        rest_url="http://127.0.0.1:9",
        ws_url="ws://127.0.0.1:9/api/v1/socket/websocket",
        config=AgentConfig(state_dir=None),
        handle_signals=False,
    )
    assert isinstance(agent, band_trio.Agent)
    assert band_trio.testing.FakeAgentTools.__doc__
    print(sorted(name for name in ("hypercorn", "band_trio.local") if sys.modules.get(name) is not None))
"""


@pytest.mark.parametrize("extra", ["without", "with"])
async def test_an_agent_never_imports_the_local_platform(
    extra: str, no_extra: dict[str, str]
) -> None:
    env = no_extra if extra == "without" else _env()
    result = await _python_code(_AGENT_CODE, env)
    assert result.returncode == 0, _describe(result)
    assert result.stdout.decode().strip() == "[]"


async def test_star_import_works_without_the_extra(no_extra: dict[str, str]) -> None:
    code = """
        from band_trio import *
        names = globals()
        assert "Agent" in names and "MissingExtraError" in names
        print(sorted(n for n in ("LocalPlatform", "HumanClient", "open_local_platform") if n in names))
    """
    result = await _python_code(code, no_extra)
    assert result.returncode == 0, _describe(result)
    assert result.stdout.decode().strip() == "[]"


# -- every way into the local platform fails with one clear error -----------------

_LOCAL_CODE = """
    import importlib
    import json

    import band_trio

    WAYS = {
        "band_trio.LocalPlatform": lambda: band_trio.LocalPlatform,
        "band_trio.open_local_platform": lambda: band_trio.open_local_platform,
        "band_trio.HumanClient": lambda: band_trio.HumanClient,
        "from band_trio import LocalPlatform": lambda: exec("from band_trio import LocalPlatform"),
        "import band_trio.local": lambda: importlib.import_module("band_trio.local"),
        "import band_trio.local.server": lambda: importlib.import_module("band_trio.local.server"),
    }
    report = {}
    for way, attempt in WAYS.items():
        try:
            attempt()
        except BaseException as exc:
            cause = exc.__cause__
            report[way] = {
                "type": type(exc).__name__,
                "missing_extra": isinstance(exc, band_trio.MissingExtraError),
                "import_error": isinstance(exc, ModuleNotFoundError),
                "extra": getattr(exc, "extra", None),
                "message": str(exc),
                "cause": getattr(cause, "name", None),
            }
        else:
            report[way] = None
    print(json.dumps(report))
"""


async def test_the_local_platform_without_the_extra_names_the_fix(
    no_extra: dict[str, str],
) -> None:
    result = await _python_code(_LOCAL_CODE, no_extra)
    assert result.returncode == 0, _describe(result)
    report = json.loads(result.stdout)
    assert len(report) == 6
    for way, error in report.items():
        assert error is not None, f"{way} did not fail"
        assert error["missing_extra"], (way, error)
        assert error["import_error"], (way, error)
        assert error["extra"] == "local", (way, error)
        assert HINT in error["message"], (way, error)
        assert error["cause"] == "hypercorn", (way, error)


async def test_hypercorn_blocked_in_sys_modules_is_handled_too() -> None:
    # Test suites often hide a module with `sys.modules[name] = None`, which makes
    # `importlib.util.find_spec` raise instead of answering None.
    block = "import sys\nsys.modules['hypercorn'] = None\n"
    agent = await _python_code(block + textwrap.dedent(_AGENT_CODE), _env())
    assert agent.returncode == 0, _describe(agent)
    assert agent.stdout.decode().strip() == "[]"
    local = await _python_code(block + textwrap.dedent(_LOCAL_CODE), _env())
    assert local.returncode == 0, _describe(local)
    for way, error in json.loads(local.stdout).items():
        assert error is not None, f"{way} did not fail"
        assert error["missing_extra"], (way, error)
        assert HINT in error["message"], (way, error)


@pytest.mark.parametrize(
    "argv",
    [
        ["demo"],
        ["platform"],
        ["platform", "--json"],
        ["dev", "echo.py"],
        ["chat", "--url", "http://127.0.0.1:9", "--token", "t"],
    ],
)
async def test_the_cli_without_the_extra_prints_the_fix_and_exits_2(
    argv: list[str], no_extra: dict[str, str]
) -> None:
    result = await _python(["-m", "band_trio.cli", *argv], no_extra)
    stderr = result.stderr.decode()
    assert result.returncode == 2, _describe(result)
    assert HINT in stderr
    assert stderr.startswith(f"band-trio {argv[0]}: ")
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert result.stdout == b""


# -- the pytest plugin loads in any environment band-trio is installed in --------


async def test_the_pytest_plugin_loads_without_the_extra(
    tmp_path: Path, no_extra: dict[str, str]
) -> None:
    # Installed, the plugin is also the `band_trio` entry point; naming it with
    # -p as well would register it twice, so autoloading is off for this run.
    env = {**no_extra, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    argv = ["-m", "pytest", "--co", "-p", "no:cacheprovider", "-p", "band_trio.testing.plugin"]
    result = await _python(argv, env, tmp_path)
    # 5 is pytest's "no tests collected" (the directory is empty); a plugin that
    # fails to load makes pytest exit with 1, 3 or 4 instead.
    assert result.returncode == 5, _describe(result)
    assert "no tests collected" in result.stdout.decode()
    assert result.stderr == b"", _describe(result)


async def test_the_pytest_entry_point_offers_the_fixture_without_the_extra(
    tmp_path: Path, no_extra: dict[str, str]
) -> None:
    # What any pytest run does where band-trio is installed: load the entry point.
    argv = ["-m", "pytest", "--fixtures", "-p", "no:cacheprovider"]
    result = await _python(argv, no_extra, tmp_path)
    assert result.returncode in (0, 5), _describe(result)
    assert "band_platform" in result.stdout.decode()
    assert "A running local Band platform" in result.stdout.decode()


async def test_the_band_platform_fixture_without_the_extra_names_the_fix(
    tmp_path: Path, no_extra: dict[str, str]
) -> None:
    tests = tmp_path / "user_tests"
    tests.mkdir()
    (tests / "test_platform.py").write_text(
        "async def test_uses_the_platform(band_platform):\n    assert band_platform.rest_url\n"
    )
    result = await _python(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "trio_mode=true"],
        no_extra,
        cwd=tests,
    )
    output = result.stdout.decode()
    # pytest-trio sets fixtures up inside the test's Trio run: a failing async
    # fixture fails the test (rather than erroring it).
    assert result.returncode == 1, _describe(result)
    assert "1 failed" in output or "1 error" in output
    assert "MissingExtraError" in output
    assert HINT in output


# -- the error itself and the declared metadata -----------------------------------


def test_missing_extra_error_is_a_band_error_and_an_import_error() -> None:
    error = MissingExtraError("local", "the embedded local Band platform")
    assert isinstance(error, BandError)
    assert isinstance(error, ModuleNotFoundError)
    assert error.terminal
    assert (error.extra, error.feature) == ("local", "the embedded local Band platform")
    assert HINT in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is MissingExtraError
    assert (str(copy), copy.extra, copy.feature) == (str(error), error.extra, error.feature)
    assert band_trio.MissingExtraError is MissingExtraError


def _requirement_names(requirements: Sequence[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        name = requirement
        for stop in "[<>=!~; ":
            name = name.split(stop, 1)[0]
        names.add(name.strip().lower())
    return names


def test_pyproject_makes_hypercorn_the_local_extra() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = pyproject["project"]
    main = _requirement_names(project["dependencies"])
    local = project["optional-dependencies"]["local"]
    assert "hypercorn" not in main
    assert "starlette" not in main
    assert "hypercorn" in _requirement_names(local)
    assert any(r.replace(" ", "").startswith("hypercorn[trio]") for r in local)
    assert "starlette" not in _requirement_names(
        [r for reqs in project.get("optional-dependencies", {}).values() for r in reqs]
    )
    # `uv run` syncs the dev group: it must bring the local platform in, so a
    # fresh clone's `uv run pytest` and `uv run band-trio dev` keep working.
    assert "band-trio[local]" in pyproject["dependency-groups"]["dev"]


def test_readme_gives_both_install_commands() -> None:
    lines = [line.strip() for line in (ROOT / "README.rst").read_text().splitlines()]
    assert "pip install band-trio" in lines
    assert HINT in lines
