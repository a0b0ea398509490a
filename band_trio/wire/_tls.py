"""TLS certificate verification: on unless the user turns it off by name.

Both clients (REST and WebSocket) take ``tls_verify`` in their config:
``True`` (the default) verifies the platform's certificate and host name
against the system's trust store; an :class:`ssl.SSLContext` brings its own
trust (a private CA); ``False`` turns verification off. Turning it off lets
anyone on the path pose as the platform and read the API key, so it is never
silent: a context that does not verify is refused (only ``False`` turns
verification off), and every client built with ``False`` logs a warning.
"""

from __future__ import annotations

import logging
import ssl

from band_trio.errors import BandConfigError

__all__ = ["check_tls_verify", "client_tls_context"]

logger = logging.getLogger("band_trio.wire.tls")


def check_tls_verify(value: object, *, setting: str) -> None:
    """Validate a ``tls_verify`` setting.

    Raises:
        BandConfigError: ``value`` is neither a bool nor an SSL context, or is
            a context that does not check the certificate and the host name.
    """
    if isinstance(value, bool):
        return
    if not isinstance(value, ssl.SSLContext):
        raise BandConfigError(
            f"{setting} must be True, False or an ssl.SSLContext, got {type(value).__name__}"
        )
    if value.verify_mode != ssl.CERT_REQUIRED or not value.check_hostname:
        raise BandConfigError(
            f"the ssl.SSLContext given as {setting} does not verify the platform's "
            f"certificate and host name; set {setting}=False to turn verification off "
            "explicitly"
        )


def client_tls_context(value: bool | ssl.SSLContext, *, where: str) -> ssl.SSLContext | None:
    """The SSL context a client uses for ``value``; ``None`` means the default
    (verifying) context. Logs a warning when verification is off.

    Args:
        value: a validated ``tls_verify`` setting.
        where: the URL the client talks to (named in the warning).
    """
    if value is True:
        return None
    if isinstance(value, ssl.SSLContext):
        return value
    logger.warning(
        "TLS certificate verification is OFF for %s (tls_verify=False): anyone on the "
        "path can pose as the platform and read the API key",
        where,
    )
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
