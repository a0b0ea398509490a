"""pytest plugin registered under the ``band_trio`` entry point.

Fixtures:

* ``band_platform`` — a :class:`~band_trio.local.LocalPlatform` listening on a
  free loopback port, started in the test's nursery (needs pytest-trio; use it
  from Trio tests). It stops when the test ends.
"""

from __future__ import annotations

import pytest
import trio

from band_trio.local import LocalPlatform


@pytest.fixture
async def band_platform(nursery: trio.Nursery) -> LocalPlatform:
    """A running local Band platform with a user and the demo agent."""
    platform = LocalPlatform(host="127.0.0.1", port=0)
    await nursery.start(platform.serve)
    return platform
