"""pytest plugin registered under the ``band_trio`` entry point.

Fixtures:

* ``band_platform`` — a :class:`~band_trio.local.LocalPlatform` listening on a
  free loopback port, started in the test's nursery (needs pytest-trio; use it
  from Trio tests). It stops when the test ends.

pytest loads this plugin wherever band-trio is installed, so it imports nothing
heavy: the local platform (the optional extra ``band-trio[local]``) is imported
only when a test asks for ``band_platform``. Without the extra, that test errors
with :class:`~band_trio.errors.MissingExtraError`, which names the install command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import trio

    from band_trio.local import LocalPlatform


@pytest.fixture
async def band_platform(nursery: trio.Nursery) -> LocalPlatform:
    """A running local Band platform with a user and the demo agent.

    Raises:
        MissingExtraError: band-trio was installed without the ``local`` extra.
    """
    # Lazy: the local platform is the optional `local` extra.
    from band_trio.local import LocalPlatform

    platform = LocalPlatform(host="127.0.0.1", port=0)
    await nursery.start(platform.serve)
    return platform
