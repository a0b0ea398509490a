"""Review findings on reply_digest: a reply whose mention touches punctuation
("@alice, ...", "thanks @alice!", "(cc @alice)") has the same digest as the
text the platform stores (the handle becomes a token, the punctuation stays),
checked against the local platform's own storage."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from band_trio.local import LocalPlatform
from band_trio.local._input import Obj
from band_trio.tools.reply_digest import reply_digest


def _platform_with_room() -> tuple[LocalPlatform, str]:
    platform = LocalPlatform()
    owner = platform.state.users[platform.user.id]
    room = platform.state.create_room(owner, None)
    platform.state.add_participant(
        owner, room.id, Obj({"participant": {"participant_id": platform.agents[0].id}})
    )
    return platform, room.id


_PLATFORM = _platform_with_room()


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
