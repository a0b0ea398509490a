"""The embedded local Band platform: REST + Phoenix v2 WebSocket on one loopback port.

* :class:`LocalPlatform` — ``await nursery.start(platform.serve)``;
* :func:`open_local_platform` — ``async with open_local_platform() as platform``;
* :class:`HumanClient` — a small client of the human ``/api/v1/me`` API;
* :class:`RequestRefusedError` — what the platform's in-process calls
  (``post_message``, ``push_control``) raise when the HTTP call would be refused;
* the pytest fixture ``band_platform`` lives in :mod:`band_trio.testing.plugin`.

It is served by Hypercorn, which comes with the optional extra
``pip install 'band-trio[local]'``. Without it, importing this package raises
:class:`~band_trio.errors.MissingExtraError` naming that command; an agent never
needs it.

Inside, one module per idea: ``server`` (the Trio service), ``app`` and
``asgi`` (the ASGI application and its core), ``connections`` (accepting
TCP connections, each guarded so that none can stop the server), ``routes/`` (one module per
surface: agent API, human API, admin API, WebSocket), ``hub`` (Phoenix
channels), ``store`` and ``directory`` (the sans-io state and its rules),
``contact_book``, ``memories``, ``tasks``, ``files``, ``delegation`` (features
on that state), ``model`` (the records). It imports nothing of the client SDK
but its error root, so the interop tests prove the wire and nothing shared.
"""

from band_trio.local.accounts import AgentCredentials, UserCredentials
from band_trio.local.connections import ConnectionStatistics
from band_trio.local.faults import Fault, FaultInjector, SocketFreeze
from band_trio.local.hub import HubStatistics
from band_trio.local.human import HumanClient
from band_trio.local.refusal import RequestRefusedError
from band_trio.local.server import LocalPlatform, open_local_platform
from band_trio.local.store import PlatformState

__all__ = [
    "AgentCredentials",
    "ConnectionStatistics",
    "Fault",
    "FaultInjector",
    "HubStatistics",
    "HumanClient",
    "LocalPlatform",
    "PlatformState",
    "RequestRefusedError",
    "SocketFreeze",
    "UserCredentials",
    "open_local_platform",
]
