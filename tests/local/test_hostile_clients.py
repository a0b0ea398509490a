"""What an attacker sends the local platform, and that it still answers afterwards.

Each test sends one kind of hostile input (an HTTP/2 body before any key,
bodies without a key, stalled or trickled bodies, bodies costly to decode,
numbers JSON cannot carry, digits of other scripts or by the thousand,
non-ASCII keys, forged log lines, oversized, held or trickled WebSocket
messages, too many connections) and then checks, with an ordinary
request, that the platform is still serving. Nothing may answer 500.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator

import h2.config
import h2.connection
import httpx
import pytest
import trio
from hyperframe.frame import DataFrame
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage

from band_trio.local import AgentCredentials, HumanClient, LocalPlatform, asgi, open_local_platform
from band_trio.local._input import json_longer_than
from band_trio.local.app import UPLOAD_BYTES_IN_FLIGHT
from band_trio.local.asgi import (
    BODY_GRACE,
    BODY_IDLE_TIMEOUT,
    BODY_MIN_RATE,
    BODY_TOTAL_TIMEOUT,
    INLINE_JSON_BYTES,
    MAX_JSON_INTEGER_DIGITS,
    MAX_JSON_VALUES,
    json_bytes,
    route,
)
from band_trio.local.connections import (
    H2_PREFACE,
    HEADER_TIMEOUT,
    default_max_connections,
    raise_file_limit,
)
from band_trio.local.refusal import fail
from band_trio.local.routes.websocket import WEBSOCKET_IDLE_TIMEOUT
from band_trio.local.server import WEBSOCKET_MAX_MESSAGE
from tests.local.helpers import IO_DEADLINE, agent_http, assert_error, user_http

BIG_BODY = 100_000


def _port(platform: LocalPlatform) -> int:
    return int(platform.rest_url.rsplit(":", 1)[1])


async def _still_answers(platform: LocalPlatform) -> None:
    agent = platform.agents[0]
    async with httpx.AsyncClient(base_url=platform.rest_url) as client:
        with trio.fail_after(IO_DEADLINE):
            response = await client.get("/api/v1/agent/me", headers={"x-api-key": agent.api_key})
    assert response.status_code == 200
    assert response.json()["data"]["id"] == agent.id


async def _receive_until_closed(stream: trio.SocketStream, deadline: float = IO_DEADLINE) -> bytes:
    data = b""
    with trio.fail_after(deadline):
        while True:
            try:
                chunk = await stream.receive_some(65536)
            except trio.BrokenResourceError:
                return data
            if not chunk:
                return data
            data += chunk


async def _response_head(stream: trio.SocketStream, deadline: float = IO_DEADLINE) -> bytes:
    data = b""
    with trio.fail_after(deadline):
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            data += chunk
    return data


async def _whole_response(stream: trio.SocketStream) -> bytes:
    """One response with a ``content-length``, nothing after it."""
    data = await _response_head(stream)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    with trio.fail_after(IO_DEADLINE):
        while len(body) < length:
            body += await stream.receive_some(length - len(body))
    return head + b"\r\n\r\n" + body


# ---------------------------------------------------------------- HTTP/2


async def test_http2_prior_knowledge_with_a_body_is_refused(band_platform: LocalPlatform) -> None:
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.send_headers(
        1,
        [
            (":method", "POST"),
            (":path", "/api/v1/agent/me"),
            (":scheme", "http"),
            (":authority", "localhost"),
            ("content-length", str(BIG_BODY)),
        ],
    )
    frames = conn.data_to_send()
    # DATA frames past the flow-control window, as an attacker sends them
    for start in range(0, BIG_BODY, 16_000):
        frame = DataFrame(1)
        frame.data = b"x" * min(16_000, BIG_BODY - start)
        frames += frame.serialize()
    assert frames.startswith(H2_PREFACE)
    with trio.fail_after(IO_DEADLINE):
        with contextlib.suppress(trio.BrokenResourceError):  # refused before everything was sent
            await stream.send_all(frames)
    answer = await _receive_until_closed(stream)
    await stream.aclose()
    # a GOAWAY frame (type 7) with HTTP_1_1_REQUIRED (0xd)
    assert answer[3] == 0x07
    assert answer[-4:] == b"\x00\x00\x00\x0d"
    assert band_platform.connection_statistics().refused_http2 == 1
    await _still_answers(band_platform)


async def test_http2_after_an_h2c_upgrade_costs_one_connection(
    band_platform: LocalPlatform,
) -> None:
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    upgrade = (
        b"GET /api/v1/agent/me HTTP/1.1\r\nhost: localhost\r\n"
        b"connection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\n"
        b"http2-settings: AAMAAABkAAQAAP__\r\n\r\n"
    )
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    frames = conn.data_to_send()
    for stream_id in (1, 3):
        for start in range(0, BIG_BODY, 16_000):
            frame = DataFrame(stream_id)
            frame.data = b"x" * min(16_000, BIG_BODY - start)
            frames += frame.serialize()
    with trio.fail_after(IO_DEADLINE):
        try:
            await stream.send_all(upgrade)
            await stream.send_all(frames)
        except trio.BrokenResourceError:
            pass
    await _receive_until_closed(stream)
    await stream.aclose()
    await _still_answers(band_platform)


async def test_an_h2c_upgrade_is_answered_in_http1_without_a_warning(
    band_platform: LocalPlatform, caplog: pytest.LogCaptureFixture
) -> None:
    key = band_platform.agents[0].api_key.encode()
    heads = []
    with caplog.at_level(logging.WARNING, logger="band_trio.local"):
        for first in (True, False):  # the first request of a connection, or a later one
            stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
            request = (
                b"GET /api/v1/agent/me HTTP/1.1\r\nhost: localhost\r\nx-api-key: " + key + b"\r\n"
            )
            upgrade = b"connection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\n"
            upgrade += b"http2-settings: AAMAAABkAAQAAP__\r\n\r\n"
            with trio.fail_after(IO_DEADLINE):
                if not first:
                    await stream.send_all(request + b"\r\n")
                    await _whole_response(stream)
                await stream.send_all(request + upgrade)
                heads.append(await _response_head(stream))
            await stream.aclose()
    for head in heads:
        assert head.startswith(b"HTTP/1.1 200"), head
        assert b"h2c" not in head.lower()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert band_platform.connection_statistics().failed == 0
    await _still_answers(band_platform)


# ---------------------------------------------------------------- bodies


async def test_the_key_is_checked_before_the_body_is_read(band_platform: LocalPlatform) -> None:
    """A keyless 24 MB upload is answered 401 from its headers alone."""
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    room = "00000000-0000-0000-0000-000000000000"
    head = (
        f"PUT /api/v1/agent/chats/{room}/files HTTP/1.1\r\nhost: localhost\r\n"
        f"x-file-name: big.bin\r\ncontent-length: {24 * 1024 * 1024}\r\n\r\n"
    ).encode()
    with trio.fail_after(IO_DEADLINE):
        await stream.send_all(head + b"x" * 1000)
        answer = await _response_head(stream)
    # ... and the connection is closed: the rest of the body is never read
    answer += await _receive_until_closed(stream)
    await stream.aclose()
    assert answer.startswith(b"HTTP/1.1 401")
    assert b"unauthorized" in answer
    await _still_answers(band_platform)


async def test_a_stalled_body_answers_408(
    band_platform: LocalPlatform, room: str, autojump_clock: trio.testing.MockClock
) -> None:
    agent = band_platform.agents[0]
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    head = (
        f"POST /api/v1/agent/chats/{room}/events HTTP/1.1\r\nhost: localhost\r\n"
        f"x-api-key: {agent.api_key}\r\ncontent-type: application/json\r\n"
        f"content-length: 1000000\r\n\r\n"
    ).encode()
    # enough of it that the minimum rate would allow it longer than the idle timeout
    prefix = b'{"event": ' + b" " * int(BODY_IDLE_TIMEOUT * BODY_MIN_RATE)
    started = trio.current_time()
    await stream.send_all(head + prefix)
    answer = await _response_head(stream, BODY_TOTAL_TIMEOUT + IO_DEADLINE)
    await stream.aclose()
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert BODY_IDLE_TIMEOUT <= trio.current_time() - started <= BODY_IDLE_TIMEOUT + 1
    await _still_answers(band_platform)


async def _trickle(stream: trio.SocketStream, every: float) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while True:
            await trio.sleep(every)
            await stream.send_all(b" ")


async def test_a_trickled_body_is_cut_after_its_grace(
    band_platform: LocalPlatform, room: str, autojump_clock: trio.testing.MockClock
) -> None:
    """A byte every 10 s never trips the idle timeout; the minimum rate cuts it."""
    agent = band_platform.agents[0]
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    head = (
        f"POST /api/v1/agent/chats/{room}/events HTTP/1.1\r\nhost: localhost\r\n"
        f"x-api-key: {agent.api_key}\r\ncontent-type: application/json\r\n"
        f"content-length: 1000000\r\n\r\n"
    ).encode()
    await stream.send_all(head + b'{"event": ')
    started = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_trickle, stream, 10)
        answer = await _response_head(stream, BODY_TOTAL_TIMEOUT + IO_DEADLINE)
        nursery.cancel_scope.cancel()
    await stream.aclose()
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert trio.current_time() - started <= BODY_GRACE + 1
    await _still_answers(band_platform)


async def test_a_body_at_the_minimum_rate_is_not_cut(
    band_platform: LocalPlatform, room: str, autojump_clock: trio.testing.MockClock
) -> None:
    """An upload taking three times the grace, at just over the minimum rate, is stored."""
    agent = band_platform.agents[0]
    seconds = int(3 * BODY_GRACE)
    piece = b"x" * int(BODY_MIN_RATE * 1.1)
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    head = (
        f"PUT /api/v1/agent/chats/{room}/files HTTP/1.1\r\nhost: localhost\r\n"
        f"x-api-key: {agent.api_key}\r\nx-file-name: slow.bin\r\n"
        f"content-length: {seconds * len(piece)}\r\n\r\n"
    ).encode()
    await stream.send_all(head)
    started = trio.current_time()
    for _ in range(seconds):
        await trio.sleep(1)
        await stream.send_all(piece)
    answer = await _whole_response(stream)
    await stream.aclose()
    assert answer.startswith(b"HTTP/1.1 201"), answer[:300]
    assert trio.current_time() - started >= seconds


async def test_stalled_headers_are_dropped(
    band_platform: LocalPlatform, autojump_clock: trio.testing.MockClock
) -> None:
    """Half a request line and nothing more: the connection is closed once the
    header deadline passes, it does not stay open for as long as the client likes."""
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    await stream.send_all(b"GET /api/v1/agent/me HTTP/1.1\r\nhost: local")
    started = trio.current_time()
    answer = await _receive_until_closed(stream, 120)
    await stream.aclose()
    assert b"200" not in answer
    assert trio.current_time() - started <= HEADER_TIMEOUT + 1
    assert band_platform.connection_statistics().cut_slow == 1
    await _still_answers(band_platform)


# ---------------------------------------------------------------- numbers


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1E400", "NaN", "Infinity", "-Infinity"])
async def test_numbers_json_cannot_carry_are_refused_and_never_stored(
    band_platform: LocalPlatform, agent: httpx.AsyncClient, room: str, number: str
) -> None:
    bodies = {
        f"/chats/{room}/events": '{"event":{"content":"x","message_type":"thought",'
        f'"metadata":{{"n":{number}}}}}}}',
        "/memories": '{"memory":{"content":"x","system":"long_term","type":"semantic",'
        f'"segment":"user","metadata":{{"n":{number}}}}}}}',
        f"/chats/{room}/tasks": f'{{"subject":"t","n":{number}}}',
    }
    before = json.dumps(band_platform.state.snapshot(), default=str)
    with trio.fail_after(IO_DEADLINE):
        for path, body in bodies.items():
            response = await agent.post(
                path, content=body, headers={"content-type": "application/json"}
            )
            assert_error(response, 400, "invalid_json")
    assert json.dumps(band_platform.state.snapshot(), default=str) == before
    await _still_answers(band_platform)


def test_nothing_answers_a_number_json_cannot_carry() -> None:
    for value in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(ValueError, match="JSON"):
            json_bytes({"n": value})


HOSTILE_DIGITS = ["\u0661\u0662", "\u00b2", "9" * 5000, "9" * 40, "-" + "9" * 5000, "1\u200b"]


@pytest.mark.parametrize("digits", HOSTILE_DIGITS)
async def test_hostile_digits_never_answer_500(
    band_platform: LocalPlatform, agent: httpx.AsyncClient, room: str, digits: str
) -> None:
    upload = await agent.put(
        f"/chats/{room}/files", content=b"0123456789", headers={"x-file-name": "d.txt"}
    )
    file_id = upload.json()["data"]["id"]
    requests = [
        ("GET", f"/chats/{room}/tasks/{digits}", {}),
        ("GET", f"/chats/{room}/tasks/{digits}/history", {}),
        ("POST", f"/chats/{room}/tasks/{digits}", {}),
        ("GET", f"/chats/{room}/messages", {"cursor": f"cur_{digits}"}),
        ("GET", f"/chats/{room}/messages", {"limit": digits}),
        ("GET", f"/chats/{room}/messages", {"page": digits}),
        ("GET", f"/chats/{room}/context", {"cursor": f"cur_{digits}"}),
        ("GET", f"/chats/{room}/context", {"limit": digits}),
        ("GET", f"/chats/{room}/tasks", {"limit": digits}),
        ("GET", "/memories", {"limit": digits, "cursor": f"cur_{digits}"}),
        ("GET", "/peers", {"page": digits, "page_size": digits}),
        ("GET", "/chats", {"page": digits}),
        ("GET", "/contacts", {"page": digits}),
    ]
    with trio.fail_after(IO_DEADLINE):
        for method, path, params in requests:
            response = await agent.request(method, path, params=params)
            assert response.status_code < 500, (path, params, response.text)
            if response.status_code >= 400:
                assert_error(response, response.status_code)
        for header in (f"bytes={digits}-", f"bytes=-{digits}", f"bytes=0-{digits}"):
            response = await agent.get(
                f"/chats/{room}/files/{file_id}", headers=[(b"range", header.encode())]
            )
            assert response.status_code in (200, 206, 416), (header, response.text)
            if response.status_code == 200:
                assert response.content == b"0123456789"
    await _still_answers(band_platform)


async def test_non_ascii_keys_are_wrong_keys(band_platform: LocalPlatform) -> None:
    async with httpx.AsyncClient(base_url=band_platform.rest_url) as client:
        with trio.fail_after(IO_DEADLINE):
            for name, path in (
                (b"x-api-key", "/api/v1/agent/me"),
                (b"x-api-key", "/api/v1/me/profile"),
                (b"x-admin-key", "/_local/admin/state"),
            ):
                for value in ("é€".encode(), b"\xff\xfe", "band_ä".encode()):
                    response = await client.get(path, headers=[(name, value)])
                    assert response.status_code in (401, 404), response.text
                    assert_error(response, response.status_code)
    await _still_answers(band_platform)


async def test_a_newline_in_the_path_does_not_forge_a_log_line(
    band_platform: LocalPlatform, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(ctx: object) -> object:
        raise RuntimeError("handler bug")

    app = band_platform.app
    app.routes = type(app.routes)([route("GET", "/boom/{x}", "agent", boom)])  # type: ignore[arg-type]
    key = band_platform.agents[0].api_key
    with caplog.at_level(logging.ERROR, logger="band_trio.local"):
        async with httpx.AsyncClient(base_url=band_platform.rest_url) as client:
            with trio.fail_after(IO_DEADLINE):
                response = await client.get(
                    "/boom/x%0A2026-01-01 ERROR forged", headers={"x-api-key": key}
                )
    assert_error(response, 500)
    records = [r for r in caplog.records if "unhandled error" in r.getMessage()]
    assert records
    for record in records:
        assert "\n" not in record.getMessage()
        assert "\\n" in record.getMessage()


# ---------------------------------------------------------------- WebSocket


async def test_an_oversized_websocket_message_closes_that_socket_only(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    # wsproto over a raw stream: the close code is read from the frame itself
    stream = await trio.open_tcp_stream("127.0.0.1", _port(band_platform))
    ws = WSConnection(ConnectionType.CLIENT)
    target = f"/api/v1/socket/websocket?api_key={demo.api_key}&agent_id={demo.id}&vsn=2.0.0"
    code = None
    with trio.fail_after(IO_DEADLINE):
        await stream.send_all(ws.send(Request(host="localhost", target=target)))
        accepted = False
        while not accepted:
            ws.receive_data(await stream.receive_some(65536))
            accepted = any(isinstance(e, AcceptConnection) for e in ws.events())
        with contextlib.suppress(
            trio.BrokenResourceError
        ):  # closed before the whole message was sent
            await stream.send_all(ws.send(TextMessage(data="x" * (WEBSOCKET_MAX_MESSAGE + 1))))
        while code is None:
            data = await stream.receive_some(65536)
            ws.receive_data(data or None)
            for event in ws.events():
                if isinstance(event, CloseConnection):
                    code = event.code
            if not data:
                break
    await stream.aclose()
    assert code == 1009
    await _still_answers(band_platform)


# ---------------------------------------------------------------- connections


@pytest.fixture
async def small_platform() -> AsyncIterator[LocalPlatform]:
    async with open_local_platform(max_connections_per_client=3) as platform:
        yield platform


KEYLESS_REQUEST = b"GET /api/v1/agent/me HTTP/1.1\r\nhost: localhost\r\n\r\n"


async def _keyless_keep_alive(port: int, local_address: str | None = None) -> trio.SocketStream:
    """A connection that made one request without a key (answered 401) and stays open."""
    stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=local_address)
    await stream.send_all(KEYLESS_REQUEST)
    assert (await _response_head(stream)).startswith(b"HTTP/1.1 401")
    return stream


async def _keyed_keep_alive(
    port: int, creds: AgentCredentials, local_address: str | None = None
) -> trio.SocketStream:
    """A connection that made one request with an agent key and stays open."""
    stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=local_address)
    await stream.send_all(
        b"GET /api/v1/agent/me HTTP/1.1\r\nhost: localhost\r\nx-api-key: "
        + creds.api_key.encode()
        + b"\r\n\r\n"
    )
    assert (await _response_head(stream)).startswith(b"HTTP/1.1 200")
    return stream


async def test_keyless_connections_per_address_are_bounded(small_platform: LocalPlatform) -> None:
    port = _port(small_platform)
    with trio.fail_after(IO_DEADLINE):
        held = [await _keyless_keep_alive(port) for _ in range(3)]
    try:
        with trio.fail_after(IO_DEADLINE):
            await small_platform.wait_for(lambda: small_platform.connection_statistics().open == 3)
            extra = await trio.open_tcp_stream("127.0.0.1", port)
            await extra.send_all(KEYLESS_REQUEST)
            answer = await _receive_until_closed(extra)
            await extra.aclose()
        assert answer.startswith(b"HTTP/1.1 429")
        assert b"too_many_connections" in answer
        assert small_platform.connection_statistics().refused_busy == 1
    finally:
        for stream in held:
            await stream.aclose()
    with trio.fail_after(IO_DEADLINE):
        await small_platform.wait_for(lambda: not small_platform.connection_statistics().open)
    await _still_answers(small_platform)


async def test_a_keyed_client_is_served_while_keyless_sockets_fill_the_bound(
    small_platform: LocalPlatform,
) -> None:
    """Keyless sockets of the same address, done or still sending headers,
    never lock out a client with a key: its connections count against its key."""
    port = _port(small_platform)
    held: list[trio.SocketStream] = []
    try:
        with trio.fail_after(IO_DEADLINE):
            held += [await _keyless_keep_alive(port) for _ in range(3)]
            for _ in range(3):
                stream = await trio.open_tcp_stream("127.0.0.1", port)
                await stream.send_all(b"GET /api/v1/agent/me HTTP/1.1\r\nhost: loc")
                held.append(stream)
            await small_platform.wait_for(lambda: small_platform.connection_statistics().open == 6)
        for _ in range(3):  # several new connections in a row, each served
            await _still_answers(small_platform)
        assert small_platform.connection_statistics().cut_for_room >= 1
    finally:
        for stream in held:
            await stream.aclose()


async def test_a_connection_closed_before_its_request_frees_its_slot_at_once(
    small_platform: LocalPlatform,
) -> None:
    port = _port(small_platform)
    with trio.fail_after(IO_DEADLINE):
        for _ in range(6):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(b"G")
            await stream.aclose()
        await small_platform.wait_for(lambda: not small_platform.connection_statistics().open)
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(KEYLESS_REQUEST)
        answer = await _response_head(stream)
        await stream.aclose()
    assert answer.startswith(b"HTTP/1.1 401")
    assert small_platform.connection_statistics().refused_busy == 0


@pytest.fixture
async def capped_platform() -> AsyncIterator[LocalPlatform]:
    async with open_local_platform(max_connections=4) as platform:
        yield platform


async def test_connections_past_the_global_cap_are_refused_with_503_logged_once(
    capped_platform: LocalPlatform, caplog: pytest.LogCaptureFixture
) -> None:
    """Other loopback addresses do not share 127.0.0.1's bound, but all of
    them together stay under the cap: past it, 503 (never a hang), one log line."""
    platform = capped_platform
    port = _port(platform)
    demo = platform.agents[0]
    held: list[trio.SocketStream] = []
    answers = []
    try:
        with caplog.at_level(logging.WARNING, logger="band_trio.local"):
            with trio.fail_after(IO_DEADLINE):
                # keyless connections may take half of the cap
                held.append(await _keyless_keep_alive(port, "127.0.0.2"))
                held.append(await _keyless_keep_alive(port, "127.0.0.3"))
                for _ in range(3):
                    extra = await trio.open_tcp_stream("127.0.0.1", port, local_address="127.0.0.3")
                    await extra.send_all(KEYLESS_REQUEST)
                    answers.append(await _receive_until_closed(extra))
                    await extra.aclose()
                held.append(await _keyed_keep_alive(port, demo, "127.0.0.2"))
                held.append(await _keyed_keep_alive(port, demo, "127.0.0.3"))
                await platform.wait_for(lambda: platform.connection_statistics().open == 4)
                for _ in range(3):
                    extra = await trio.open_tcp_stream("127.0.0.1", port)
                    answers.append(await _receive_until_closed(extra))
                    await extra.aclose()
    finally:
        for stream in held:
            await stream.aclose()
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 503"), answer
        assert b"too_many_connections" in answer
    assert platform.connection_statistics().refused_full == 6
    full = [r for r in caplog.records if "connections, its maximum" in r.getMessage()]
    assert len(full) == 1
    with trio.fail_after(IO_DEADLINE):
        await platform.wait_for(lambda: not platform.connection_statistics().open)
    await _still_answers(platform)


@pytest.mark.skipif(sys.platform == "win32", reason="no RLIMIT_NOFILE on Windows")
def test_the_soft_file_limit_is_raised_where_allowed() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lower = min(soft, 256)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lower, hard))
    try:
        wanted = lower + 64 if hard == resource.RLIM_INFINITY else min(lower + 64, hard)
        assert raise_file_limit(wanted) == wanted
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == wanted
        assert raise_file_limit(lower) == wanted  # never lowered
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert default_max_connections(1024) == 768


async def test_a_refusal_of_the_platform_is_json_without_a_500(
    band_platform: LocalPlatform,
) -> None:
    # a body nested too deeply: a typed 4xx, never 500
    agent = band_platform.agents[0]
    deep = "[" * 10_000 + "]" * 10_000
    async with httpx.AsyncClient(
        base_url=band_platform.rest_url, headers={"x-api-key": agent.api_key}
    ) as client:
        with trio.fail_after(IO_DEADLINE):
            response = await client.post(
                "/api/v1/agent/memories", content=deep, headers={"content-type": "application/json"}
            )
            assert response.status_code in (400, 422)
            assert_error(response, response.status_code)
    assert fail(408, "x").code == "request_timeout"
    await _still_answers(band_platform)


# ---------------------------------------------------------------- terminal text

TERMINAL_CONTROLS = ["\x1b]52;c;aGk=\x07", "ok\r\x1b[K", "\x9b2J", "a\u202eb", "tab\there"]


@pytest.mark.parametrize("control", TERMINAL_CONTROLS)
async def test_titles_and_names_refuse_control_and_bidi_characters(
    band_platform: LocalPlatform, agent: httpx.AsyncClient, room: str, control: str
) -> None:
    before = json.dumps(band_platform.state.snapshot(), default=str)
    async with user_http(band_platform) as user:
        with trio.fail_after(IO_DEADLINE):
            answers = [
                (
                    await user.post("/chats", json={"chat": {"title": f"t {control}"}}),
                    "/chat/title",
                ),
                (
                    await user.post("/agents/register", json={"agent": {"name": f"n {control}"}}),
                    "/agent/name",
                ),
                (
                    await user.put("/profile", json={"user": {"first_name": f"f {control}"}}),
                    "/user/first_name",
                ),
                (
                    await agent.patch(f"/chats/{room}", json={"chat": {"title": f"t {control}"}}),
                    "/chat/title",
                ),
            ]
    for response, pointer in answers:
        assert pointer in assert_error(response, 422, "validation_error")["details"]
    assert json.dumps(band_platform.state.snapshot(), default=str) == before
    with pytest.raises(ValueError, match="control characters"):
        band_platform.register_agent(f"n {control}", "")
    with pytest.raises(ValueError, match="control characters"):
        band_platform.create_user(f"n {control}", "someone")
    await _still_answers(band_platform)


@pytest.mark.parametrize("handle", ["alice\n", "alice\r\n", "ali\nce", "alice/x"])
def test_a_handle_is_matched_whole(handle: str) -> None:
    platform = LocalPlatform()
    with pytest.raises(ValueError, match="invalid user handle"):
        platform.create_user("Alice", handle)
    assert platform.state.by_handle("alice") is None


# ---------------------------------------------------------------- browsers


async def _upgrade_answer(platform: LocalPlatform, creds: AgentCredentials, origin: str) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", _port(platform))
    ws = WSConnection(ConnectionType.CLIENT)
    target = f"/api/v1/socket/websocket?api_key={creds.api_key}&agent_id={creds.id}&vsn=2.0.0"
    host = f"127.0.0.1:{_port(platform)}"
    with trio.fail_after(IO_DEADLINE):
        await stream.send_all(
            ws.send(Request(host=host, target=target, extra_headers=[(b"origin", origin.encode())]))
        )
        head = await _response_head(stream)
    await stream.aclose()
    return head


async def test_a_websocket_upgrade_from_another_origin_is_refused(
    band_platform: LocalPlatform, demo: AgentCredentials
) -> None:
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{_port(band_platform) + 1}"):
        head = await _upgrade_answer(band_platform, demo, origin)
        assert head.startswith(b"HTTP/1.1 403"), (origin, head)
        assert not band_platform.connected(demo.id)
    # the platform's own origin, as its pages would send it, is served
    own = await _upgrade_answer(band_platform, demo, band_platform.rest_url)
    assert own.startswith(b"HTTP/1.1 101"), own


async def test_api_answers_say_nosniff(band_platform: LocalPlatform) -> None:
    async with httpx.AsyncClient(base_url=band_platform.rest_url) as client:
        with trio.fail_after(IO_DEADLINE):
            answers = [
                await client.get("/api/v1/agent/me"),
                await client.get(
                    "/api/v1/agent/me", headers={"x-api-key": band_platform.agents[0].api_key}
                ),
                await client.get("/no/such/path"),
            ]
    for response in answers:
        assert response.headers["x-content-type-options"] == "nosniff"
        assert len(response.headers.get_list("x-content-type-options")) == 1


# ---------------------------------------------------------------- stored amplification


def _memory(metadata: object) -> dict[str, object]:
    return {
        "memory": {
            "content": "x",
            "system": "long_term",
            "type": "semantic",
            "segment": "user",
            "metadata": metadata,
        }
    }


async def test_memory_metadata_is_bounded_as_an_events(
    band_platform: LocalPlatform, agent: httpx.AsyncClient
) -> None:
    with trio.fail_after(IO_DEADLINE):
        small = await agent.post("/memories", json=_memory({"note": "a" * 1000}))
        large = await agent.post("/memories", json=_memory({"note": "a" * 70_000}))
    assert small.status_code == 201, small.text
    assert "/memory/metadata" in assert_error(large, 422, "validation_error")["details"]
    assert band_platform.state.snapshot()["memories"] == 1
    await _still_answers(band_platform)


async def test_a_body_with_too_many_values_is_refused_before_decoding(
    band_platform: LocalPlatform, agent: httpx.AsyncClient
) -> None:
    body = json.dumps(_memory({"empty": [{}] * MAX_JSON_VALUES}))
    assert len(body) < 1024 * 1024
    with trio.fail_after(IO_DEADLINE):
        response = await agent.post(
            "/memories", content=body, headers={"content-type": "application/json"}
        )
    error = assert_error(response, 422, "validation_error")
    assert "too many values" in error["message"]
    assert band_platform.state.snapshot()["memories"] == 0
    await _still_answers(band_platform)


async def test_an_integer_of_too_many_digits_is_refused(
    band_platform: LocalPlatform, agent: httpx.AsyncClient
) -> None:
    longest = int("9" * MAX_JSON_INTEGER_DIGITS)
    with trio.fail_after(IO_DEADLINE):
        accepted = await agent.post("/memories", json=_memory({"n": -longest}))
        refused = await agent.post("/memories", json=_memory({"n": longest * 10 + 9}))
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["data"]["metadata"]["n"] == -longest
    error = assert_error(refused, 422, "validation_error")
    assert f"more than {MAX_JSON_INTEGER_DIGITS} digits" in error["message"]
    assert band_platform.state.snapshot()["memories"] == 1


async def test_a_large_body_is_decoded_in_a_worker_thread(
    band_platform: LocalPlatform, agent: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decoding a large body would stop every other client of the event loop."""
    threads: list[int] = []
    decode = asgi.decode_json

    def recording(body: bytes) -> object:
        threads.append(threading.get_ident())
        return decode(body)

    monkeypatch.setattr(asgi, "decode_json", recording)
    small = _memory({"note": "a" * 100})
    large = _memory({"note": "a" * 100, "padding": " " * INLINE_JSON_BYTES})
    with trio.fail_after(IO_DEADLINE):
        stored = [await agent.post("/memories", json=body) for body in (small, large)]
        # a refusal found in the worker thread is the same answer as inline
        refused = await agent.post("/memories", json={"memory": [1] * INLINE_JSON_BYTES})
    assert [response.status_code for response in stored] == [201, 201]
    assert_error(refused, 422, "validation_error")
    assert threads[0] == threading.get_ident()
    assert threads[1] != threading.get_ident()
    assert threads[2] != threading.get_ident()


def test_the_collector_is_paused_while_a_body_is_decoded_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    states: list[bool] = []
    decode = asgi.decode_json

    def recording(body: bytes) -> object:
        states.append(gc.isenabled())
        return decode(body)

    monkeypatch.setattr(asgi, "decode_json", recording)
    assert gc.isenabled()
    assert asgi._decode_body(b'{"a": 1}').unwrap() == {"a": 1}
    assert gc.isenabled()
    gc.disable()  # turned off by someone else: left off
    try:
        assert asgi._decode_body(b"[").refusal is not None
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert states == [False, False]


def test_the_size_of_json_is_checked_without_writing_all_of_it() -> None:
    assert not json_longer_than({"a": "é" * 10}, len(json_bytes({"a": "é" * 10})))
    assert json_longer_than({"a": "é" * 10}, len(json_bytes({"a": "é" * 10})) - 1)
    assert not json_longer_than([1.5, None, True, {"k": []}], 100)
    written: list[int] = []

    def counting() -> object:
        for index in range(1_000_000):
            written.append(index)
            yield index

    class Lazy(list[int]):
        def __iter__(self) -> object:  # type: ignore[override]
            return counting()

        def __bool__(self) -> bool:
            return True

    assert json_longer_than(Lazy(), 1000)
    assert len(written) < 1000


# ---------------------------------------------------------------- idle sockets


async def _open_websocket(
    platform: LocalPlatform, creds: AgentCredentials
) -> tuple[trio.SocketStream, WSConnection]:
    stream = await trio.open_tcp_stream("127.0.0.1", _port(platform))
    ws = WSConnection(ConnectionType.CLIENT)
    target = f"/api/v1/socket/websocket?api_key={creds.api_key}&agent_id={creds.id}&vsn=2.0.0"
    await stream.send_all(ws.send(Request(host="localhost", target=target)))
    accepted = False
    while not accepted:
        ws.receive_data(await stream.receive_some(65536))
        accepted = any(isinstance(e, AcceptConnection) for e in ws.events())
    return stream, ws


async def _close_code(stream: trio.SocketStream, ws: WSConnection) -> int | None:
    while True:
        data = await stream.receive_some(65536)
        ws.receive_data(data or None)
        for event in ws.events():
            if isinstance(event, CloseConnection):
                return event.code
        if not data:
            return None


async def test_sockets_without_frames_or_with_a_held_message_are_closed_after_a_minute(
    band_platform: LocalPlatform, demo: AgentCredentials, autojump_clock: trio.testing.MockClock
) -> None:
    silent, silent_ws = await _open_websocket(band_platform, demo)
    # another agent: a second socket of the same one would supersede the first
    other = band_platform.register_agent("Other", "a second agent")
    holding, holding_ws = await _open_websocket(band_platform, other)
    # most of a message, never finished: its fragments wait in the server's buffer
    await holding.send_all(holding_ws.send(TextMessage(data="x" * 960_000, message_finished=False)))
    started = trio.current_time()
    with trio.fail_after(WEBSOCKET_IDLE_TIMEOUT + IO_DEADLINE):
        codes = [await _close_code(silent, silent_ws), await _close_code(holding, holding_ws)]
    assert codes == [1001, 1001]
    assert trio.current_time() - started <= WEBSOCKET_IDLE_TIMEOUT + 1
    assert band_platform.statistics().idle_closes == 2
    await silent.aclose()
    await holding.aclose()
    await _still_answers(band_platform)


async def test_a_socket_trickling_a_message_is_closed_a_minute_after_its_last_whole_one(
    band_platform: LocalPlatform, demo: AgentCredentials, autojump_clock: trio.testing.MockClock
) -> None:
    """Fragments of one message every 10 s are not frames the socket is waiting
    for: only a whole message counts, so the socket is cut like a silent one."""
    stream, ws = await _open_websocket(band_platform, demo)

    async def trickle() -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while True:
                await stream.send_all(ws.send(TextMessage(data="x", message_finished=False)))
                await trio.sleep(10)

    started = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trickle)
        with trio.fail_after(2 * WEBSOCKET_IDLE_TIMEOUT):
            code = await _close_code(stream, ws)
        nursery.cancel_scope.cancel()
    assert code == 1001
    assert trio.current_time() - started <= WEBSOCKET_IDLE_TIMEOUT + 1
    await stream.aclose()
    await _still_answers(band_platform)


async def test_a_socket_that_sends_heartbeats_stays_open(
    band_platform: LocalPlatform, demo: AgentCredentials, autojump_clock: trio.testing.MockClock
) -> None:
    stream, ws = await _open_websocket(band_platform, demo)
    for ref in range(1, 6):  # two and a half minutes, a heartbeat every 30 s
        await trio.sleep(30)
        frame = json.dumps([None, str(ref), "phoenix", "heartbeat", {}])
        await stream.send_all(ws.send(TextMessage(data=frame)))
    with trio.fail_after(IO_DEADLINE):
        await band_platform.wait_for(lambda: band_platform.statistics().frames_in >= 5)
    assert band_platform.connected(demo.id)
    assert band_platform.statistics().idle_closes == 0
    await stream.aclose()


# ---------------------------------------------------------------- uploads in flight


async def test_uploads_in_flight_per_key_are_bounded() -> None:
    async with open_local_platform(max_upload_bytes=1000) as platform:
        demo = platform.agents[0]
        async with HumanClient(base_url=platform.rest_url, api_key=platform.user.api_key) as human:
            created = await human.create_room("uploads")
            await human.add_participant(created["id"], demo.id)
        path = f"/api/v1/agent/chats/{created['id']}/files"
        head = (
            f"PUT {path} HTTP/1.1\r\nhost: localhost\r\nx-api-key: {demo.api_key}\r\n"
            f"x-file-name: big.bin\r\ncontent-length: 1000\r\n\r\n"
        ).encode()
        stalled = []
        async with agent_http(platform, demo) as client:
            with trio.fail_after(IO_DEADLINE):
                for _ in range(UPLOAD_BYTES_IN_FLIGHT):
                    stream = await trio.open_tcp_stream("127.0.0.1", _port(platform))
                    await stream.send_all(head + b"x" * 10)  # and then nothing
                    stalled.append(stream)
                # both reserved (the platform wakes its waiters on each reservation)
                await platform.wait_for(lambda: sum(platform.app._uploading.values()) == 2000)
                refused = await client.put(
                    path.removeprefix("/api/v1/agent"),
                    content=b"y" * 10,
                    headers={"x-file-name": "small.txt"},
                )
                assert_error(refused, 429, "too_many_uploads")
                for stream in stalled:
                    await stream.aclose()
                await platform.wait_for(lambda: not platform.app._uploading)
                accepted = await client.put(
                    path.removeprefix("/api/v1/agent"),
                    content=b"y" * 10,
                    headers={"x-file-name": "small.txt"},
                )
        assert accepted.status_code == 201, accepted.text
