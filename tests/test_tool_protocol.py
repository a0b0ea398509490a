"""``AgentToolsProtocol`` declares every tool an adapter may call: an adapter
calling all of them passes ``mypy --strict``, and both ``AgentTools`` and the
test kit's ``FakeAgentTools`` implement every declared method with a compatible
signature."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest
from mypy import api as mypy_api

from band_trio.adapter import AgentToolsProtocol
from band_trio.testing import FakeAgentTools
from band_trio.tools import TOOL_DEFINITIONS, AgentTools

SAMPLE = Path(__file__).parent / "typecheck" / "adapter_calling_every_tool.py"


def _declared() -> list[str]:
    return sorted(
        name
        for name, value in vars(AgentToolsProtocol).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    )


def test_every_platform_tool_is_declared() -> None:
    declared = set(_declared())
    missing = [d.name for d in TOOL_DEFINITIONS if d.name.removeprefix("band_") not in declared]
    assert len(TOOL_DEFINITIONS) == 28
    assert missing == []
    assert {"send_failure", "get_tool_schemas", "execute_tool_call"} <= declared


def test_reading_the_waiting_messages_is_declared() -> None:
    """An adapter reads what waits behind its turn (a reply to a question it
    asked) through the protocol, not by probing the tools object."""
    assert "unprocessed_messages" in _declared()
    (limit,) = _parameters(vars(AgentToolsProtocol)["unprocessed_messages"])
    assert (limit.name, limit.default) == ("limit", 100)


def _parameters(fn: Any) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]


@pytest.mark.parametrize("implementation", [AgentTools, FakeAgentTools])
@pytest.mark.parametrize("name", _declared())
def test_the_implementations_have_every_declared_method(implementation: type, name: str) -> None:
    declared = vars(AgentToolsProtocol)[name]
    if isinstance(declared, property):
        # A read-only attribute: a property, or an attribute set in __init__.
        assert isinstance(getattr(implementation, name, None), property) or (
            name in inspect.signature(implementation.__init__).parameters
        ), f"{implementation.__name__} has no {name}"
        return
    actual = getattr(implementation, name, None)
    assert callable(actual), f"{implementation.__name__} has no {name}()"
    if inspect.iscoroutinefunction(inspect.unwrap(declared)):
        assert inspect.iscoroutinefunction(inspect.unwrap(actual))
    wanted = _parameters(declared)
    have = {p.name: p for p in _parameters(actual)}
    for p in wanted:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            assert any(q.kind is p.kind for q in have.values()), f"{name}: no **{p.name}"
            continue
        assert p.name in have, f"{implementation.__name__}.{name} has no parameter {p.name}"
        q = have[p.name]
        assert q.kind == p.kind, f"{name}({p.name}): {q.kind} instead of {p.kind}"
        assert q.default == p.default, f"{name}({p.name}): default {q.default!r}"
    extra = [q for q in have.values() if q.name not in {p.name for p in wanted}]
    assert all(
        q.default is not inspect.Parameter.empty or q.kind.name.startswith("VAR") for q in extra
    )


def test_the_sample_adapter_calls_every_declared_method() -> None:
    tree = ast.parse(SAMPLE.read_text(encoding="utf-8"))
    called = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "tools"
    }
    assert set(_declared()) <= called


def test_an_adapter_calling_every_tool_passes_strict_mypy() -> None:
    out, err, status = mypy_api.run(
        ["--strict", "--no-error-summary", "--python-version", "3.11", str(SAMPLE)]
    )
    assert status == 0, out + err


def test_the_strict_check_catches_a_wrong_call(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong_adapter.py"
    wrong.write_text(
        "from band_trio.adapter import AgentToolsProtocol\n"
        "async def turn(tools: AgentToolsProtocol) -> None:\n"
        "    await tools.add_participant(42)\n"
        "    await tools.no_such_tool()\n",
        encoding="utf-8",
    )
    out, _, status = mypy_api.run(["--strict", "--no-error-summary", str(wrong)])
    assert status == 1
    assert 'Argument 1 to "add_participant"' in out
    assert '"AgentToolsProtocol" has no attribute "no_such_tool"' in out
