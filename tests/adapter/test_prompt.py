"""``render_system_prompt`` (tools and adapters, "System prompt"; "Testable statements" 68-70).

Reference: docs/reference/tools-and-adapters.rst.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from band_trio import Capability
from band_trio.adapter import render_system_prompt

BASE_HEADINGS = [
    "## Environment",
    "## Security",
    "## Activation",
    "## Delegation",
    "## Relaying",
]
CAP_HEADINGS = {
    Capability.MEMORY: "## Memory Tools",
    Capability.CONTACTS: "## Contact Management Tools",
    Capability.FILES: "## Room File Tools",
}


def headings(prompt: str) -> list[str]:
    return [line for line in prompt.splitlines() if line.startswith("## ")]


def test_identity_then_base_sections_in_order() -> None:
    """Pins (tools and adapters, "Testable statements" 68)."""
    prompt = render_system_prompt("Ada", "a research assistant")
    assert prompt.startswith("You are Ada, a research assistant.\n\n## Environment\n")
    assert headings(prompt) == BASE_HEADINGS


def test_identity_has_exactly_one_final_period() -> None:
    assert render_system_prompt("Ada", "a helper.").startswith("You are Ada, a helper.\n")
    assert render_system_prompt("Ada", "  ").startswith("You are Ada.\n")


def test_sections_are_separated_by_one_blank_line() -> None:
    prompt = render_system_prompt("Ada", "a helper", capabilities=list(Capability))
    blocks = prompt.split("\n\n")
    assert all(block.strip() == block and block for block in blocks)
    assert "\n\n\n" not in prompt


def test_base_instructions_say_what_reaches_the_room() -> None:
    prompt = render_system_prompt("Ada", "a helper")
    for needle in (
        "[Name]: content",
        "[System]:",
        "band_send_message(content, mentions)",
        "band_no_reply",
        "@<username>",
        "@<username>/<agent-name>",
        "band_lookup_peers",
        "band_add_participant",
    ):
        assert needle in prompt, needle


@pytest.mark.parametrize("cap", [Capability.MEMORY, Capability.CONTACTS, Capability.FILES])
def test_capability_sections_only_when_enabled(cap: Capability) -> None:
    """Pins (tools and adapters, "Testable statements" 69)."""
    without = render_system_prompt("Ada", "a helper")
    with_cap = render_system_prompt("Ada", "a helper", capabilities=[cap])
    assert CAP_HEADINGS[cap] not in without
    assert headings(with_cap) == [*BASE_HEADINGS, CAP_HEADINGS[cap]]


def test_no_tasks_section() -> None:
    """There is no TASKS section, even with the capability on (tools and adapters, "Testable
    statements" 69)."""
    assert render_system_prompt("Ada", "a helper", capabilities=["tasks"]) == (
        render_system_prompt("Ada", "a helper")
    )


def test_memory_section_names_the_allowed_values() -> None:
    prompt = render_system_prompt("Ada", "a helper", capabilities=["memory"])
    for value in (
        "sensory", "working", "long_term", "iconic", "echoic", "haptic", "episodic",
        "semantic", "procedural", "user", "agent", "tool", "guideline", "subject",
        "organization",
    ):  # fmt: skip
        assert value in prompt, value


def test_custom_section_comes_last_under_developer_instructions() -> None:
    """Pins (tools and adapters, "Testable statements" 70)."""
    prompt = render_system_prompt(
        "Ada",
        "a helper",
        custom_section="Answer in French.",
        capabilities=["files"],
        extra_sections=["## Adapter Notes\nUse short answers."],
    )
    assert headings(prompt) == [
        *BASE_HEADINGS,
        "## Room File Tools",
        "## Adapter Notes",
        "## Developer Instructions",
    ]
    assert prompt.endswith("\n\n## Developer Instructions\nAnswer in French.")


def test_without_base_instructions_the_custom_section_is_bare() -> None:
    """Pins (tools and adapters, "Testable statements" 70)."""
    prompt = render_system_prompt(
        "Ada",
        "a helper",
        custom_section="Answer in French.",
        include_base_instructions=False,
        capabilities=["contacts"],
        extra_sections=["Extra."],
    )
    assert headings(prompt) == ["## Contact Management Tools"]
    assert prompt.startswith("You are Ada, a helper.\n\n## Contact Management Tools\n")
    assert prompt.endswith("\n\nExtra.\n\nAnswer in French.")
    assert "Developer Instructions" not in prompt


def test_blank_custom_and_extra_sections_are_left_out() -> None:
    assert render_system_prompt(
        "Ada", "a helper", custom_section="  ", extra_sections=["", " "]
    ) == (render_system_prompt("Ada", "a helper"))
    assert render_system_prompt("Ada", "a helper", include_base_instructions=False) == (
        "You are Ada, a helper."
    )


def test_unknown_capability_is_refused() -> None:
    with pytest.raises(ValueError, match="telepathy"):
        render_system_prompt("Ada", "a helper", capabilities=["telepathy"])


@given(
    caps=st.lists(st.sampled_from(list(Capability)), max_size=6),
    base=st.booleans(),
    extras=st.lists(st.sampled_from(["## X\nx", "## Y\ny"]), max_size=2),
    custom=st.sampled_from(["", "Be brief."]),
)
def test_section_order_over_capability_subsets(
    caps: list[Capability], base: bool, extras: list[str], custom: str
) -> None:
    """Whatever the subset and its order: identity, base, memory/contacts/files in
    that fixed order, extras as given, developer section last."""
    prompt = render_system_prompt(
        "Ada",
        "a helper",
        custom_section=custom,
        include_base_instructions=base,
        capabilities=caps,
        extra_sections=extras,
    )
    expected = list(BASE_HEADINGS) if base else []
    expected += [h for c, h in CAP_HEADINGS.items() if c in caps]
    expected += [e.splitlines()[0] for e in extras]
    if custom and base:
        expected.append("## Developer Instructions")
    assert headings(prompt) == expected
    assert prompt.startswith("You are Ada, a helper.")
    if custom:
        assert prompt.endswith(custom)
