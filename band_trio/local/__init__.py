"""The embedded local Band platform: REST + Phoenix v2 WebSocket on one loopback port.

* :class:`LocalPlatform` — ``await nursery.start(platform.serve)``;
* :func:`open_local_platform` — ``async with open_local_platform() as platform``;
* :class:`HumanClient` — a small client of the human ``/api/v1/me`` API;
* the pytest fixture ``band_platform`` lives in :mod:`band_trio.testing.plugin`.

It is served by Hypercorn, which comes with the optional extra
``pip install 'band-trio[local]'``. Without it, importing this package raises
:class:`~band_trio.errors.MissingExtraError` naming that command; an agent never
needs it.
"""

from band_trio.local.accounts import AgentCredentials, UserCredentials
from band_trio.local.faults import Fault, FaultInjector
from band_trio.local.hub import HubStatistics
from band_trio.local.human import HumanClient
from band_trio.local.platform import LocalPlatform, open_local_platform
from band_trio.local.refusal import Refusal
from band_trio.local.store import PlatformState

__all__ = [
    "AgentCredentials",
    "Fault",
    "FaultInjector",
    "HubStatistics",
    "HumanClient",
    "LocalPlatform",
    "PlatformState",
    "Refusal",
    "UserCredentials",
    "open_local_platform",
]
