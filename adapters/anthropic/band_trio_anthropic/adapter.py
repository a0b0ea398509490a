"""``AnthropicAdapter``: a band-trio agent that thinks with Claude (tools_adapters.md §5).

Each turn sends the room's conversation to the Messages API with the platform
tools (and any custom tools) offered, runs the tool calls the model makes, feeds
the results back, and repeats until the model stops calling tools, declines with
``band_no_reply``, or the round cap is reached. Nothing reaches the room except
through tools: a model that answers in plain text has not replied, and the
runtime reports the missing reply.

The official ``anthropic`` client is async through anyio, so it runs on Trio
as it is; this module uses no asyncio.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

import anthropic
import attrs

from band_trio import (
    AgentFailure,
    AgentToolsProtocol,
    BandConfigError,
    Capability,
    CustomTools,
    Emit,
    HistoryConverter,
    PlatformMessage,
    SimpleAdapter,
    ToolErrorKind,
    ToolResult,
)
from band_trio.adapter import (
    GENERIC_FAILURE_MESSAGE,
    Usage,
    image_blocks_placeholder,
    post_tool_call,
    post_tool_result,
    render_system_prompt,
    report_failure,
)
from band_trio.tools import ToolCategory
from band_trio_anthropic.converter import AnthropicHistoryConverter

__all__ = [
    "DEFAULT_MAX_HISTORY_MESSAGES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MAX_TOOL_ROUNDS",
    "DEFAULT_MODEL",
    "PROVIDER",
    "AnthropicAdapter",
    "AnthropicAdapterConfig",
]

logger = logging.getLogger("band_trio_anthropic")

PROVIDER: Final = "anthropic"
"""The ``provider`` of the adapter's failure reports."""
DEFAULT_MODEL: Final = "claude-sonnet-5-5"
DEFAULT_MAX_TOKENS: Final = 4096
DEFAULT_MAX_TOOL_ROUNDS: Final = 16
"""Rounds of tool calls one turn may run before it is ended (tools_adapters.md §10 item 8)."""
DEFAULT_MAX_HISTORY_MESSAGES: Final = 200
"""Messages kept per room between turns; older ones are dropped at a user turn."""

_NO_REPLY: Final = "band_no_reply"
_READ_FILE: Final = "band_read_room_file"

Message = dict[str, Any]


def _positive(name: str) -> Any:
    def check(_inst: object, _attr: object, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise BandConfigError(f"{name} must be a positive integer; got {value!r}")

    return check


def _optional_positive(name: str) -> Any:
    check = _positive(name)

    def optional(inst: object, attr: object, value: object) -> None:
        if value is not None:
            check(inst, attr, value)

    return optional


def _text(name: str, *, optional: bool = False, non_blank: bool = False) -> Any:
    def check(_inst: object, _attr: object, value: object) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str) or (non_blank and not value.strip()):
            what = "a non-empty string" if non_blank else "a string"
            raise BandConfigError(f"{name} must be {what}; got {type(value).__name__}")

    return check


@attrs.frozen(kw_only=True)
class AnthropicAdapterConfig:
    """Settings of an :class:`AnthropicAdapter` (immutable; unknown names are a TypeError).

    Attributes:
        model: the Claude model id.
        api_key: the Anthropic API key; None lets the client read
            ``ANTHROPIC_API_KEY``. Never shown in reprs or logs.
        system_prompt: a complete system prompt; when set, ``custom_section``,
            ``include_base_instructions`` and the capability sections are not used.
        custom_section: text added to the rendered prompt (under "Developer
            Instructions" when base instructions are on).
        include_base_instructions: include the Band environment, security,
            activation, delegation and relaying sections.
        max_tokens: the ``max_tokens`` of each model call.
        max_tool_rounds: how many rounds of tool calls one turn may run; the
            turn then ends without another model call (a warning is logged, and
            the runtime reports a missing reply if nothing answered).
        max_history_messages: messages kept per room between turns (None:
            unbounded); the oldest are dropped so the kept part starts at a
            user message that is not a tool result.

    Raises:
        BandConfigError: a value of the wrong type or out of range.
    """

    model: str = attrs.field(default=DEFAULT_MODEL, validator=_text("model", non_blank=True))
    api_key: str | None = attrs.field(
        default=None, repr=False, validator=_text("api_key", optional=True, non_blank=True)
    )
    system_prompt: str | None = attrs.field(
        default=None, validator=_text("system_prompt", optional=True)
    )
    custom_section: str = attrs.field(default="", validator=_text("custom_section"))
    include_base_instructions: bool = True
    max_tokens: int = attrs.field(default=DEFAULT_MAX_TOKENS, validator=_positive("max_tokens"))
    max_tool_rounds: int = attrs.field(
        default=DEFAULT_MAX_TOOL_ROUNDS, validator=_positive("max_tool_rounds")
    )
    max_history_messages: int | None = attrs.field(
        default=DEFAULT_MAX_HISTORY_MESSAGES,
        validator=_optional_positive("max_history_messages"),
    )


def _usage_of(response: Any) -> Usage:
    usage = getattr(response, "usage", None)

    def count(name: str) -> int:
        value = getattr(usage, name, None)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    return Usage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_read_tokens=count("cache_read_input_tokens"),
        cache_write_tokens=count("cache_creation_input_tokens"),
    )


def _error_type(body: object) -> str | None:
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("type"), str):
            return str(error["type"])
    return None


def _image_blocks(result: ToolResult) -> list[dict[str, Any]] | None:
    """The Anthropic image blocks of a ``band_read_room_file`` image result, or None."""
    value = result.value
    if result.is_error or result.tool_name != _READ_FILE or not isinstance(value, Mapping):
        return None
    items = value.get("content")
    if not isinstance(items, list) or not items:
        return None
    blocks: list[dict[str, Any]] = []
    for item in items:
        if not (
            isinstance(item, Mapping)
            and item.get("type") == "image"
            and isinstance(item.get("data"), str)
            and isinstance(item.get("mimeType"), str)
        ):
            return None
        blocks.append(
            {
                "type": "image",
                "source": {"type": "base64", "media_type": item["mimeType"], "data": item["data"]},
            }
        )
    return blocks


def _is_tool_results(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
    )


def _trimmed(messages: list[Message], limit: int | None) -> list[Message]:
    """The newest ``limit`` messages or fewer, starting at a user turn that is
    not a tool result (so no tool_result loses its tool_use)."""
    if limit is None or len(messages) <= limit:
        return messages
    for start in range(len(messages) - limit, len(messages)):
        candidate = messages[start]
        if candidate["role"] == "user" and not _is_tool_results(candidate):
            return messages[start:]
    return messages


class AnthropicAdapter(SimpleAdapter[list[dict[str, Any]]]):
    """Answers Band messages with Claude through the Anthropic Messages API.

    Args:
        config: the settings (default :class:`AnthropicAdapterConfig()`).
        client: the ``anthropic.AsyncAnthropic`` to use (tests point one at a
            stub with ``base_url``). When omitted the adapter creates one on
            first use (api key from the config or ``ANTHROPIC_API_KEY``, the
            client's own retries and timeouts) and closes it in
            :meth:`aclose` / ``cleanup_all``.
        history_converter: converts a room's history on a session bootstrap
            (default :class:`AnthropicHistoryConverter`).
        custom_tools: typed Python tools offered after the platform tools.
        emit: posts of its own; supported ``tool_calls`` and ``usage`` (both
            on by default).
        capabilities: tool families beyond the 8 chat tools: ``memory``,
            ``contacts``, ``tasks``, ``files`` (default none).
        include_tools: offer only these tools.
        exclude_tools: never offer these tools.
        include_categories: offer only tools of these categories.

    Raises:
        BandConfigError: an unsupported emit kind or capability, or a bad config.
    """

    SUPPORTED_EMIT = frozenset({Emit.TOOL_CALLS, Emit.USAGE})
    SUPPORTED_CAPABILITIES = frozenset(
        {Capability.MEMORY, Capability.CONTACTS, Capability.TASKS, Capability.FILES}
    )

    def __init__(
        self,
        config: AnthropicAdapterConfig | None = None,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        history_converter: HistoryConverter[list[dict[str, Any]]] | None = None,
        custom_tools: CustomTools | None = None,
        emit: Emit | str | Iterable[Emit | str] | None = None,
        capabilities: Capability | str | Iterable[Capability | str] | None = None,
        include_tools: Iterable[str] | str | None = None,
        exclude_tools: Iterable[str] | str | None = None,
        include_categories: ToolCategory | str | Iterable[ToolCategory | str] | None = None,
    ) -> None:
        if config is None:
            config = AnthropicAdapterConfig()
        elif not isinstance(config, AnthropicAdapterConfig):
            raise BandConfigError(
                f"config must be an AnthropicAdapterConfig; got {type(config).__name__}"
            )
        if custom_tools is not None and not isinstance(custom_tools, CustomTools):
            raise BandConfigError(
                f"custom_tools must be a CustomTools; got {type(custom_tools).__name__}"
            )
        super().__init__(
            history_converter=history_converter or AnthropicHistoryConverter(),
            emit=emit,
            capabilities=capabilities,
            include_tools=include_tools,
            exclude_tools=exclude_tools,
            include_categories=include_categories,
        )
        self.config = config
        self.custom_tools = custom_tools
        self._client = client
        self._owns_client = client is None
        self._system_prompt: str | None = None
        self._histories: dict[str, list[Message]] = {}
        # room -> (message id, index of its user line) after a failed turn, so a
        # retry of the same message starts from the same place (§10 item 9).
        self._retry_points: dict[str, tuple[str, int]] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.config.model!r})"

    # ------------------------------------------------------------------ lifecycle

    @property
    def system_prompt(self) -> str:
        """The system prompt sent with every call (rendered at ``on_started``)."""
        if self._system_prompt is None:
            self._system_prompt = self._render_prompt()
        return self._system_prompt

    def _render_prompt(self) -> str:
        if self.config.system_prompt is not None:
            return self.config.system_prompt
        return render_system_prompt(
            self.agent_name,
            self.agent_description,
            custom_section=self.config.custom_section,
            include_base_instructions=self.config.include_base_instructions,
            capabilities=self.features.capabilities,
        )

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        """Store the identity and render the system prompt (features are final by now)."""
        await super().on_started(agent_name, agent_description)
        self._system_prompt = self._render_prompt()

    async def on_cleanup(self, room_id: str) -> None:
        """Forget the room's conversation."""
        self._histories.pop(room_id, None)
        self._retry_points.pop(room_id, None)

    async def cleanup_all(self) -> None:
        """Forget every room and close the client the adapter created (the
        agent calls this once at shutdown). The next turn starts afresh."""
        self._histories.clear()
        self._retry_points.clear()
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client the adapter created; an injected client is left open."""
        client, self._client = (self._client, None) if self._owns_client else (None, self._client)
        if client is not None:
            await client.close()

    def history(self, room_id: str) -> list[Message]:
        """A copy of the conversation kept for ``room_id`` (empty when none)."""
        return [dict(m) for m in self._histories.get(room_id, [])]

    def _get_client(self) -> anthropic.AsyncAnthropic:
        if self._client is None:
            self._client = anthropic.AsyncAnthropic(api_key=self.config.api_key)
            self._owns_client = True
        return self._client

    # ------------------------------------------------------------------ one turn

    async def on_message(
        self,
        msg: PlatformMessage,
        tools: AgentToolsProtocol,
        history: list[dict[str, Any]],
        participants_msg: str | None,
        contacts_msg: str | None,
        *,
        is_session_bootstrap: bool,
        room_id: str,
    ) -> None:
        """Run one turn: model calls and tool rounds until the model is done.

        The conversation is kept only when the turn returns or fails with an
        error; a cancelled turn leaves it as it was (the runtime delivers the
        same context again).

        Raises:
            anthropic.APIError: the Messages API failed (after the client's own
                retries); a failure report with the HTTP status was posted first.
            trio.Cancelled: the turn was cancelled; no usage is posted then.
        """
        # Read, not popped: a cancelled turn leaves the conversation as it was,
        # so the retry point must stay for the next attempt.
        retry = self._retry_points.get(room_id)
        if is_session_bootstrap:
            messages = [dict(m) for m in history]
        else:
            messages = list(self._histories.get(room_id, []))
            if retry is not None and retry[0] == msg.id and retry[1] <= len(messages):
                messages = messages[: retry[1]]
        for line in (participants_msg, contacts_msg):
            if line:
                messages.append({"role": "user", "content": f"[System]: {line}"})
        user_index = len(messages)
        messages.append({"role": "user", "content": msg.format_for_llm()})

        usage = Usage()
        try:
            schemas = self._tool_schemas(tools)
            for round_number in range(1, self.config.max_tool_rounds + 1):
                response = await self._create(tools, messages, schemas)
                usage += _usage_of(response)
                blocks = list(getattr(response, "content", None) or [])
                calls = [b for b in blocks if getattr(b, "type", None) == "tool_use"]
                stop_reason = getattr(response, "stop_reason", None)
                if stop_reason != "tool_use" or not calls:
                    self._finish(room_id, messages, blocks, calls, stop_reason)
                    break
                assistant = self._assistant_blocks(blocks)
                results, declined = await self._run_tools(tools, calls)
                # Appended together: the kept conversation never holds a
                # tool_use without its results.
                messages.append({"role": "assistant", "content": assistant})
                messages.append({"role": "user", "content": results})
                if declined:
                    break
                if round_number == self.config.max_tool_rounds:
                    logger.warning(
                        "room %s: turn ended after %d tool rounds (max_tool_rounds)",
                        room_id,
                        round_number,
                    )
        except Exception as exc:
            if _context_overflow(exc):
                # The kept conversation no longer fits the model: start the
                # room afresh (the next attempt sends only its message) rather
                # than fail every later turn of the room the same way.
                logger.warning(
                    "room %s: the conversation exceeds the model's context; "
                    "dropping the room's kept history",
                    room_id,
                )
                self._histories.pop(room_id, None)
                self._retry_points.pop(room_id, None)
                raise
            dropped = self._keep(room_id, messages)
            if user_index >= dropped:
                self._retry_points[room_id] = (msg.id, user_index - dropped)
            else:
                self._retry_points.pop(room_id, None)
            raise
        finally:
            await self.emit_usage(tools, usage)
        self._retry_points.pop(room_id, None)
        self._keep(room_id, messages)

    def _keep(self, room_id: str, messages: list[Message]) -> int:
        """Keep the room's conversation (trimmed); how many old messages were dropped."""
        kept = _trimmed(messages, self.config.max_history_messages)
        self._histories[room_id] = kept
        return len(messages) - len(kept)

    def _finish(
        self,
        room_id: str,
        messages: list[Message],
        blocks: list[Any],
        calls: list[Any],
        stop_reason: object,
    ) -> None:
        """The model stopped without (usable) tool calls: keep its text, run nothing."""
        if calls:
            logger.warning(
                "room %s: %d tool call(s) not run: the model stopped with %r",
                room_id,
                len(calls),
                stop_reason,
            )
        elif stop_reason not in ("end_turn", "stop_sequence"):
            logger.info("room %s: the model stopped with %r", room_id, stop_reason)
        text = " ".join(
            t
            for b in blocks
            if getattr(b, "type", None) == "text" and (t := getattr(b, "text", ""))
        )
        if text.strip():
            messages.append({"role": "assistant", "content": text})

    @staticmethod
    def _assistant_blocks(blocks: list[Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for block in blocks:
            kind = getattr(block, "type", None)
            if kind == "tool_use":
                out.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
            elif kind == "text" and isinstance(block.text, str) and block.text.strip():
                out.append({"type": "text", "text": block.text})
        return out

    def _tool_schemas(self, tools: AgentToolsProtocol) -> list[dict[str, Any]]:
        options = self.features.tool_schema_options()
        if self.custom_tools is not None:
            options["custom_tools"] = self.custom_tools
        return tools.get_tool_schemas("anthropic", **options)

    async def _create(
        self, tools: AgentToolsProtocol, messages: list[Message], schemas: list[dict[str, Any]]
    ) -> Any:
        """One Messages API call; a failure is reported (status, no provider text) and re-raised."""
        request: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "system": self.system_prompt,
            "messages": messages,
        }
        if schemas:
            request["tools"] = schemas
        try:
            return await self._get_client().messages.create(**request)
        except anthropic.APIStatusError as exc:
            kind = _error_type(exc.body)
            request_id = getattr(exc, "request_id", None)
            logger.warning(
                "Anthropic API error: HTTP %s %s (request id %s): %s",
                exc.status_code,
                kind,
                request_id,
                exc.message,
            )
            detail = {"type": kind, "request_id": request_id}
            failure = AgentFailure(
                PROVIDER, GENERIC_FAILURE_MESSAGE, code=exc.status_code, detail=detail
            )
            await report_failure(tools, failure)
            raise
        except anthropic.APIError as exc:
            logger.warning("Anthropic API unavailable: %s: %s", type(exc).__name__, exc)
            code = "timeout" if isinstance(exc, anthropic.APITimeoutError) else None
            await report_failure(tools, AgentFailure.generic(PROVIDER, code=code))
            raise
        except Exception:
            logger.exception("Anthropic API call failed")
            await report_failure(tools, AgentFailure.generic(PROVIDER))
            raise

    async def _run_tools(
        self, tools: AgentToolsProtocol, calls: list[Any]
    ) -> tuple[list[dict[str, Any]], bool]:
        """Run the calls in order; the ``tool_result`` blocks, and whether the
        batch declined (a successful ``band_no_reply`` and no failed call)."""
        emit_events = self.features.emits(Emit.TOOL_CALLS)
        results: list[dict[str, Any]] = []
        declined = failed = False
        for call in calls:
            name, call_id = str(call.name), str(call.id)
            args = call.input if isinstance(call.input, Mapping) else {}
            if emit_events:
                await post_tool_call(tools, name, args, call_id)
            result = await self._execute(tools, name, args)
            images = _image_blocks(result)
            content: str | list[dict[str, Any]] = images if images is not None else result.text
            if emit_events:
                output = image_blocks_placeholder(len(images)) if images is not None else content
                await post_tool_result(tools, name, output, call_id, is_error=result.is_error)
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    "is_error": result.is_error,
                }
            )
            failed = failed or result.is_error
            declined = declined or (name == _NO_REPLY and not result.is_error)
        return results, declined and not failed

    async def _execute(
        self, tools: AgentToolsProtocol, name: str, args: Mapping[str, Any]
    ) -> ToolResult:
        try:
            if self.custom_tools is not None:
                value = await tools.execute_tool_call(name, args, custom_tools=self.custom_tools)
            else:
                value = await tools.execute_tool_call(name, args)
        except Exception as exc:
            # AgentTools never raises here; another tools object might.
            logger.exception("tool %s raised", name)
            return ToolResult.error(
                name, ToolErrorKind.INTERNAL_ERROR, f"Error executing {name}: {exc}"
            )
        if isinstance(value, ToolResult):
            return value
        return ToolResult.ok(name, value)


def _context_overflow(exc: BaseException) -> bool:
    """A 400 saying the request is longer than the model's context window."""
    return isinstance(exc, anthropic.BadRequestError) and "too long" in str(exc.message).lower()
