"""``PlatformRuntime``: the agent's two connections to Band, WebSocket and REST.

A :class:`PlatformRuntime` is plain configuration until an :class:`~band_trio.agent.Agent`
serves it: building one does no I/O and opens nothing. ``Agent.serve`` opens the
REST client for the duration of the run (:meth:`PlatformRuntime.open_rest`) and
runs the :class:`~band_trio.wire.link.BandLink` in its root nursery.

The API key is held privately and never appears in a repr, a log line or an
error message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from band_trio.errors import BandConfigError
from band_trio.runtime.config import AgentConfig, AgentSettings
from band_trio.wire.link import BandLink
from band_trio.wire.rest import RestClient

__all__ = ["PlatformRuntime"]


class PlatformRuntime:
    """The agent's identity, its platform URLs and its runtime configuration.

    Args:
        settings: who the agent is and where the platform lives.
        config: the runtime's knobs.
        link_options: extra keyword arguments for :class:`~band_trio.wire.link.BandLink`
            (for example ``config=LinkConfig(...)``); an ``on_conflict`` given
            here overrides ``config.conflict_policy``.
        rest_options: extra keyword arguments for :class:`~band_trio.wire.rest.RestClient`
            (for example ``config=RestConfig(...)`` or a test ``transport``).
    """

    def __init__(
        self,
        settings: AgentSettings,
        config: AgentConfig | None = None,
        *,
        link_options: dict[str, Any] | None = None,
        rest_options: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(settings, AgentSettings):
            raise BandConfigError("settings must be an AgentSettings")
        self.settings = settings
        self.config = config if config is not None else AgentConfig()
        if not isinstance(self.config, AgentConfig):
            raise BandConfigError("config must be an AgentConfig")
        self._link_options = dict(link_options or {})
        self._rest_options = dict(rest_options or {})
        self._rest: RestClient | None = None

    @property
    def agent_id(self) -> str:
        """The agent's id."""
        return self.settings.agent_id

    @property
    def rest_url(self) -> str:
        """The REST origin."""
        return self.settings.rest_url

    @property
    def ws_url(self) -> str:
        """The WebSocket URL."""
        return self.settings.ws_url

    @property
    def rest(self) -> RestClient:
        """The REST client; only available while :meth:`open_rest` is active.

        Raises:
            BandConfigError: the runtime is not being served.
        """
        if self._rest is None:
            raise BandConfigError("the REST client is only available while the agent is serving")
        return self._rest

    @asynccontextmanager
    async def open_rest(self) -> AsyncIterator[RestClient]:
        """Open the REST client for the block (one connection pool for the whole run).

        Raises:
            BandConfigError: the runtime is already open (an agent serves one run at a time).
        """
        if self._rest is not None:
            raise BandConfigError("this agent is already serving")
        client = RestClient(
            base_url=self.settings.rest_url, api_key=self.settings.api_key, **self._rest_options
        )
        self._rest = client
        try:
            async with client:
                yield client
        finally:
            self._rest = None

    def make_link(self) -> BandLink:
        """A fresh WebSocket link for one run.

        Its ``on_conflict`` is ``config.conflict_policy`` unless ``link_options``
        names one.
        """
        options: dict[str, Any] = {"on_conflict": self.config.conflict_policy}
        options.update(self._link_options)
        return BandLink(
            agent_id=self.settings.agent_id,
            api_key=self.settings.api_key,
            ws_url=self.settings.ws_url,
            **options,
        )

    def __repr__(self) -> str:
        return (
            f"PlatformRuntime(agent_id={self.agent_id!r}, rest_url={self.rest_url!r}, "
            f"ws_url={self.ws_url!r})"
        )
