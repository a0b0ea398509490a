"""The local platform's routes, one module per surface.

* :mod:`.agent_api` — the agent REST API;
* :mod:`.human_api` — the human ``/api/v1/me`` REST API;
* :mod:`.admin_api` — the local-only admin API;
* :mod:`.websocket` — the Phoenix Channels WebSocket endpoint.
"""
