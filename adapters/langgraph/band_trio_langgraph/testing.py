"""A scripted chat model for tests and offline demos (no network, no API key).

:class:`ScriptedChatModel` answers each call with the next step of its
script: an ``AIMessage`` (tool calls, text, usage, reasoning), a string, or a
function of the conversation and the offered tools that returns one (sync or
async; an async step can wait, to script a slow or hanging model). It supports
``bind_tools`` and records every call, so a test can check what the model was
shown.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

__all__ = ["ScriptExhaustedError", "ScriptedCall", "ScriptedChatModel", "ai", "tool_call"]

_ids = itertools.count(1)


class ScriptExhaustedError(RuntimeError):
    """The model was called more often than its script has steps."""


@attrs.frozen
class ScriptedCall:
    """One call of the model: what it was shown.

    Attributes:
        messages: the conversation sent to the model.
        tools: the tools bound to the model (OpenAI format), possibly empty.
    """

    messages: tuple[BaseMessage, ...]
    tools: tuple[dict[str, Any], ...]

    @property
    def tool_names(self) -> list[str]:
        """The names of the bound tools, in order."""
        return [str(t["function"]["name"]) for t in self.tools]


def tool_call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> ToolCall:
    """A tool call for :func:`ai` (a fresh id when ``id`` is None)."""
    return {
        "name": name,
        "args": dict(args or {}),
        "id": id or f"call_{next(_ids):04d}",
        "type": "tool_call",
    }


def ai(
    *calls: ToolCall,
    text: str = "",
    usage: tuple[int, int] | None = None,
    cache: tuple[int, int] = (0, 0),
    reasoning: str | None = None,
) -> AIMessage:
    """An ``AIMessage`` with tool calls, text, usage and reasoning.

    Args:
        calls: the tool calls, in order.
        text: the text part.
        usage: ``(input_tokens, output_tokens)``, or None for no usage metadata.
        cache: ``(cache_read, cache_creation)`` input tokens.
        reasoning: a reasoning block's text, or None.
    """
    content: str | list[str | dict[Any, Any]] = text
    if reasoning is not None:
        content = [{"type": "reasoning", "reasoning": reasoning}]
        if text:
            content.append({"type": "text", "text": text})
    message = AIMessage(content=content, tool_calls=list(calls))
    if usage is not None:
        message.usage_metadata = {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
            "input_token_details": {"cache_read": cache[0], "cache_creation": cache[1]},
        }
    return message


Step = AIMessage | str | Callable[..., Any]


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays a script (see the module docs).

    Args:
        script: the steps, one per call: an ``AIMessage``, a string (a text
            answer), or ``step(messages, tools)`` returning one (may be async).
        default: the step used once the script is exhausted; None raises
            :class:`ScriptExhaustedError` then.
    """

    script: list[Any]
    default: Any = None
    _position: int = PrivateAttr(default=0)
    _calls: list[ScriptedCall] = PrivateAttr(default_factory=list)

    def __init__(self, script: Sequence[Step] = (), *, default: Step | None = None) -> None:
        fields: dict[str, Any] = {"script": list(script), "default": default}
        super().__init__(**fields)

    @property
    def _llm_type(self) -> str:
        return "band-trio-scripted"

    @property
    def calls(self) -> list[ScriptedCall]:
        """Every call so far, in order."""
        return list(self._calls)

    @property
    def exhausted(self) -> bool:
        """True when every scripted step was used."""
        return self._position >= len(self.script)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools: the model records them with each call."""
        schemas = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=schemas, **kwargs)

    def _next_step(self) -> Any:
        if self._position < len(self.script):
            step = self.script[self._position]
            self._position += 1
            return step
        if self.default is not None:
            return self.default
        raise ScriptExhaustedError(f"the script has {len(self.script)} step(s); all were used")

    def _record(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> ScriptedCall:
        call = ScriptedCall(tuple(messages), tuple(kwargs.get("tools") or ()))
        self._calls.append(call)
        return call

    @staticmethod
    def _result(value: object) -> ChatResult:
        message = AIMessage(content=value) if isinstance(value, str) else value
        if not isinstance(message, AIMessage):
            raise TypeError(f"a script step must give an AIMessage or a string; got {value!r}")
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._record(messages, kwargs)
        step = self._next_step()
        value = step(list(call.messages), list(call.tools)) if callable(step) else step
        if inspect.isawaitable(value):
            raise TypeError("an async script step needs an async call (ainvoke)")
        return self._result(value)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._record(messages, kwargs)
        step = self._next_step()
        value = step(list(call.messages), list(call.tools)) if callable(step) else step
        if inspect.isawaitable(value):
            value = await value
        return self._result(value)
