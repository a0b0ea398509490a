"""``AnthropicAdapter``: a band-trio agent that thinks with Claude (tools and
adapters, "Anthropic adapter"; the page is docs/reference/tools-and-adapters.rst).

Each turn sends the room's conversation to the Messages API with the platform
tools (and any custom tools) offered, runs the tool calls the model makes, feeds
the results back, and repeats until the model stops calling tools, declines with
``band_no_reply``, or the round cap is reached. Nothing reaches the room except
through tools: a model that answers in plain text has not replied, and the
runtime reports the missing reply.

What a busy room costs is kept down three ways: prompt-cache breakpoints
(:mod:`band_trio_anthropic.caching`, on by default), a conversation bounded by
tokens and trimmed before every call (:mod:`band_trio_anthropic.history_budget`),
and a "prompt is too long" answer that trims and retries once instead of
failing. Extended thinking is opt-in (:mod:`band_trio_anthropic.thinking`).

The official ``anthropic`` client is async through anyio, so it runs on Trio
as it is; this module uses no asyncio.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

import anthropic
import attrs

from band_trio import (
    AgentToolsProtocol,
    BandConfigError,
    Capability,
    CustomTools,
    Emit,
    HistoryConverter,
    PlatformMessage,
    SimpleAdapter,
)
from band_trio.adapter import (
    PromptSettings,
    ToolCategory,
    Usage,
    config_or_default,
    flag,
    instance_of,
    optional,
    positive_int,
    render_turn_lines,
    text,
)
from band_trio_anthropic.caching import MAX_CACHE_BREAKPOINTS, CachePolicy, count_breakpoints
from band_trio_anthropic.converter import AnthropicHistoryConverter
from band_trio_anthropic.history_budget import (
    estimate_tokens,
    overflow_budget,
    trim_to_budget,
    trim_to_counted_budget,
)
from band_trio_anthropic.models import check_model
from band_trio_anthropic.thinking import (
    MIN_THINKING_BUDGET,
    assistant_content,
    thinking_param,
    thought_texts,
)

__all__ = [
    "DEFAULT_HISTORY_TOKEN_BUDGET",
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
"""The adapter's provider name (``AgentFailure.provider``). The adapter posts no
failure report of its own: a failed Messages API call is logged (HTTP status,
error type, request id; never the provider's text) and raised, and the runtime
reports the message's final failure once, however many attempts failed."""
DEFAULT_MODEL: Final = "claude-sonnet-5-5"
DEFAULT_MAX_TOKENS: Final = 4096
DEFAULT_MAX_TOOL_ROUNDS: Final = 16
"""Rounds of tool calls one turn may run before it is ended (tools and adapters,
"Weak spots" 8)."""
DEFAULT_MAX_HISTORY_MESSAGES: Final = 200
"""Messages kept per room between turns; older ones are dropped at a user turn."""
DEFAULT_HISTORY_TOKEN_BUDGET: Final = 100_000
"""Tokens of conversation sent per call and kept per room (half of a 200k context)."""

_NO_REPLY: Final = "band_no_reply"

Message = dict[str, Any]


def _thinking_budget(_inst: object, _attr: object, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_THINKING_BUDGET:
        raise BandConfigError(
            f"thinking_budget must be an integer of at least {MIN_THINKING_BUDGET}; got {value!r}"
        )


@attrs.frozen(kw_only=True)
class AnthropicAdapterConfig:
    """Settings of an :class:`AnthropicAdapter` (immutable; unknown names are a TypeError).

    Attributes:
        model: the Claude model id; it must be one the installed ``anthropic``
            client knows unless ``allow_unknown_model`` is set.
        allow_unknown_model: accept a model id the client does not list (a
            model newer than the installed client).
        api_key: the Anthropic API key; None lets the client read
            ``ANTHROPIC_API_KEY``. Never shown in reprs or logs.
        system_prompt: a complete system prompt; when set, ``custom_section``,
            ``include_base_instructions`` and the capability sections are not used.
        custom_section: text added to the rendered prompt (under "Developer
            Instructions" when base instructions are on).
        include_base_instructions: include the Band environment, security,
            activation, delegation and relaying sections.
        max_tokens: the ``max_tokens`` of each model call (thinking included).
        max_tool_rounds: how many rounds of tool calls one turn may run; the
            turn then ends without another model call (a warning is logged, and
            the runtime reports a missing reply if nothing answered).
        max_history_messages: messages kept per room between turns (None:
            no count limit); past it, the oldest are dropped (down to three
            quarters of it, for the reason given under
            ``history_token_budget``) so the kept part starts at a user
            message that is not a tool result.
        history_token_budget: the most tokens of conversation sent per call
            and kept per room (None: no token limit). When the conversation
            grows past it, the oldest part is dropped down to three quarters
            of it, so a room trims now and then, not at every turn (every
            trim changes the conversation's start, which the prompt cache
            then has to write again). The current turn is never dropped.
        exact_token_counts: measure the conversation with the Messages API's
            ``count_tokens`` before each model call instead of estimating it
            (one more request per call, a few more when a cut must be found;
            see :mod:`band_trio_anthropic.history_budget` for the estimate).
            The kept conversation is then cut at the next call, not when the
            turn ends.
        cache: where prompt-cache breakpoints go (default
            :class:`~band_trio_anthropic.caching.CachePolicy()`: tools, system,
            and the conversation's previous and latest end); None sends none.
        thinking_budget: turn extended thinking on with this many tokens for
            it per call (at least 1024, less than ``max_tokens``); None: off.

    Raises:
        BandConfigError: a value of the wrong type or out of range.
        UnknownModelError: ``model`` is not known to the installed client and
            ``allow_unknown_model`` is false.
    """

    model: str = attrs.field(default=DEFAULT_MODEL, validator=text("model", blank=False))
    allow_unknown_model: bool = False
    api_key: str | None = attrs.field(
        default=None, repr=False, validator=optional(text("api_key", blank=False))
    )
    system_prompt: str | None = attrs.field(default=None, validator=optional(text("system_prompt")))
    custom_section: str = attrs.field(default="", validator=text("custom_section"))
    include_base_instructions: bool = attrs.field(
        default=True, validator=flag("include_base_instructions")
    )
    max_tokens: int = attrs.field(default=DEFAULT_MAX_TOKENS, validator=positive_int("max_tokens"))
    max_tool_rounds: int = attrs.field(
        default=DEFAULT_MAX_TOOL_ROUNDS, validator=positive_int("max_tool_rounds")
    )
    max_history_messages: int | None = attrs.field(
        default=DEFAULT_MAX_HISTORY_MESSAGES,
        validator=optional(positive_int("max_history_messages")),
    )
    history_token_budget: int | None = attrs.field(
        default=DEFAULT_HISTORY_TOKEN_BUDGET,
        validator=optional(positive_int("history_token_budget")),
    )
    exact_token_counts: bool = False
    cache: CachePolicy | None = attrs.field(
        factory=CachePolicy, validator=optional(instance_of("cache", CachePolicy))
    )
    thinking_budget: int | None = attrs.field(default=None, validator=_thinking_budget)

    def __attrs_post_init__(self) -> None:
        if self.thinking_budget is not None and self.thinking_budget >= self.max_tokens:
            raise BandConfigError(
                f"thinking_budget ({self.thinking_budget}) must be less than "
                f"max_tokens ({self.max_tokens}): thinking counts toward max_tokens"
            )
        check_model(
            self.model,
            allow_unknown=self.allow_unknown_model,
            manual_thinking=self.thinking_budget is not None,
        )


def _usage_of(response: Any) -> Usage:
    usage = getattr(response, "usage", None)
    return Usage.reported(
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
        cache_read_tokens=getattr(usage, "cache_read_input_tokens", None),
        cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None),
    )


def _error_type(body: object) -> str | None:
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("type"), str):
            return str(error["type"])
    return None


def _is_tool_results(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
    )


def _trimmed(messages: list[Message], limit: int | None) -> list[Message]:
    """At most ``limit`` newest messages, starting at a user turn that is not a
    tool result (so no tool_result loses its tool_use); all of them when no
    such start is among the newest ``limit``.

    Past the limit, the cut goes down to three quarters of it when it can (see
    :func:`_trim_target`)."""
    if limit is None or len(messages) <= limit:
        return messages
    size, target = len(messages), max(1, _trim_target(limit))
    # the longest suffix within the target, else the longest within the limit
    for start in itertools.chain(range(size - target, size), range(size - limit, size - target)):
        candidate = messages[start]
        if candidate["role"] == "user" and not _is_tool_results(candidate):
            return messages[start:]
    return messages


def _trim_target(budget: int) -> int:
    # Trimmed below the budget, so the next turns fit without another trim and
    # the conversation's start (the prompt cache's prefix) stays put: a cut at
    # every turn would make every call write the whole conversation again.
    return budget * 3 // 4


class _Turn:
    """The conversation of one turn and where its own part begins."""

    def __init__(self, messages: list[Message], *, begin: int) -> None:
        self.messages = messages
        self.begin = begin
        self.user_index = begin

    def keep(self, suffix: list[Message]) -> None:
        """Replace the conversation by a suffix of it (indexes follow)."""
        dropped = len(self.messages) - len(suffix)
        if dropped:
            self.messages[:] = suffix
            self.begin -= dropped
            self.user_index -= dropped


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
        emit: posts of its own; supported ``tool_calls``, ``usage`` (both
            on by default) and ``thoughts`` (the text of the model's thinking
            blocks as ``thought`` events, when ``thinking_budget`` is set;
            redacted thinking is never posted).
        capabilities: tool families beyond the 8 chat tools: ``memory``,
            ``contacts``, ``tasks``, ``files`` (default none).
        include_tools: offer only these tools.
        exclude_tools: never offer these tools.
        include_categories: offer only tools of these categories.

    Raises:
        BandConfigError: an unsupported emit kind or capability, or a bad config.
    """

    SUPPORTED_EMIT = frozenset({Emit.TOOL_CALLS, Emit.THOUGHTS, Emit.USAGE})
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
        config = config_or_default(config, AnthropicAdapterConfig)
        super().__init__(
            history_converter=history_converter or AnthropicHistoryConverter(),
            # Thoughts are shown only when asked for: the reference's default.
            emit=(Emit.TOOL_CALLS, Emit.USAGE) if emit is None else emit,
            capabilities=capabilities,
            include_tools=include_tools,
            exclude_tools=exclude_tools,
            include_categories=include_categories,
            custom_tools=custom_tools,
            prompt=PromptSettings.of(config),
        )
        self.config = config
        self._client = client
        self._owns_client = client is None
        self._histories: dict[str, list[Message]] = {}
        # room -> (message id, index of its user line) after a failed turn, so a
        # retry of the same message starts from the same place ("Weak spots" 9).
        self._retry_points: dict[str, tuple[str, int]] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.config.model!r})"

    # ------------------------------------------------------------------ lifecycle

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
                retries); logged with its HTTP status, nothing posted: the
                runtime retries the message while attempts remain and posts one
                error event when it fails for the last time.
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
        # The turn's own part (its system lines and message) is never trimmed.
        turn = _Turn(messages, begin=len(messages))
        for line in render_turn_lines(msg, participants_msg, contacts_msg):
            if line.kind == "message":
                turn.user_index = len(messages)
            messages.append({"role": "user", "content": line.text})

        usage = Usage()
        try:
            schemas = self.tool_schemas(tools, "anthropic")
            overflow_retried = False
            round_number = 0
            while round_number < self.config.max_tool_rounds:
                await self._fit(turn)
                try:
                    response = await self._create(turn.messages, schemas, overflow_retried)
                except anthropic.BadRequestError as exc:
                    if overflow_retried or not _context_overflow(exc):
                        raise  # reported by _create
                    if not self._shrink(turn, exc):
                        _log_status_error(exc)
                        raise
                    overflow_retried = True
                    logger.warning(
                        "room %s: the conversation exceeds the model's context; "
                        "trimmed to %d messages, retrying once",
                        room_id,
                        len(turn.messages),
                    )
                    continue
                round_number += 1
                usage += _usage_of(response)
                blocks = list(getattr(response, "content", None) or [])
                await self._post_thoughts(tools, blocks)
                calls = [b for b in blocks if getattr(b, "type", None) == "tool_use"]
                stop_reason = getattr(response, "stop_reason", None)
                if stop_reason != "tool_use" or not calls:
                    self._finish(room_id, turn.messages, blocks, calls, stop_reason)
                    break
                assistant = assistant_content(blocks)
                results, declined = await self._run_tools(tools, calls)
                # Appended together: the kept conversation never holds a
                # tool_use without its results.
                turn.messages.append({"role": "assistant", "content": assistant})
                turn.messages.append({"role": "user", "content": results})
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
                # Even trimmed to fit, the request is too long: keep only this
                # turn's part, so the next attempt does not fail the same way.
                logger.warning(
                    "room %s: the conversation still exceeds the model's context; "
                    "dropping the room's older history",
                    room_id,
                )
                del turn.messages[: turn.begin]
                turn.user_index -= turn.begin
                turn.begin = 0
            dropped = self._keep(room_id, turn.messages, trim_tokens=False)
            if turn.user_index >= dropped:
                self._retry_points[room_id] = (msg.id, turn.user_index - dropped)
            else:
                self._retry_points.pop(room_id, None)
            raise
        finally:
            await self.emit_usage(tools, usage)
        self._retry_points.pop(room_id, None)
        self._keep(room_id, turn.messages, trim_tokens=not self.config.exact_token_counts)

    def _keep(self, room_id: str, messages: list[Message], *, trim_tokens: bool) -> int:
        """Keep the room's conversation (trimmed); how many old messages were dropped."""
        kept = _trimmed(messages, self.config.max_history_messages)
        budget = self.config.history_token_budget
        if trim_tokens and budget is not None and estimate_tokens(kept) > budget:
            kept = trim_to_budget(kept, _trim_target(budget))
        self._histories[room_id] = kept
        return len(messages) - len(kept)

    async def _fit(self, turn: _Turn) -> None:
        """Trim the conversation to the token budget before a model call."""
        budget = self.config.history_token_budget
        if budget is None:
            return
        if self.config.exact_token_counts:
            try:
                size = await self._count_tokens(turn.messages)
                if size <= budget:
                    return
                kept = await trim_to_counted_budget(
                    turn.messages, _trim_target(budget), self._count_tokens, keep_from=turn.begin
                )
            except anthropic.APIError as exc:
                # Counting is an aid: a failed count falls back to the estimate.
                logger.warning("token counting failed (%s); using the estimate", exc)
            else:
                turn.keep(kept)
                return
        if estimate_tokens(turn.messages) > budget:
            turn.keep(trim_to_budget(turn.messages, _trim_target(budget), keep_from=turn.begin))

    async def _count_tokens(self, messages: list[Message]) -> int:
        result = await self._get_client().messages.count_tokens(
            model=self.config.model,
            messages=messages,  # type: ignore[arg-type]
        )
        return int(result.input_tokens)

    def _shrink(self, turn: _Turn, exc: anthropic.BadRequestError) -> bool:
        """Trim after a "prompt is too long" answer; False when nothing can go."""
        target = overflow_budget(str(exc.message), estimate_tokens(turn.messages))
        before = len(turn.messages)
        turn.keep(trim_to_budget(turn.messages, target, keep_from=turn.begin))
        return len(turn.messages) < before

    async def _post_thoughts(self, tools: AgentToolsProtocol, blocks: list[Any]) -> None:
        if not self.features.emits(Emit.THOUGHTS):
            return
        for thought in thought_texts(blocks):
            await self.post_thought(tools, thought)

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

    def _request(self, messages: list[Message], schemas: list[dict[str, Any]]) -> dict[str, Any]:
        """The Messages API request, with cache breakpoints when caching is on."""
        system: str | list[dict[str, Any]] = self.system_prompt
        tools_: list[dict[str, Any]] = schemas
        sent = messages
        policy = self.config.cache
        if policy is not None:
            cached = policy.apply(schemas, self.system_prompt, messages)
            system, tools_, sent = cached.system, cached.tools, cached.messages
            marks = count_breakpoints(tools_, system, sent)
            if marks > MAX_CACHE_BREAKPOINTS:
                raise BandConfigError(
                    f"the cache policy marked {marks} blocks; the Messages API "
                    f"accepts at most {MAX_CACHE_BREAKPOINTS}"
                )
        request: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "system": system,
            "messages": sent,
        }
        if tools_:
            request["tools"] = tools_
        if self.config.thinking_budget is not None:
            request["thinking"] = thinking_param(self.config.thinking_budget)
        return request

    async def _create(
        self,
        messages: list[Message],
        schemas: list[dict[str, Any]],
        overflow_retried: bool,
    ) -> Any:
        """One Messages API call; a failure is logged and re-raised (the
        runtime retries the message while attempts remain and posts one
        report when it fails for the last time); a first "prompt is too
        long" is not logged: the turn trims and retries."""
        request = self._request(messages, schemas)
        try:
            return await self._get_client().messages.create(**request)
        except anthropic.APIStatusError as exc:
            if not overflow_retried and _context_overflow(exc):
                raise  # the turn may trim and retry
            _log_status_error(exc)
            raise
        except anthropic.APIError as exc:
            logger.warning("Anthropic API unavailable: %s: %s", type(exc).__name__, exc)
            raise
        except Exception:
            logger.exception("Anthropic API call failed")
            raise

    async def _run_tools(
        self, tools: AgentToolsProtocol, calls: list[Any]
    ) -> tuple[list[dict[str, Any]], bool]:
        """Run the calls in order; the ``tool_result`` blocks, and whether the
        batch declined (a successful ``band_no_reply`` and no failed call)."""
        results: list[dict[str, Any]] = []
        declined = failed = False
        for call in calls:
            name, call_id = str(call.name), str(call.id)
            output = await self.run_tool_call(tools, name, call.input, call_id)
            results.append(output.to_anthropic(call_id))
            failed = failed or output.is_error
            declined = declined or (name == _NO_REPLY and not output.is_error)
        return results, declined and not failed


def _log_status_error(exc: anthropic.APIStatusError) -> None:
    """Log an HTTP error of the API: status, error type, request id, message."""
    logger.warning(
        "Anthropic API error: HTTP %s %s (request id %s): %s",
        exc.status_code,
        _error_type(exc.body),
        getattr(exc, "request_id", None),
        exc.message,
    )


def _context_overflow(exc: BaseException) -> bool:
    """A 400 saying the request is longer than the model's context window."""
    return isinstance(exc, anthropic.BadRequestError) and "too long" in str(exc.message).lower()
