"""TLS certificate verification is on by default and never turned off silently."""

from __future__ import annotations

import logging
import ssl

import pytest

from band_trio.errors import BandConfigError
from band_trio.wire._pool import PooledTransport
from band_trio.wire.link import BandLink, LinkConfig
from band_trio.wire.rest import RestClient, RestConfig

TLS_LOGGER = "band_trio.wire.tls"


def _unverified_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _pool_context(client: RestClient) -> ssl.SSLContext:
    transport = client._client._transport
    assert isinstance(transport, PooledTransport)
    return transport._context()


def _off_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == TLS_LOGGER and r.levelno == logging.WARNING and "OFF" in r.getMessage()
    ]


@pytest.mark.parametrize("config_class", [RestConfig, LinkConfig])
def test_a_context_that_does_not_verify_is_refused(config_class: type) -> None:
    with pytest.raises(BandConfigError, match="tls_verify=False"):
        config_class(tls_verify=_unverified_context())
    hostname_unchecked = ssl.create_default_context()
    hostname_unchecked.check_hostname = False
    with pytest.raises(BandConfigError, match="does not verify"):
        config_class(tls_verify=hostname_unchecked)


@pytest.mark.parametrize("config_class", [RestConfig, LinkConfig])
def test_tls_verify_takes_only_a_bool_or_a_context(config_class: type) -> None:
    with pytest.raises(BandConfigError, match="tls_verify"):
        config_class(tls_verify="no")


@pytest.mark.parametrize("config_class", [RestConfig, LinkConfig])
def test_verification_is_on_by_default(config_class: type) -> None:
    assert config_class().tls_verify is True


async def test_rest_client_verifies_by_default_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=TLS_LOGGER)
    async with RestClient(base_url="https://band.example", api_key="k") as client:
        context = _pool_context(client)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert _off_warnings(caplog) == []


async def test_rest_client_turned_off_explicitly_warns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=TLS_LOGGER)
    config = RestConfig(tls_verify=False)
    async with RestClient(base_url="https://band.example", api_key="k", config=config) as client:
        context = _pool_context(client)
    assert context.verify_mode == ssl.CERT_NONE
    assert not context.check_hostname
    (warning,) = _off_warnings(caplog)
    assert "https://band.example" in warning


async def test_rest_client_uses_a_verifying_context_it_is_given(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=TLS_LOGGER)
    own = ssl.create_default_context()
    config = RestConfig(tls_verify=own)
    async with RestClient(base_url="https://band.example", api_key="k", config=config) as client:
        assert _pool_context(client) is own
    assert _off_warnings(caplog) == []


def test_link_turned_off_explicitly_warns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=TLS_LOGGER)
    link = BandLink(
        agent_id="a",
        api_key="k",
        ws_url="wss://band.example/api/v1/socket/websocket",
        config=LinkConfig(tls_verify=False),
    )
    assert link._tls_context is not None
    assert link._tls_context.verify_mode == ssl.CERT_NONE
    (warning,) = _off_warnings(caplog)
    assert "wss://band.example" in warning


def test_link_verifies_by_default_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=TLS_LOGGER)
    link = BandLink(agent_id="a", api_key="k", ws_url="wss://band.example/api/v1/socket/websocket")
    # None: trio-websocket builds its default context, which verifies.
    assert link._tls_context is None
    assert _off_warnings(caplog) == []


def test_plain_websocket_needs_no_tls_context(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=TLS_LOGGER)
    link = BandLink(
        agent_id="a",
        api_key="k",
        ws_url="ws://127.0.0.1:1/api/v1/socket/websocket",
        config=LinkConfig(tls_verify=False),
    )
    assert link._tls_context is None
    assert _off_warnings(caplog) == []
