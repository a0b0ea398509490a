"""Hypothesis properties of RestClient decoding: whatever a 2xx body holds, a call
returns a model or raises BandProtocolError — never another exception; valid
bodies (with unknown extra keys) decode to exactly what the converter gives."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from band_trio.errors import BandProtocolError
from band_trio.wire import models as m
from band_trio.wire import structure
from band_trio.wire.rest import RestClient, encode_query

from .rest_mock import MESSAGE, PARTICIPANT, ROOM, Recorder, make_client

_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=6)
_json = st.recursive(
    _scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=10,
)

Call = Callable[[RestClient], Awaitable[Any]]

CALLS: dict[str, Call] = {
    "get_chat": lambda r: r.get_chat("room-1"),
    "list_participants": lambda r: r.list_participants("room-1"),
    "next_message": lambda r: r.next_message("room-1"),
    "mark_processing": lambda r: r.mark_processing("room-1", "msg-1"),
    "list_messages": lambda r: r.list_messages("room-1"),
    "list_chats": lambda r: r.list_chats(),
    "list_memories": lambda r: r.list_memories(),
    "list_contact_requests": lambda r: r.list_contact_requests(),
    "exchange_delegation_token": lambda r: r.exchange_delegation_token("a", "m"),
}


def _mutate(base: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """``base`` with some keys dropped and some values replaced by random JSON."""
    keys = sorted(base)
    return st.tuples(
        st.sets(st.sampled_from(keys), max_size=2),
        st.dictionaries(st.sampled_from(keys), _json, max_size=2),
    ).map(lambda t: {**{k: v for k, v in base.items() if k not in t[0]}, **t[1]})


_documents = st.one_of(
    _json,
    st.fixed_dictionaries({"data": _json}, optional={"metadata": _json, "meta": _json}),
    st.fixed_dictionaries(
        {
            "data": st.one_of(
                _mutate(ROOM), _mutate(MESSAGE), st.lists(_mutate(PARTICIPANT), max_size=2)
            )
        },
        optional={
            "metadata": st.fixed_dictionaries(
                {},
                optional={
                    "has_more": _json,
                    "limit": _json,
                    "next_cursor": _json,
                    "total_pages": _json,
                },
            )
        },
    ),
)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(CALLS)), document=_documents, raw=st.booleans())
def test_any_success_body_gives_a_model_or_protocol_error(
    name: str, document: Any, raw: bool
) -> None:
    content = json.dumps(document).encode()
    if raw:
        content = content[: len(content) // 2]  # truncated JSON

    async def run() -> None:
        recorder = Recorder([httpx.Response(200, content=content)])
        async with make_client(recorder) as rest:
            problem: BandProtocolError | None = None
            try:
                await CALLS[name](rest)
            except BandProtocolError as exc:
                problem = exc
        if problem is not None:
            assert "/api/v1/agent/" in str(problem)

    trio.run(run)


_extra_keys = st.dictionaries(
    st.text(min_size=1, max_size=8).filter(
        lambda k: k not in ROOM and k not in m.ChatRoom.__annotations__
    ),
    _json,
    max_size=3,
)


@settings(max_examples=60, deadline=None)
@given(extra=_extra_keys, title=st.none() | st.text(max_size=20))
def test_valid_room_with_unknown_keys_decodes_like_the_converter(
    extra: dict[str, Any], title: str | None
) -> None:
    payload = {**ROOM, "title": title, **extra}

    async def run() -> m.ChatRoom:
        recorder = Recorder([httpx.Response(200, json={"data": payload})])
        async with make_client(recorder) as rest:
            return await rest.get_chat("room-1")

    room = trio.run(run)
    assert room == structure(payload, m.ChatRoom)
    assert room.extra == extra
    assert room.title == title


@settings(max_examples=100)
@given(
    params=st.dictionaries(
        st.text(min_size=1, max_size=5),
        st.none()
        | st.booleans()
        | st.integers()
        | st.text(max_size=5)
        | st.lists(st.text(max_size=4, alphabet="abc"), max_size=3),
        max_size=5,
    )
)
def test_encode_query_property(params: dict[str, Any]) -> None:
    encoded = encode_query(params)
    assert set(encoded) == {k for k, v in params.items() if v is not None}
    for key, value in encoded.items():
        original = params[key]
        if isinstance(original, bool):
            assert value == ("true" if original else "false")
        elif isinstance(original, list):
            assert value == ",".join(original)
        else:
            assert value == str(original)


@pytest.mark.parametrize("name", sorted(CALLS))
async def test_empty_200_body_is_a_protocol_error(name: str) -> None:
    recorder = Recorder([httpx.Response(200, content=b"")])
    async with make_client(recorder) as rest:
        with pytest.raises(BandProtocolError):
            await CALLS[name](rest)
