"""Drive the OFFICIAL generated REST client (``band-client-rest``) against a platform.

This script runs only with the python of the band-client-rest virtual
environment (``tests/interop/venvs.py``); band-trio never imports it. It calls
every agent endpoint (all 38: protocol, "Agent endpoints (/api/v1/agent) — summary
table") and every human endpoint ("Human endpoints (/api/v1/me) — brief") through
``band_rest.RestClient``, so each response is parsed
by the official pydantic models, and adds the checks the client skips:

* bodies the client hides (204s, optional responses, error bodies, file bytes)
  are validated against the official ``Error`` / ``ValidationError`` models or
  compared byte for byte;
* the raw JSON of every parsed response is compared with what the lax pydantic
  parse produced, so a number sent as a string or a bool sent as ``0`` is caught;
* a few protocol facts the official SDK relies on (attempt numbers, 204 from an
  empty ``/next``, the 422 ``/processing_attempt`` detail, ...).

Input: the platform description as JSON, the shape printed by
``band-trio platform --json`` (``rest_url``, ``user`` {id, api_key, handle},
``agents`` [{id, api_key, name, handle}]), given as argv[1] (a JSON text or a
path to a file) or in the environment variable ``BAND_PLATFORM_JSON``.

Output: one JSON object per call on stdout, ``{"endpoint", "side", "case",
"ok", "error", "status", "implemented", "unknown_keys"}``. Diagnostics go to
stderr. Exit status 0 when every call passed, 1 when any failed, 2 on bad input.
API keys never appear in the output.

Reference: docs/reference/protocol.rst.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import importlib.metadata
import inspect
import json
import os
import re
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pydantic
from band_rest import (
    AgentActivityDetail,
    AgentMemoryCreateRequest,
    AgentMemoryCreateRequestMetadata,
    AgentRegisterRequest,
    ChatEventRequest,
    ChatMessageRequest,
    ChatMessageRequestMentionsItem,
    ChatRoomRequest,
    CreateContactRequestRequestContactRequest,
    CreateMyChatRoomRequestChat,
    Error,
    ParticipantRequest,
    RenameAgentChatRequestChat,
    RestClient,
    UpdateMyProfileRequestUser,
)
from band_rest import ValidationError as PlatformValidationError
from band_rest.core.api_error import ApiError
from band_rest.core.parse_error import ParsingError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from endpoints import AGENT_ENDPOINTS, HUMAN_ENDPOINTS, HUMAN_OPTIONAL

#: Every call fails fast: retries would hide a wrong status behind a later success.
REQUEST_OPTIONS: dict[str, Any] = {"max_retries": 0, "timeout_in_seconds": 20}


class Prerequisite(Exception):
    """An earlier step did not produce a value this step needs."""


def need(value: Any, what: str) -> Any:
    if value is None:
        raise Prerequisite(f"prerequisite missing: {what}")
    return value


class _NoRetry:
    """Proxy over the official client that adds REQUEST_OPTIONS to every call."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if callable(attr):

            @functools.wraps(attr)  # keeps the signature for `supported`
            def call(*args: Any, **kwargs: Any) -> Any:
                kwargs.setdefault("request_options", REQUEST_OPTIONS)
                return attr(*args, **kwargs)

            return call
        return _NoRetry(attr)


def supported(method: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
    """The keyword arguments this version of the client accepts (band-sdk 6.0.1
    pins band-client-rest 0.0.46, which lacks a few query parameters of 0.0.51)."""
    params = inspect.signature(method).parameters
    return {k: v for k, v in kwargs.items() if k in params}


# ---------------------------------------------------------------- raw checks


def lax_coercions(value: Any, raw: Any, path: str, out: list[str]) -> None:
    """Record where pydantic's lax mode converted the raw JSON to another type."""
    if isinstance(value, pydantic.BaseModel):
        if not isinstance(raw, dict):
            out.append(f"{path}: object expected, got {type(raw).__name__}")
            return
        for name, info in type(value).model_fields.items():
            key = info.alias or name
            if key in raw:
                lax_coercions(getattr(value, name), raw[key], f"{path}.{key}", out)
        return
    if isinstance(value, bool):
        good = isinstance(raw, bool)
    elif isinstance(value, int):
        good = isinstance(raw, int) and not isinstance(raw, bool)
    elif isinstance(value, float):
        good = isinstance(raw, (int, float)) and not isinstance(raw, bool)
    elif isinstance(value, (dt.datetime, dt.date, str)):
        good = isinstance(raw, str)
    elif isinstance(value, (list, tuple)):
        if not isinstance(raw, list):
            out.append(f"{path}: array expected, got {type(raw).__name__}")
            return
        for i, (v, r) in enumerate(zip(value, raw, strict=False)):
            lax_coercions(v, r, f"{path}[{i}]", out)
        return
    elif isinstance(value, dict):
        if not isinstance(raw, dict):
            out.append(f"{path}: object expected, got {type(raw).__name__}")
            return
        for k, v in value.items():
            if k in raw:
                lax_coercions(v, raw[k], f"{path}.{k}", out)
        return
    else:
        good = True
    if not good:
        out.append(f"{path}: {type(raw).__name__} {raw!r:.40} coerced to {type(value).__name__}")


def unknown_keys(value: Any, path: str, out: list[str]) -> None:
    """Record keys the official models do not declare (kept as extras)."""
    if isinstance(value, pydantic.BaseModel):
        if not path.endswith(".metadata"):  # message metadata is free-form by design
            out.extend(f"{path}.{key}" for key in value.model_extra or {})
        for name in type(value).model_fields:
            unknown_keys(getattr(value, name), f"{path}.{name}", out)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            unknown_keys(item, f"{path}[{i}]", out)


def template_regex(endpoint: str) -> re.Pattern[str]:
    method, path = endpoint.split(" ", 1)
    pattern = re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(path))
    return re.compile(rf"{method} {pattern}")


# ---------------------------------------------------------------- the harness


@dataclass
class Outcome:
    ok: bool
    value: Any = None  # what the official client returned (a parsed model)
    error_body: Any = None  # the official Error / ValidationError model on an error
    status: int | None = None
    response: httpx.Response | None = None


class Probe:
    def __init__(self, rest_url: str) -> None:
        self.rest_url = rest_url
        self.responses: list[httpx.Response] = []
        self.failures = 0
        self.lines: list[dict[str, Any]] = []

    def client(self, api_key: str) -> Any:
        http = httpx.Client(
            timeout=20, follow_redirects=True, event_hooks={"response": [self.responses.append]}
        )
        return _NoRetry(RestClient(base_url=self.rest_url, api_key=api_key, httpx_client=http))

    def emit(self, line: dict[str, Any]) -> None:
        if not line["ok"]:
            self.failures += 1
        self.lines.append(line)
        print(json.dumps(line), flush=True)

    def step(
        self,
        endpoint: str,
        case: str,
        fn: Callable[[], Any],
        *,
        expect: str = "ok",
        statuses: tuple[int, ...] = (),
        empty_statuses: tuple[int, ...] = (204,),
        error_model: Any = Error,
        check: Callable[[Outcome], str | None] | None = None,
    ) -> Outcome:
        """Run one call and judge it.

        expect: "ok" (2xx, parsed by the official model, data present), "empty"
        (204 with no body: the client returns None), "error" (an ApiError whose
        status is in ``statuses`` and whose body is an ``error_model``), or
        "ok|error" (either of the two).
        """
        assert endpoint in AGENT_ENDPOINTS or endpoint in HUMAN_ENDPOINTS, endpoint
        side = "agent" if endpoint in AGENT_ENDPOINTS else "human"
        mark = len(self.responses)
        value: Any = None
        raised: BaseException | None = None
        try:
            value = fn()
            if hasattr(value, "__next__"):  # a streamed download: consume it now
                value = b"".join(value)
        except Prerequisite as exc:
            self.emit(self._line(endpoint, side, case, False, str(exc), None))
            return Outcome(ok=False)
        except (ApiError, ParsingError, httpx.HTTPError, pydantic.ValidationError) as exc:
            raised = exc
        except Exception as exc:  # a bug in the scenario or the client: report, go on
            raised = exc
        response = self.responses[-1] if len(self.responses) > mark else None
        status = response.status_code if response is not None else None
        problems: list[str] = []
        extras: list[str] = []
        outcome = Outcome(ok=False, value=value, status=status, response=response)
        if response is None:
            problems.append(f"no HTTP response: {type(raised).__name__}: {raised}")
        else:
            seen = f"{response.request.method} {response.request.url.path}"
            if not template_regex(endpoint).fullmatch(seen):
                problems.append(f"client called {seen!r}, not {endpoint!r}")
            try:
                raw = response.content
            except httpx.ResponseNotRead:  # a download streamed into `value`
                raw = value if isinstance(value, bytes) else b""
            if (
                side == "human"
                and endpoint in HUMAN_OPTIONAL
                and status in (404, 405)
                and self._error_body_problem(raw, Error) is None
                and self._route_missing(raw, status)
            ):
                self.emit(self._line(endpoint, side, case, True, None, status, implemented=False))
                return Outcome(ok=True, status=status, response=response)
            want_ok = expect in ("ok", "ok|error")
            want_err = expect in ("error", "ok|error")
            if raised is None and 200 <= (status or 0) < 300:
                if expect == "empty":
                    if value is not None or status not in empty_statuses or raw.strip():
                        problems.append(
                            f"expected {empty_statuses} with an empty body, got {status} {raw[:200]!r}"
                        )
                elif not want_ok:
                    problems.append(f"expected an error {statuses}, got {status} {raw[:200]!r}")
                else:
                    problems.extend(self._success_problems(value, raw, extras))
            elif isinstance(raised, (ApiError, ParsingError)) or status is not None:
                if isinstance(raised, ParsingError):
                    problems.append(
                        f"official model rejected the {status} body: {raised.cause} body={raw[:300]!r}"
                    )
                elif not want_err or (statuses and status not in statuses):
                    problems.append(
                        f"unexpected {status} ({type(raised).__name__}): {raw[:300]!r}"
                        + ("" if raised is None or isinstance(raised, ApiError) else f" {raised}")
                    )
                else:
                    body_problem = self._error_body_problem(raw, error_model)
                    if body_problem:
                        problems.append(body_problem)
                    else:
                        outcome.error_body = pydantic.TypeAdapter(error_model).validate_json(raw)
            else:
                problems.append(f"{type(raised).__name__}: {raised}")
        if not problems and check is not None:
            outcome.ok = True
            try:
                problem = check(outcome)
            except Exception as exc:
                problem = f"check raised {type(exc).__name__}: {exc}"
            if problem:
                problems.append(problem)
        outcome.ok = not problems
        error = "; ".join(problems) if problems else None
        self.emit(self._line(endpoint, side, case, outcome.ok, error, status, extras=extras))
        return outcome

    @staticmethod
    def _line(
        endpoint: str,
        side: str,
        case: str,
        ok: bool,
        error: str | None,
        status: int | None,
        *,
        implemented: bool = True,
        extras: list[str] | None = None,
    ) -> dict[str, Any]:
        return {
            "endpoint": endpoint,
            "side": side,
            "case": case,
            "ok": ok,
            "error": error,
            "status": status,
            "implemented": implemented,
            "unknown_keys": sorted(set(extras or [])),
        }

    @staticmethod
    def _success_problems(value: Any, raw: bytes, extras: list[str]) -> list[str]:
        problems: list[str] = []
        if isinstance(value, bytes):
            return problems  # file bytes are compared by the step's check
        if not isinstance(value, pydantic.BaseModel):
            problems.append(f"client returned {type(value).__name__}, not a parsed model")
            return problems
        try:
            raw_json = json.loads(raw)
        except ValueError:
            problems.append(f"body is not JSON: {raw[:200]!r}")
            return problems
        if "data" in type(value).model_fields and getattr(value, "data", None) is None:
            problems.append("envelope has no `data`")
        coerced: list[str] = []
        lax_coercions(value, raw_json, "$", coerced)
        if coerced:
            problems.append("types differ from the official models: " + ", ".join(coerced[:8]))
        unknown_keys(value, "$", extras)
        return problems

    @staticmethod
    def _error_body_problem(raw: bytes, model: Any) -> str | None:
        try:
            pydantic.TypeAdapter(model).validate_json(raw)
        except pydantic.ValidationError as exc:
            name = getattr(model, "__name__", str(model))
            return f"error body is not the official {name}: {exc.errors()[:3]} body={raw[:300]!r}"
        return None

    @staticmethod
    def _route_missing(raw: bytes, status: int) -> bool:
        """True when a 404/405 error body says the route itself is unknown."""
        if status == 405:
            return True
        text = raw.decode(errors="replace").lower()
        return "route" in text or "no such" in text or "unknown path" in text


# ---------------------------------------------------------------- helpers


def mention(pid: str, handle: str | None = None) -> ChatMessageRequestMentionsItem:
    if handle:
        return ChatMessageRequestMentionsItem(id=pid, handle=handle)
    return ChatMessageRequestMentionsItem(id=pid)


def data(outcome: Outcome) -> Any:
    return getattr(outcome.value, "data", None) if outcome.ok else None


def expect_eq(actual: Any, wanted: Any, what: str) -> str | None:
    return None if actual == wanted else f"{what}: expected {wanted!r}, got {actual!r}"


def first_problem(*problems: str | None) -> str | None:
    return next((p for p in problems if p), None)


def ids(items: Any) -> list[str]:
    return [item.id for item in items or []]


# ---------------------------------------------------------------- scenario


def run(config: dict[str, Any]) -> int:
    probe = Probe(config["rest_url"].rstrip("/"))
    user = config["user"]
    agent_cfg = config["agents"][0]
    human = probe.client(user["api_key"])
    a = probe.client(agent_cfg["api_key"])
    ha = human.human_api_agents
    hc = human.human_api_chats
    hm = human.human_api_messages
    hp = human.human_api_participants
    hk = human.human_api_contacts
    hmem = human.human_api_memories
    tag = uuid.uuid4().hex[:8]
    state: dict[str, Any] = {}

    def get(key: str) -> Any:
        return need(state.get(key), key)

    # -- identity and a second agent (B) registered by the human ------------
    me = probe.step(
        "GET /api/v1/agent/me",
        "identity",
        lambda: a.agent_api_identity.get_agent_me(),
        check=lambda o: first_problem(
            expect_eq(o.value.data.id, agent_cfg["id"], "id"),
            None
            if (o.value.data.description or "").strip()
            else "description is empty (the SDK refuses to start)",
        ),
    )
    state["a_handle"] = data(me).handle if data(me) else agent_cfg.get("handle")
    probe.step(
        "GET /api/v1/agent/me",
        "wrong key -> 401",
        lambda: probe.client("not-a-key").agent_api_identity.get_agent_me(),
        expect="error",
        statuses=(401,),
    )
    reg = probe.step(
        "POST /api/v1/me/agents/register",
        "register agent B",
        lambda: ha.register_my_agent(
            agent=AgentRegisterRequest(name=f"Probe B {tag}", description="interop probe peer")
        ),
        check=lambda o: None if o.value.data.credentials.api_key else "empty api_key",
    )
    if data(reg):
        state["b_id"] = data(reg).agent.id
        state["b"] = probe.client(data(reg).credentials.api_key)
    b = state.get("b")
    b_me = probe.step(
        "GET /api/v1/agent/me",
        "identity of B",
        lambda: need(b, "agent B").agent_api_identity.get_agent_me(),
    )
    state["b_handle"] = data(b_me).handle if data(b_me) else None
    probe.step("GET /api/v1/me/agents", "list", lambda: ha.list_my_agents())
    probe.step("GET /api/v1/me/profile", "get", lambda: human.human_api_profile.get_my_profile())
    probe.step(
        "PUT /api/v1/me/profile",
        "update",
        lambda: human.human_api_profile.update_my_profile(
            user=UpdateMyProfileRequestUser(first_name="Probe", last_name="Human")
        ),
    )

    # -- a room made by the human, with agent A in it ------------------------
    r1 = probe.step(
        "POST /api/v1/me/chats",
        "create room R1",
        lambda: hc.create_my_chat_room(chat=CreateMyChatRoomRequestChat(title=f"probe {tag}")),
    )
    state["r1"] = data(r1).id if data(r1) else None
    probe.step(
        "POST /api/v1/me/chats/{chat_id}/participants",
        "add A to R1",
        lambda: hp.add_my_chat_participant(
            get("r1"), participant=ParticipantRequest(participant_id=agent_cfg["id"])
        ),
        check=lambda o: expect_eq(o.value.data.id, agent_cfg["id"], "participant id"),
    )
    probe.step(
        "POST /api/v1/me/chats/{chat_id}/participants",
        "add B to R1",
        lambda: hp.add_my_chat_participant(
            get("r1"), participant=ParticipantRequest(participant_id=get("b_id"), role="member")
        ),
    )
    probe.step(
        "GET /api/v1/me/chats/{chat_id}/participants",
        "list R1",
        lambda: hp.list_my_chat_participants(get("r1")),
        check=lambda o: (
            None
            if {agent_cfg["id"], user["id"]} <= set(ids(o.value.data))
            else f"roster lacks the user or A: {ids(o.value.data)}"
        ),
    )
    probe.step(
        "DELETE /api/v1/me/chats/{chat_id}/participants/{id}",
        "remove B from R1",
        lambda: hp.remove_my_chat_participant(get("r1"), get("b_id")),
    )
    probe.step(
        "GET /api/v1/me/chats",
        "list",
        lambda: hc.list_my_chats(),
        check=lambda o: None if state.get("r1") in ids(o.value.data) else "R1 not listed",
    )
    probe.step(
        "GET /api/v1/me/chats",
        "include participants",
        lambda: hc.list_my_chats(include=["participants"], limit=10),
    )
    probe.step(
        "GET /api/v1/me/chats/{id}",
        "get R1",
        lambda: hc.get_my_chat_room(
            get("r1"), **supported(hc.get_my_chat_room, include="message_counts")
        ),
    )
    probe.step(
        "GET /api/v1/me/chats",
        "wrong key -> 401",
        lambda: probe.client("not-a-key").human_api_chats.list_my_chats(),
        expect="error",
        statuses=(401,),
    )
    foreign = probe.step(
        "POST /api/v1/me/chats",
        "a room without A",
        lambda: hc.create_my_chat_room(chat=CreateMyChatRoomRequestChat(title=f"private {tag}")),
    )
    state["foreign"] = data(foreign).id if data(foreign) else None
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/participants",
        "room A is not in -> 404/403",
        lambda: a.agent_api_participants.list_agent_chat_participants(get("foreign")),
        expect="error",
        statuses=(403, 404),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages",
        "room A is not in -> 404/403",
        lambda: a.agent_api_messages.create_agent_chat_message(
            get("foreign"), message=ChatMessageRequest(content="hi", mentions=[mention(user["id"])])
        ),
        expect="error",
        statuses=(403, 404),
    )
    probe.step("GET /api/v1/me/peers", "list", lambda: human.human_api_peers.list_my_peers())
    probe.step(
        "GET /api/v1/me/peers",
        "not in R1, agents",
        lambda: human.human_api_peers.list_my_peers(not_in_chat=get("r1"), type="Agent"),
    )

    # -- agent-side room calls ---------------------------------------------
    probe.step(
        "GET /api/v1/agent/chats",
        "list",
        lambda: a.agent_api_chats.list_agent_chats(page=1, page_size=100),
        check=lambda o: first_problem(
            None if state.get("r1") in ids(o.value.data) else "R1 not listed for A",
            None
            if (o.value.metadata and o.value.metadata.total_pages)
            else "metadata.total_pages missing (the SDK stops paging)",
        ),
    )
    probe.step(
        "GET /api/v1/agent/chats",
        "include participants",
        lambda: a.agent_api_chats.list_agent_chats(
            **supported(a.agent_api_chats.list_agent_chats, include="participants")
        ),
    )
    r2 = probe.step(
        "POST /api/v1/agent/chats",
        "create room R2 (task_id null)",
        lambda: a.agent_api_chats.create_agent_chat(
            chat=ChatRoomRequest(title=f"agent room {tag}", task_id=None)
        ),
    )
    state["r2"] = data(r2).id if data(r2) else None
    probe.step(
        "GET /api/v1/agent/chats/{id}",
        "get R2",
        lambda: a.agent_api_chats.get_agent_chat(get("r2")),
    )
    probe.step(
        "GET /api/v1/agent/chats/{id}",
        "unknown room -> 404",
        lambda: a.agent_api_chats.get_agent_chat(str(uuid.uuid4())),
        expect="error",
        statuses=(404,),
    )
    probe.step(
        "PATCH /api/v1/agent/chats/{id}",
        "rename R2",
        lambda: a.agent_api_chats.rename_agent_chat(
            get("r2"), chat=RenameAgentChatRequestChat(title=f"renamed {tag}")
        ),
        check=lambda o: expect_eq(o.value.data.title, f"renamed {tag}", "title"),
    )
    probe.step("GET /api/v1/agent/peers", "list", lambda: a.agent_api_peers.list_agent_peers())
    probe.step(
        "GET /api/v1/agent/peers",
        "not in R2",
        lambda: a.agent_api_peers.list_agent_peers(not_in_chat=get("r2"), page=1, page_size=50),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/participants",
        "add sibling B to R2",
        lambda: a.agent_api_participants.add_agent_chat_participant(
            get("r2"), participant=ParticipantRequest(participant_id=get("b_id"), role="member")
        ),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/participants",
        "list R2",
        lambda: a.agent_api_participants.list_agent_chat_participants(get("r2")),
        check=lambda o: None if state.get("b_id") in ids(o.value.data) else "B not in R2 roster",
    )
    probe.step(
        "DELETE /api/v1/agent/chats/{chat_id}/participants/{id}",
        "remove B from R2",
        lambda: a.agent_api_participants.remove_agent_chat_participant(get("r2"), get("b_id")),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/participants",
        "list R1",
        lambda: a.agent_api_participants.list_agent_chat_participants(get("r1")),
    )

    # -- the message lifecycle in R1 ---------------------------------------
    m1 = probe.step(
        "POST /api/v1/me/chats/{chat_id}/messages",
        "human mentions A",
        lambda: hm.send_my_chat_message(
            get("r1"),
            message=ChatMessageRequest(
                content=f"@{state.get('a_handle')} first {tag}",
                mentions=[mention(agent_cfg["id"], state.get("a_handle"))],
            ),
        ),
        check=lambda o: (
            None
            if agent_cfg["id"] in ids(o.value.data.recipients)
            else f"A not among recipients {ids(o.value.data.recipients)}"
        ),
    )
    state["m1"] = data(m1).id if data(m1) else None
    probe.step(
        "POST /api/v1/me/chats/{chat_id}/messages",
        "no mentions -> 422",
        lambda: hm.send_my_chat_message(
            get("r1"), message=ChatMessageRequest(content="nobody", mentions=[])
        ),
        expect="error",
        statuses=(422,),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/messages",
        "actionable (default)",
        lambda: a.agent_api_messages.list_agent_messages(get("r1")),
        check=lambda o: None if state.get("m1") in ids(o.value.data) else "M1 not actionable",
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/messages",
        "cursor path, asc, limit 100",
        lambda: a.agent_api_messages.list_agent_messages(get("r1"), sort_order="asc", limit=100),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/messages",
        "deprecated page path",
        lambda: a.agent_api_messages.list_agent_messages(
            get("r1"), status="pending", page=1, page_size=10
        ),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/messages/next",
        "next = M1",
        lambda: a.agent_api_messages.get_agent_next_message(get("r1")),
        check=lambda o: expect_eq(o.value.data.id, state.get("m1"), "next id"),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processed",
        "before any claim -> 422",
        lambda: a.agent_api_messages.mark_agent_message_processed(get("r1"), get("m1")),
        expect="error",
        statuses=(422,),
        error_model=PlatformValidationError,
        check=lambda o: (
            None
            if o.error_body.error.details.get("/processing_attempt")
            else "details lack /processing_attempt"
        ),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processing",
        "claim M1",
        lambda: a.agent_api_messages.mark_agent_message_processing(get("r1"), get("m1")),
        check=lambda o: first_problem(
            expect_eq(o.status, 200, "status code"),
            expect_eq(o.value.data.status, "processing", "status"),
            expect_eq(o.value.data.attempt_number, 1, "attempt_number"),
            expect_eq(o.value.data.success, True, "success"),
        ),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processing",
        "claim again is idempotent",
        lambda: a.agent_api_messages.mark_agent_message_processing(get("r1"), get("m1")),
        check=lambda o: expect_eq(o.value.data.attempt_number, 1, "attempt_number"),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/activity",
        "working true, tool_call",
        lambda: a.agent_api_activity.report_agent_chat_activity(
            get("r1"), working=True, activity=AgentActivityDetail(kind="tool_call", name="search")
        ),
        check=lambda o: expect_eq(o.value.data.working, True, "working"),
    )
    upload_bytes = f"interop probe file {tag}\n".encode()
    up = probe.step(
        "PUT /api/v1/agent/chats/{chat_id}/files",
        "upload",
        lambda: a.agent_api_files.upload_agent_chat_file(
            get("r1"),
            request=upload_bytes,
            request_options={
                **REQUEST_OPTIONS,
                "additional_headers": {
                    "x-file-name": "probe.txt",
                    "x-file-sha256": hashlib.sha256(upload_bytes).hexdigest(),
                    "content-type": "text/plain",
                },
            },
        ),
        check=lambda o: first_problem(
            expect_eq(o.value.data.sha_256, hashlib.sha256(upload_bytes).hexdigest(), "sha256"),
            expect_eq(o.value.data.bytes, len(upload_bytes), "bytes"),
        ),
    )
    state["file"] = data(up).id if data(up) else None
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/files/{id}",
        "download",
        lambda: a.agent_api_files.download_agent_chat_file(get("r1"), get("file")),
        check=lambda o: expect_eq(o.value, upload_bytes, "bytes"),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/files/{id}",
        "range bytes=0-7",
        lambda: a.agent_api_files.download_agent_chat_file(
            get("r1"), get("file"), range="bytes=0-7"
        ),
        check=lambda o: first_problem(
            expect_eq(o.status, 206, "status code"), expect_eq(o.value, upload_bytes[:8], "bytes")
        ),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/files/{id}",
        "unsatisfiable range -> 416",
        lambda: a.agent_api_files.download_agent_chat_file(
            get("r1"), get("file"), range="bytes=100000-"
        ),
        expect="error",
        statuses=(416,),
        # band-client-rest declares the 416 body as a JSON string, not an Error.
        error_model=str,
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/files/{id}",
        "unknown file -> 404",
        lambda: a.agent_api_files.download_agent_chat_file(get("r1"), str(uuid.uuid4())),
        expect="error",
        statuses=(404,),
    )
    reply = probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages",
        "reply mentioning the human, with the file",
        lambda: a.agent_api_messages.create_agent_chat_message(
            get("r1"),
            message=ChatMessageRequest(
                content=f"@{user['handle']} reply {tag}",
                mentions=[mention(user["id"], user["handle"])],
                attachment_ids=[get("file")],
            ),
        ),
        check=lambda o: expect_eq(o.value.data.success, True, "success"),
    )
    state["reply"] = data(reply).id if data(reply) else None
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages",
        "mention outside the room -> 422",
        lambda: a.agent_api_messages.create_agent_chat_message(
            get("r1"),
            message=ChatMessageRequest(content="hello", mentions=[mention(str(uuid.uuid4()))]),
        ),
        expect="error",
        statuses=(422,),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages",
        "unknown attachment -> 422",
        lambda: a.agent_api_messages.create_agent_chat_message(
            get("r1"),
            message=ChatMessageRequest(
                content="hello", mentions=[mention(user["id"])], attachment_ids=[str(uuid.uuid4())]
            ),
        ),
        expect="error",
        statuses=(422,),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/events",
        "thought, metadata null",
        lambda: a.agent_api_events.create_agent_chat_event(
            get("r1"),
            event=ChatEventRequest(content="thinking", message_type="thought", metadata=None),
        ),
        check=lambda o: expect_eq(o.value.data.message_type, "thought", "message_type"),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/events",
        "tool_call with metadata",
        lambda: a.agent_api_events.create_agent_chat_event(
            get("r1"),
            event=ChatEventRequest(
                content=json.dumps({"name": "search", "args": {"q": "x"}, "tool_call_id": "t1"}),
                message_type="tool_call",
                metadata={
                    "function": {"name": "search", "arguments": "{}"},
                    "id": "t1",
                    "type": "function",
                },
            ),
        ),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/events",
        "unknown type -> 422",
        lambda: a.agent_api_events.create_agent_chat_event(
            get("r1"), event=ChatEventRequest(content="x", message_type="usage")
        ),
        expect="error",
        statuses=(422,),
    )
    ctx = probe.step(
        "GET /api/v1/agent/chats/{chat_id}/context",
        "first page, no params",
        lambda: a.agent_api_context.get_agent_chat_context(get("r1")),
        check=lambda o: (
            None
            if {state.get("m1"), state.get("reply")} <= set(ids(o.value.data))
            else f"context lacks M1 or the reply: {ids(o.value.data)}"
        ),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/context",
        "limit 1, then follow the cursor",
        lambda: _follow_cursor(a.agent_api_context.get_agent_chat_context, get("r1")),
        check=lambda o: None if o.value.data else "second page empty",
    )
    del ctx
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/activity",
        "working false",
        lambda: a.agent_api_activity.report_agent_chat_activity(get("r1"), working=False),
        check=lambda o: expect_eq(o.value.data.working, False, "working"),
    )
    probe.step(
        "POST /api/v1/agent/delegation/token",
        "exchange (refusal body must be an official Error)",
        lambda: a.agent_api_delegation.exchange_delegated_token(
            audience=str(uuid.uuid4()), message_id=get("m1")
        ),
        expect="ok|error",
        statuses=(401, 403, 404, 422, 429),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processed",
        "settle M1",
        lambda: a.agent_api_messages.mark_agent_message_processed(get("r1"), get("m1")),
        check=lambda o: first_problem(
            expect_eq(o.status, 200, "status code"),
            expect_eq(o.value.data.status, "processed", "status"),
            expect_eq(o.value.data.success, True, "success"),
        ),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processed",
        "settle twice -> 422 /processing_attempt",
        lambda: a.agent_api_messages.mark_agent_message_processed(get("r1"), get("m1")),
        expect="error",
        statuses=(422,),
        error_model=PlatformValidationError,
        check=lambda o: (
            None
            if o.error_body.error.details.get("/processing_attempt")
            else "details lack /processing_attempt"
        ),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processed",
        "unknown message -> 404 not_found",
        lambda: a.agent_api_messages.mark_agent_message_processed(get("r1"), str(uuid.uuid4())),
        expect="error",
        statuses=(404,),
        check=lambda o: expect_eq(o.error_body.error.code, "not_found", "code"),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/messages/next",
        "nothing left -> 204 empty",
        lambda: a.agent_api_messages.get_agent_next_message(get("r1")),
        expect="empty",
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/messages",
        "status processed",
        lambda: a.agent_api_messages.list_agent_messages(get("r1"), status="processed"),
        check=lambda o: None if state.get("m1") in ids(o.value.data) else "M1 not processed",
    )

    # -- failure and retry: M2 ------------------------------------------------
    m2 = probe.step(
        "POST /api/v1/me/chats/{chat_id}/messages",
        "human mentions A again",
        lambda: hm.send_my_chat_message(
            get("r1"),
            message=ChatMessageRequest(
                content=f"second {tag}", mentions=[mention(agent_cfg["id"])]
            ),
        ),
    )
    state["m2"] = data(m2).id if data(m2) else None
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processing",
        "claim M2",
        lambda: a.agent_api_messages.mark_agent_message_processing(get("r1"), get("m2")),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/failed",
        "fail M2",
        lambda: a.agent_api_messages.mark_agent_message_failed(
            get("r1"), get("m2"), error="probe failure"
        ),
        check=lambda o: first_problem(
            expect_eq(o.status, 200, "status code"),
            expect_eq(o.value.data.status, "failed", "status"),
        ),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/failed",
        "fail without attempt -> 422",
        lambda: a.agent_api_messages.mark_agent_message_failed(get("r1"), get("m2"), error="again"),
        expect="error",
        statuses=(422,),
        error_model=PlatformValidationError,
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/messages",
        "status failed",
        lambda: a.agent_api_messages.list_agent_messages(get("r1"), status="failed"),
        check=lambda o: None if state.get("m2") in ids(o.value.data) else "M2 not failed",
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/messages/next",
        "failed stays actionable",
        lambda: a.agent_api_messages.get_agent_next_message(get("r1")),
        check=lambda o: expect_eq(o.value.data.id, state.get("m2"), "next id"),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processing",
        "re-claim M2 = attempt 2",
        lambda: a.agent_api_messages.mark_agent_message_processing(get("r1"), get("m2")),
        check=lambda o: expect_eq(o.value.data.attempt_number, 2, "attempt_number"),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/messages/{id}/processed",
        "settle M2",
        lambda: a.agent_api_messages.mark_agent_message_processed(get("r1"), get("m2")),
    )
    probe.step(
        "GET /api/v1/me/chats/{chat_id}/messages",
        "read R1",
        lambda: hm.list_my_chat_messages(get("r1")),
        check=lambda o: None if state.get("reply") in ids(o.value.data) else "reply not visible",
    )
    probe.step(
        "GET /api/v1/me/chats/{chat_id}/messages",
        "text only, limit 2",
        lambda: hm.list_my_chat_messages(get("r1"), message_type="text", limit=2),
    )

    # -- tasks and board ------------------------------------------------------
    t1 = probe.step(
        "POST /api/v1/agent/chats/{chat_id}/tasks",
        "create",
        lambda: a.agent_api_chat_tasks.create_chat_task(
            get("r1"), subject=f"task {tag}", detail="do it"
        ),
    )
    state["t1"] = data(t1).id if data(t1) else None
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/tasks",
        "list active",
        lambda: a.agent_api_chat_tasks.list_chat_tasks(get("r1")),
        check=lambda o: None if state.get("t1") in ids(o.value.data) else "task not listed",
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/tasks/{id}",
        "update status and comment",
        lambda: a.agent_api_chat_tasks.update_chat_task(
            get("r1"), get("t1"), status="in_progress", comment="started", active_form="probing"
        ),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/tasks/{id}",
        "get by id, with history",
        lambda: a.agent_api_chat_tasks.get_chat_task(get("r1"), get("t1"), include="history"),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/tasks/{id}",
        "get by number",
        lambda: a.agent_api_chat_tasks.get_chat_task(
            get("r1"), str(data(t1).number if data(t1) else need(None, "t1"))
        ),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/tasks/{id}/history",
        "history",
        lambda: a.agent_api_chat_tasks.get_chat_task_history(get("r1"), get("t1")),
    )
    probe.step(
        "POST /api/v1/agent/chats/{chat_id}/tasks",
        "supersede task 1",
        lambda: a.agent_api_chat_tasks.create_chat_task(
            get("r1"), subject=f"task v2 {tag}", supersedes_id=get("t1")
        ),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/tasks",
        "list all",
        lambda: a.agent_api_chat_tasks.list_chat_tasks(get("r1"), state="all", limit=10),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/board",
        "get",
        lambda: a.agent_api_chat_tasks.get_chat_board(get("r1")),
    )
    probe.step(
        "PUT /api/v1/agent/chats/{chat_id}/board",
        "set goal",
        lambda: a.agent_api_chat_tasks.put_chat_board(
            get("r1"), goal_title="Goal", goal_summary="Summary"
        ),
        check=lambda o: expect_eq(o.value.data.goal_title, "Goal", "goal_title"),
    )
    probe.step(
        "GET /api/v1/agent/chats/{chat_id}/board",
        "with history",
        lambda: a.agent_api_chat_tasks.get_chat_board(get("r1"), include="history"),
    )

    # -- agent contacts: A asks B, B approves, A removes ---------------------
    bc = b
    probe.step(
        "POST /api/v1/agent/contacts/add",
        "A asks B",
        lambda: a.agent_api_contacts.add_agent_contact(handle=get("b_handle"), message="hi"),
    )
    probe.step(
        "GET /api/v1/agent/contacts/requests",
        "B sees it",
        lambda: need(bc, "agent B").agent_api_contacts.list_agent_contact_requests(),
        check=lambda o: (
            None
            if any(r.from_handle == state.get("a_handle") for r in (o.value.data.received or []))
            else "request from A not received"
        ),
    )
    probe.step(
        "POST /api/v1/agent/contacts/requests/respond",
        "B approves",
        lambda: need(bc, "agent B").agent_api_contacts.respond_to_agent_contact_request(
            action="approve", handle=get("a_handle")
        ),
        check=lambda o: expect_eq(o.value.data.status, "approved", "status"),
    )
    probe.step(
        "GET /api/v1/agent/contacts",
        "A lists B",
        lambda: a.agent_api_contacts.list_agent_contacts(page=1, page_size=50),
        check=lambda o: (
            None
            if any(c.handle == state.get("b_handle") for c in (o.value.data or []))
            else "B not a contact"
        ),
    )
    probe.step(
        "POST /api/v1/agent/contacts/remove",
        "A removes B",
        lambda: a.agent_api_contacts.remove_agent_contact(handle=get("b_handle")),
    )
    probe.step(
        "POST /api/v1/agent/contacts/add",
        "A asks B again",
        lambda: a.agent_api_contacts.add_agent_contact(handle=get("b_handle")),
    )
    probe.step(
        "GET /api/v1/agent/contacts/requests",
        "A sees it sent",
        lambda: a.agent_api_contacts.list_agent_contact_requests(
            sent_status="all", page=1, page_size=20
        ),
    )
    probe.step(
        "POST /api/v1/agent/contacts/requests/respond",
        "A cancels",
        lambda: a.agent_api_contacts.respond_to_agent_contact_request(
            action="cancel", handle=get("b_handle")
        ),
    )
    probe.step(
        "POST /api/v1/agent/contacts/add",
        "unknown handle -> 404",
        lambda: a.agent_api_contacts.add_agent_contact(handle=f"nobody-{tag}/none"),
        expect="error",
        statuses=(404,),
    )

    # -- human contacts --------------------------------------------------------
    probe.step(
        "POST /api/v1/agent/contacts/add",
        "A asks the human",
        lambda: a.agent_api_contacts.add_agent_contact(handle=user["handle"]),
    )
    received = probe.step(
        "GET /api/v1/me/contacts/requests",
        "human sees A's request",
        lambda: hk.list_received_contact_requests(),
    )
    state["req_a"] = next(
        (r.id for r in (data(received) or []) if r.requester_id == agent_cfg["id"]), None
    )
    probe.step(
        "POST /api/v1/me/contacts/requests/{id}/approve",
        "human approves A",
        lambda: hk.approve_contact_request(get("req_a")),
    )
    probe.step(
        "GET /api/v1/me/contacts",
        "human lists contacts",
        lambda: hk.list_my_contacts(),
    )
    probe.step(
        "POST /api/v1/me/contacts/resolve",
        "resolve B's handle",
        lambda: hk.resolve_handle(handle=get("b_handle")),
    )
    probe.step(
        "POST /api/v1/me/contacts/remove",
        "human removes A",
        lambda: hk.remove_my_contact(handle=get("a_handle")),
    )
    probe.step(
        "POST /api/v1/agent/contacts/add",
        "B asks the human",
        lambda: need(bc, "agent B").agent_api_contacts.add_agent_contact(handle=user["handle"]),
    )
    received2 = probe.step(
        "GET /api/v1/me/contacts/requests",
        "human sees B's request",
        lambda: hk.list_received_contact_requests(page=1, page_size=20),
    )
    state["req_b"] = next(
        (r.id for r in (data(received2) or []) if r.requester_id == state.get("b_id")), None
    )
    probe.step(
        "POST /api/v1/me/contacts/requests/{id}/reject",
        "human rejects B",
        lambda: hk.reject_contact_request(get("req_b")),
    )
    sent = probe.step(
        "POST /api/v1/me/contacts/requests",
        "human asks B",
        lambda: hk.create_contact_request(
            contact_request=CreateContactRequestRequestContactRequest(
                recipient_handle=get("b_handle"), message="hi"
            )
        ),
    )
    state["req_h"] = data(sent).id if data(sent) else None
    probe.step(
        "GET /api/v1/me/contacts/requests/sent",
        "human lists sent",
        lambda: hk.list_sent_contact_requests(status="pending"),
        check=lambda o: (
            None if state.get("req_h") in ids(o.value.data) else "sent request not listed"
        ),
    )
    probe.step(
        "DELETE /api/v1/me/contacts/requests/{id}",
        "human cancels",
        lambda: hk.cancel_contact_request(get("req_h")),
    )

    # -- memories ---------------------------------------------------------------
    def memory(content: str, **kw: Any) -> AgentMemoryCreateRequest:
        return AgentMemoryCreateRequest(
            content=content,
            system="long_term",
            type="semantic",
            segment="user",
            thought="probe",
            metadata=AgentMemoryCreateRequestMetadata(tags=["probe"], references=[]),
            **kw,
        )

    mem1 = probe.step(
        "POST /api/v1/agent/memories",
        "create (agent scope)",
        lambda: a.agent_api_memories.create_agent_memory(memory=memory(f"fact {tag}")),
    )
    state["mem1"] = data(mem1).id if data(mem1) else None
    mem2 = probe.step(
        "POST /api/v1/agent/memories",
        "create (about the human)",
        lambda: a.agent_api_memories.create_agent_memory(
            memory=memory(f"user fact {tag}", scope="subject", subject_id=user["id"])
        ),
    )
    state["mem2"] = data(mem2).id if data(mem2) else None
    mem3 = probe.step(
        "POST /api/v1/agent/memories",
        "create (to archive)",
        lambda: a.agent_api_memories.create_agent_memory(memory=memory(f"old fact {tag}")),
    )
    state["mem3"] = data(mem3).id if data(mem3) else None
    probe.step(
        "POST /api/v1/agent/memories",
        "type/system mismatch -> 422",
        lambda: a.agent_api_memories.create_agent_memory(
            memory=AgentMemoryCreateRequest(
                content="x", system="sensory", type="semantic", segment="user", thought="t"
            )
        ),
        expect="error",
        statuses=(422,),
    )
    probe.step(
        "GET /api/v1/agent/memories",
        "list",
        lambda: a.agent_api_memories.list_agent_memories(),
        check=lambda o: None if state.get("mem1") in ids(o.value.data) else "memory not listed",
    )
    probe.step(
        "GET /api/v1/agent/memories",
        "subject, search",
        lambda: a.agent_api_memories.list_agent_memories(
            scope="subject", subject_id=user["id"], content_query="fact", limit=10
        ),
    )
    probe.step(
        "GET /api/v1/agent/memories/{id}",
        "get",
        lambda: a.agent_api_memories.get_agent_memory(get("mem1")),
    )
    probe.step(
        "POST /api/v1/agent/memories/{id}/supersede",
        "supersede",
        lambda: a.agent_api_memories.supersede_agent_memory(get("mem1")),
        check=lambda o: expect_eq(o.value.data.status, "superseded", "status"),
    )
    probe.step(
        "POST /api/v1/agent/memories/{id}/archive",
        "archive",
        lambda: a.agent_api_memories.archive_agent_memory(get("mem3")),
        check=lambda o: expect_eq(o.value.data.status, "archived", "status"),
    )
    probe.step(
        "GET /api/v1/agent/memories/{id}",
        "unknown -> 404",
        lambda: a.agent_api_memories.get_agent_memory(str(uuid.uuid4())),
        expect="error",
        statuses=(404,),
    )
    probe.step("GET /api/v1/me/memories", "list", lambda: hmem.list_user_memories())
    probe.step("GET /api/v1/me/memories/{id}", "get", lambda: hmem.get_user_memory(get("mem2")))
    probe.step(
        "POST /api/v1/me/memories/{id}/archive",
        "archive",
        lambda: hmem.archive_user_memory(get("mem2")),
        check=lambda o: expect_eq(o.value.data.status, "archived", "status"),
    )
    probe.step(
        "POST /api/v1/me/memories/{id}/restore",
        "restore",
        lambda: hmem.restore_user_memory(get("mem2")),
        check=lambda o: expect_eq(o.value.data.status, "active", "status"),
    )
    probe.step(
        "POST /api/v1/me/memories/{id}/supersede",
        "supersede",
        lambda: hmem.supersede_user_memory(get("mem2")),
        check=lambda o: expect_eq(o.value.data.status, "superseded", "status"),
    )
    probe.step(
        "DELETE /api/v1/me/memories/{id}",
        "hard delete",
        lambda: hmem.delete_user_memory(get("mem2")),
        expect="empty",
        empty_statuses=(200, 204),
    )
    probe.step(
        "GET /api/v1/me/memories/{id}",
        "deleted -> 404",
        lambda: hmem.get_user_memory(get("mem2")),
        expect="error",
        statuses=(404,),
    )

    # -- deletions ---------------------------------------------------------------
    throwaway = probe.step(
        "POST /api/v1/me/agents/register",
        "register throwaway agents",
        lambda: ha.register_my_agent(
            agent=AgentRegisterRequest(name=f"Probe C {tag}", description="to delete")
        ),
    )
    probe.step(
        "DELETE /api/v1/me/agents/{id}",
        "delete",
        lambda: ha.delete_my_agent(
            data(throwaway).agent.id if data(throwaway) else need(None, "agent C"), force=True
        ),
    )
    job = probe.step(
        "POST /api/v1/me/chats/bulk-delete",
        "bulk delete R2",
        lambda: human.human_api_bulk_deletions.bulk_delete_my_chats(ids=[get("r2")]),
    )
    probe.step(
        "GET /api/v1/me/bulk-deletions/{id}",
        "show job",
        lambda: human.human_api_bulk_deletions.show_my_bulk_deletion(
            data(job).id if data(job) else need(None, "job")
        ),
    )
    probe.step(
        "POST /api/v1/me/agents/bulk-delete",
        "bulk delete B",
        lambda: human.human_api_bulk_deletions.bulk_delete_my_agents(ids=[get("b_id")], force=True),
    )

    covered = {line["endpoint"] for line in probe.lines}
    missing = [e for e in (*AGENT_ENDPOINTS, *HUMAN_ENDPOINTS) if e not in covered]
    if missing:  # a scenario bug, reported as a failure so it cannot pass silently
        for endpoint in missing:
            probe.emit(
                Probe._line(
                    endpoint,
                    "agent" if endpoint in AGENT_ENDPOINTS else "human",
                    "coverage",
                    False,
                    "never called",
                    None,
                )
            )
    version = importlib.metadata.version("band-client-rest")
    print(
        f"probe: band-client-rest {version}: {len(probe.lines)} calls, {probe.failures} failed",
        file=sys.stderr,
    )
    return 1 if probe.failures else 0


def _follow_cursor(fetch: Callable[..., Any], chat_id: str) -> Any:
    first = fetch(chat_id, limit=1)
    meta = first.metadata
    if not (meta and meta.has_more and meta.next_cursor):
        raise Prerequisite(f"first page of 1 has no next cursor: {meta}")
    return fetch(chat_id, cursor=meta.next_cursor, limit=1)


def load_config(argv: list[str]) -> dict[str, Any]:
    text = argv[1] if len(argv) > 1 else os.environ.get("BAND_PLATFORM_JSON", "")
    if text and not text.lstrip().startswith("{"):
        text = Path(text).read_text()
    config = json.loads(text)
    for key in ("rest_url", "user", "agents"):
        if key not in config:
            raise KeyError(key)
    if not config["agents"]:
        raise ValueError("the platform description lists no agent")
    return dict(config)


def main() -> int:
    try:
        config = load_config(sys.argv)
    except (OSError, ValueError, KeyError) as exc:
        print(f"probe: bad platform description: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return run(config)


if __name__ == "__main__":
    sys.exit(main())
