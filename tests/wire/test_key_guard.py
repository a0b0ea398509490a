"""The API key travels in clear text only to this machine, unless allowed."""

from __future__ import annotations

import pytest

from band_trio.errors import BandConfigError
from band_trio.wire._key_guard import is_local_host
from band_trio.wire.link import BandLink, LinkConfig
from band_trio.wire.rest import RestClient, RestConfig

KEY = "sk-band-NEVER-IN-CLEAR-TEXT"


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", True),
        ("::", True),
        ("localhost", True),
        ("LOCALHOST.", True),
        ("agent.localhost", True),
        ("band.test", False),
        ("10.0.0.5", False),
        ("192.168.1.20", False),
        ("::ffff:10.0.0.5", False),
        ("localhost.example.com", False),
        ("127.0.0.1.nip.io", False),
        ("", False),
    ],
)
def test_local_hosts(host: str, local: bool) -> None:
    assert is_local_host(host) is local


@pytest.mark.parametrize("url", ["http://band.test", "http://10.0.0.5:4000", "HTTP://Band.Test"])
def test_rest_refuses_a_plain_text_key_to_another_machine(url: str) -> None:
    with pytest.raises(BandConfigError, match="clear text") as info:
        RestClient(base_url=url, api_key=KEY)
    assert "allow_insecure_transport" in str(info.value)
    assert KEY not in str(info.value)


@pytest.mark.parametrize(
    "url",
    ["https://band.test", "http://127.0.0.1:4000", "http://localhost:4000", "http://[::1]:4000"],
)
def test_rest_accepts_tls_or_this_machine(url: str) -> None:
    RestClient(base_url=url, api_key=KEY)


def test_rest_plain_text_to_another_machine_when_allowed() -> None:
    rest = RestClient(
        base_url="http://10.0.0.5:4000",
        api_key=KEY,
        config=RestConfig(allow_insecure_transport=True),
    )
    assert rest.base_url == "http://10.0.0.5:4000"


@pytest.mark.parametrize("url", ["ws://band.test/socket", "http://10.0.0.5:4000/socket"])
def test_link_refuses_a_plain_text_key_to_another_machine(url: str) -> None:
    with pytest.raises(BandConfigError, match="clear text") as info:
        BandLink(agent_id="a", api_key=KEY, ws_url=url)
    assert "LinkConfig.allow_insecure_transport" in str(info.value)
    assert KEY not in str(info.value)


@pytest.mark.parametrize(
    "url",
    ["wss://band.test/socket", "https://band.test/socket", "ws://127.0.0.1:4000/socket"],
)
def test_link_accepts_tls_or_this_machine(url: str) -> None:
    BandLink(agent_id="a", api_key=KEY, ws_url=url)


def test_link_plain_text_to_another_machine_when_allowed() -> None:
    link = BandLink(
        agent_id="a",
        api_key=KEY,
        ws_url="ws://10.0.0.5:4000/socket",
        config=LinkConfig(allow_insecure_transport=True),
    )
    assert link.url().startswith("ws://10.0.0.5:4000/")
