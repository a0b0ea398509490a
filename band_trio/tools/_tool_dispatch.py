"""The model-facing side of the turn's tools: the schemas offered to a model
(which the offered-tools gate remembers) and the dispatch of a model's tool
call, which validates its arguments and turns every failure into a
:class:`~band_trio.adapter.ToolResult` with ``is_error``.
:class:`~band_trio.tools.AgentTools` inherits them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import trio

from band_trio._logging import get_logger
from band_trio._tracing import span
from band_trio.adapter.tool_protocol import CustomToolSet, ToolSpec
from band_trio.adapter.tool_results import ToolErrorKind, ToolResult
from band_trio.errors import (
    APIStatusError,
    BandConnectionError,
    BandError,
    BandToolError,
    OutcomeUnknownError,
    RoomExecutionStoppedError,
    ToolArgumentsError,
    UnknownParticipantError,
)
from band_trio.tools._schema import validate_params
from band_trio.tools._tools_core import ToolsCore
from band_trio.tools.definitions import (
    Capability,
    SchemaFormat,
    ToolCategory,
    ToolDefinition,
    get_tool_definition,
    offered_schemas,
)

__all__ = ["ToolDispatch"]

logger = get_logger("band_trio.tools")


class ToolDispatch(ToolsCore):
    """The schemas a turn offers a model and the dispatch of its tool calls."""

    def get_tool_schemas(
        self,
        fmt: SchemaFormat,
        *,
        capabilities: Iterable[Capability | str] | None = None,
        include_tools: Iterable[str] | None = None,
        exclude_tools: Iterable[str] | None = None,
        include_categories: Iterable[ToolCategory | str] | None = None,
        custom_tools: CustomToolSet | None = None,
    ) -> list[dict[str, Any]]:
        """The tools to offer a model, in ``"anthropic"`` or ``"openai"`` format.

        ``capabilities=None`` uses the capabilities given at construction (or the
        default set, contacts). In the hub room the contact tools are always
        included. Capabilities given as ``unserved`` at construction are always
        left out, and the include filters cannot bring their tools back. Custom
        tools (given here or at construction) come last.

        The platform tools returned are remembered as *offered*: from then on
        :meth:`execute_tool_call` refuses platform tools this object never
        offered (the official SDK runs them anyway: tools and adapters, "Weak spots" 14).

        Raises:
            ValueError: an unknown format, capability or category.
        """
        schemas, offered = offered_schemas(
            fmt,
            capabilities=self._effective_capabilities(capabilities),
            include_tools=include_tools,
            exclude_tools=exclude_tools,
            include_categories=include_categories,
            custom_tools=custom_tools if custom_tools is not None else self._custom_tools,
        )
        self._offered = (self._offered or frozenset()) | offered
        return schemas

    @property
    def offered_tools(self) -> frozenset[str] | None:
        """Platform tools a model may call through :meth:`execute_tool_call`.

        None means no restriction (beyond the ``unserved`` capabilities, which
        are always refused): no capabilities were given at construction and no
        schemas were requested from this object yet.
        """
        return self._offered

    def get_anthropic_tool_schemas(self, **kwargs: Any) -> list[dict[str, Any]]:
        """:meth:`get_tool_schemas` in Anthropic's format."""
        return self.get_tool_schemas("anthropic", **kwargs)

    def get_openai_tool_schemas(self, **kwargs: Any) -> list[dict[str, Any]]:
        """:meth:`get_tool_schemas` in OpenAI's format."""
        return self.get_tool_schemas("openai", **kwargs)

    # -------------------------------------------------------------- dispatch

    async def execute_tool_call(
        self,
        name: str,
        args: Mapping[str, Any] | None,
        *,
        custom_tools: CustomToolSet | None = None,
    ) -> ToolResult:
        """Run the tool ``name`` with ``args`` and return its result.

        Never raises, except ``trio.Cancelled``: an unknown tool, invalid
        arguments, a refusal by the tool or the platform and unexpected failures
        all come back as a :class:`ToolResult` with ``is_error`` set and a message
        a model can act on (no headers, no secrets). Custom tools (given here or
        at construction) take part in the same dispatch; a custom tool never
        shadows a platform tool.

        Cancellation:
            When the platform says the room's execution is stopped, the engine is
            told; if it cancels the turn, ``trio.Cancelled`` propagates from here.
        """
        custom = custom_tools if custom_tools is not None else self._custom_tools
        definition = get_tool_definition(name) if isinstance(name, str) else None
        custom_def: ToolSpec | None = None
        if definition is None and custom is not None and isinstance(name, str):
            custom_def = custom.get(name)
        if definition is None and custom_def is None:
            return ToolResult.error(str(name), ToolErrorKind.UNKNOWN_TOOL, f"Unknown tool: {name}")
        tool_name = str(name)
        if definition is not None and (
            definition.capability in self._unserved
            or (self._offered is not None and name not in self._offered)
        ):
            return ToolResult.error(
                tool_name,
                ToolErrorKind.NOT_OFFERED,
                f"Error executing {tool_name}: this tool is not available to you here; use "
                "only the tools you were given.",
            )
        try:
            if definition is not None:
                kwargs = self._validate(definition, args)
                method = getattr(self, tool_name.removeprefix("band_"))
                value = await method(**kwargs)
            else:
                assert custom is not None
                assert custom_def is not None
                with span(f"band.tool {tool_name}", {"band.tool.name": tool_name}):
                    value = await custom.invoke(custom_def, args, record=self._record)
        except ToolArgumentsError as exc:
            return ToolResult.error(tool_name, ToolErrorKind.INVALID_ARGUMENTS, str(exc))
        except RoomExecutionStoppedError:
            # The engine was told (hooks.execution_stopped) and cancels the turn's
            # scope; this checkpoint delivers that cancellation.
            await trio.lowlevel.checkpoint()
            return ToolResult.error(
                tool_name,
                ToolErrorKind.EXECUTION_STOPPED,
                f"Error executing {tool_name}: the room's execution is stopped; end the "
                "turn without further tool calls.",
            )
        except (BandToolError, UnknownParticipantError) as exc:
            return ToolResult.error(
                tool_name, ToolErrorKind.TOOL_ERROR, f"Error executing {tool_name}: {exc}"
            )
        except APIStatusError as exc:
            return ToolResult.error(
                tool_name, ToolErrorKind.PLATFORM_ERROR, _platform_message(tool_name, exc)
            )
        except BandConnectionError as exc:
            advice = (
                "it may have been applied anyway: check before repeating it"
                if isinstance(exc, OutcomeUnknownError)
                else "try again later"
            )
            return ToolResult.error(
                tool_name,
                ToolErrorKind.PLATFORM_ERROR,
                f"Error executing {tool_name}: the platform could not be reached "
                f"({type(exc).__name__}); {advice}.",
            )
        except BandError as exc:
            if custom_def is not None:
                return ToolResult.error(
                    tool_name, ToolErrorKind.TOOL_ERROR, f"Error executing {tool_name}: {exc}"
                )
            return ToolResult.error(
                tool_name,
                ToolErrorKind.PLATFORM_ERROR,
                f"Error executing {tool_name}: {type(exc).__name__}: {exc}",
            )
        except Exception as exc:
            if custom_def is not None:
                return ToolResult.error(
                    tool_name,
                    ToolErrorKind.TOOL_ERROR,
                    f"Error executing {tool_name}: {type(exc).__name__}: {exc}",
                )
            logger.exception("tool %s failed unexpectedly", tool_name)
            return ToolResult.error(
                tool_name,
                ToolErrorKind.INTERNAL_ERROR,
                f"Error executing {tool_name}: internal error ({type(exc).__name__}); "
                "see the agent's logs.",
            )
        return ToolResult.ok(tool_name, value)

    def _validate(self, definition: ToolDefinition, args: Any) -> dict[str, Any]:
        kwargs = validate_params(definition.name, definition.params, args)
        model = definition.input_model
        if model is not None:
            try:
                model(**kwargs)
            except ValueError as exc:
                raise ToolArgumentsError(definition.name, (str(exc),)) from None
        return kwargs


def _platform_message(tool_name: str, exc: APIStatusError) -> str:
    status = exc.status_code
    what = f"HTTP {status}"
    if exc.code:
        what += f" {exc.code}"
    detail = f": {exc.message}" if exc.message else ""
    hint = ""
    if status == 404:
        hint = " The thing you asked for does not exist or you cannot see it."
    elif status == 403:
        hint = " You are not allowed to do this."
    elif isinstance(exc, OutcomeUnknownError):
        hint = " It may have been applied anyway: check before repeating it."
    elif status == 429 or exc.retryable:
        hint = " Try again later."
    return f"Error executing {tool_name}: the platform refused the request ({what}){detail}.{hint}"
