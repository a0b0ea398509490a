"""Where the API key may travel in clear text: only to this machine.

The key goes in a header of every REST request and of the WebSocket upgrade.
Over ``http://`` or ``ws://`` anyone on the path reads it, so both clients
refuse a plain-text URL whose host is not this machine (a loopback address,
``localhost``, or the unspecified address a local server listens on) unless
their config explicitly allows it, for a private network the user trusts.
"""

from __future__ import annotations

import ipaddress
from typing import Final

from band_trio.errors import BandConfigError

__all__ = ["is_local_host", "refuse_plaintext_key"]

_PLAIN: Final = frozenset({"http", "ws"})


def is_local_host(host: str) -> bool:
    """Whether ``host`` names this machine: a loopback or unspecified address,
    or ``localhost`` (which resolves only to loopback)."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.partition("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def refuse_plaintext_key(scheme: str, host: str, *, allowed: bool, setting: str) -> None:
    """Refuse to send the key in clear text to another machine.

    Args:
        scheme: the URL's scheme (``http``, ``https``, ``ws``, ``wss``).
        host: the URL's host.
        allowed: the user explicitly allowed plain text to other machines.
        setting: the config field that allows it, named in the error.

    Raises:
        BandConfigError: ``scheme`` is ``http``/``ws``, the host is not this
            machine, and ``allowed`` is False.
    """
    if allowed or scheme.lower() not in _PLAIN or is_local_host(host):
        return
    secure = "https" if scheme.lower() == "http" else "wss"
    raise BandConfigError(
        f"refusing to send the API key in clear text over {scheme}:// to {host!r}: "
        f"use {secure}://, or set {setting}=True for a network you trust"
    )
