"""reply_digest: the text an agent sends and the text the platform stores (mention
tokens inserted or prepended: protocol, "Mention tokens in content") have one
digest, also when a mention touches punctuation ("@alice, ...", "thanks
@alice!", "(cc @alice)"); different texts have different digests. Checked
against the local platform's own storage.

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from band_trio.adapter.content import is_visible
from band_trio.local import LocalPlatform
from band_trio.local._input import Obj
from band_trio.tools.reply_digest import reply_digest

_words = st.text(
    alphabet=st.characters(whitelist_categories=("L", "N", "P", "S")), min_size=1, max_size=8
).filter(lambda w: "@" not in w and is_visible(w))


@st.composite
def replies(draw: st.DrawFn) -> str:
    words = draw(st.lists(_words, min_size=1, max_size=8))
    if draw(st.booleans()):
        words.insert(draw(st.integers(0, len(words))), "@demo/echo")
    separators = draw(st.lists(st.sampled_from([" ", "  ", "\n", " \t "]), min_size=len(words)))
    return "".join(w + sep for w, sep in zip(words, separators, strict=False)).strip()


def _platform_with_room() -> tuple[LocalPlatform, str]:
    # No server needed: post_message runs in process (a fresh platform per test).
    platform = LocalPlatform()
    owner = platform.state.users[platform.user.id]
    room = platform.state.create_room(owner, None)
    platform.state.add_participant(
        owner, room.id, Obj({"participant": {"participant_id": platform.agents[0].id}})
    )
    return platform, room.id


_PLATFORM = _platform_with_room()


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(replies())
def test_sent_and_stored_texts_have_one_digest(text: str) -> None:
    platform, room_id = _PLATFORM
    sent = platform.post_message(room_id, text, [platform.agents[0].handle])
    stored = platform.state.rooms[room_id].by_id[sent["id"]].content
    assert "@[[" in stored  # the platform did rewrite or prepend the mention
    assert reply_digest(stored) == reply_digest(text)


@given(st.lists(_words, min_size=1, max_size=6), st.lists(_words, min_size=1, max_size=6))
def test_different_words_give_different_digests(a: list[str], b: list[str]) -> None:
    if a != b:
        assert reply_digest(" ".join(a)) != reply_digest(" ".join(b))


def test_mentions_and_spacing_do_not_matter() -> None:
    assert reply_digest("@[[abc]] hello   world") == reply_digest("@alice hello\nworld")
    assert reply_digest("hello world") != reply_digest("hello, world")


# ------------------------------------------------------------------ mentions next to punctuation


def _stored(text: str) -> str:
    platform, room_id = _PLATFORM
    handle = platform.agents[0].handle
    sent = platform.post_message(room_id, text, [handle])
    stored = platform.state.rooms[room_id].by_id[sent["id"]].content
    assert isinstance(stored, str)
    return stored


@pytest.mark.parametrize(
    "template",
    [
        "@{h}, here is the summary",
        "Thanks @{h}!",
        "(cc @{h}) done",
        "Done, see you @{h}.",
        "@{h}: the build is green",
        "ask @{h}'s owner",
        "@{H}; all set",
    ],
)
def test_a_mention_next_to_punctuation_keeps_the_digest(template: str) -> None:
    handle = _PLATFORM[0].agents[0].handle
    text = template.format(h=handle, H=handle.upper())
    stored = _stored(text)
    # Rewritten in place, not prepended.
    assert "@[[" in stored
    assert f"@{handle}" not in stored.lower()
    assert reply_digest(stored) == reply_digest(text)


_PUNCT = st.sampled_from([",", ".", "!", "?", ":", ";", ")", "'s", ""])
_WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_WORD, min_size=1, max_size=5), st.integers(0, 5), _PUNCT, st.booleans())
def test_sent_and_stored_texts_have_one_digest_with_adjacent_punctuation(
    words: list[str], at: int, punct: str, opening: bool
) -> None:
    handle = _PLATFORM[0].agents[0].handle
    mention = ("(" if opening else "") + f"@{handle}" + punct
    words.insert(min(at, len(words)), mention)
    text = " ".join(words)
    assert reply_digest(_stored(text)) == reply_digest(text)
