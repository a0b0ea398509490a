"""Custom tools: typed Python functions an adapter author offers to the model.

Register a function (sync or async) whose parameters have type hints and
descriptions (a Google-style ``Args:`` section, or ``Annotated[T, "text"]``)::

    tools = CustomTools()

    @tools.tool
    async def weather(city: str, days: int = 1) -> dict[str, object]:
        \"\"\"Forecast for a city.

        Args:
            city: The city name, for example 'Lisbon'.
            days: How many days ahead.
        \"\"\"

The function then appears in both schema formats after the platform tools and
runs through :meth:`AgentTools.execute_tool_call` with the same validation and
error handling as the platform tools.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Iterator
from typing import Any, overload

import trio

from band_trio.adapter.capabilities import ToolEffect
from band_trio.adapter.tool_protocol import ToolSpec
from band_trio.errors import BandConfigError
from band_trio.tools._schema import (
    ArgMeta,
    Param,
    check_supported,
    unwrap_text,
    validate_params,
)
from band_trio.tools.definitions import ToolDefinition, get_tool_definition

__all__ = ["CustomTools"]

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_SECTION_HEADER = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")

ToolFunction = Callable[..., Any]


def _split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description part of a Google-style docstring and its ``Args:`` entries."""
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    i = 0
    while i < len(lines) and not _SECTION_HEADER.match(lines[i]):
        summary.append(lines[i])
        i += 1
    current: str | None = None
    in_args = False
    arg_indent: int | None = None
    for line in lines[i:]:
        if _ARGS_HEADER.match(line):
            in_args, current, arg_indent = True, None, None
            continue
        if _SECTION_HEADER.match(line) and not line.startswith((" ", "\t")):
            in_args, current = False, None
            continue
        if not in_args or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        m = _ARG_LINE.match(line)
        if m and (arg_indent is None or indent <= arg_indent):
            arg_indent = indent
            current = m.group(1).lstrip("*")
            args[current] = m.group(3).strip()
        elif current is not None:
            args[current] = (args[current] + " " + line.strip()).strip()
    return unwrap_text("\n".join(summary)), args


def _annotated_meta(annotation: Any) -> tuple[Any, str | None, ArgMeta | None]:
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        text = next((e for e in extras if isinstance(e, str)), None)
        meta = next((e for e in extras if isinstance(e, ArgMeta)), None)
        return base, text, meta
    return annotation, None, None


class CustomTools:
    """A set of custom tools, offered after the platform tools.

    Raises (on registration):
        BandConfigError: an invalid or clashing name, a missing description, a
            parameter without a type hint or with an unsupported type.
    """

    def __init__(self) -> None:
        self._definitions: dict[str, ToolDefinition] = {}
        self._functions: dict[str, ToolFunction] = {}
        self._in_thread: dict[str, bool] = {}

    @overload
    def tool(self, fn: ToolFunction, /) -> ToolFunction: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        effect: ToolEffect = ToolEffect.OBSERVE,
        run_in_thread: bool = False,
    ) -> Callable[[ToolFunction], ToolFunction]: ...

    def tool(
        self,
        fn: ToolFunction | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        effect: ToolEffect = ToolEffect.OBSERVE,
        run_in_thread: bool = False,
    ) -> ToolFunction | Callable[[ToolFunction], ToolFunction]:
        """Decorator form of :meth:`add`; returns the function unchanged."""

        def register(f: ToolFunction) -> ToolFunction:
            self.add(
                f, name=name, description=description, effect=effect, run_in_thread=run_in_thread
            )
            return f

        return register(fn) if fn is not None else register

    def add(
        self,
        fn: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        effect: ToolEffect = ToolEffect.OBSERVE,
        run_in_thread: bool = False,
    ) -> ToolDefinition:
        """Register ``fn`` as a tool and return its definition.

        Args:
            fn: a sync or async function; every parameter needs a type hint and a
                description.
            name: the tool name (default: the function's name).
            description: the tool description (default: the docstring's text
                before its sections).
            effect: what a successful call does to the turn. The default,
                ``OBSERVE``, means the call alone never completes a turn; use
                ``ACT`` for a tool that does durable work.
            run_in_thread: run a sync function in a worker thread instead of
                inline (for blocking work).

        Raises:
            BandConfigError: see the class docstring.
        """
        tool_name: str = name or str(getattr(fn, "__name__", ""))
        if not _NAME.fullmatch(tool_name):
            raise BandConfigError(
                f"custom tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'"
            )
        if get_tool_definition(tool_name) is not None:
            raise BandConfigError(f"custom tool {tool_name!r} clashes with a platform tool")
        if tool_name in self._definitions:
            raise BandConfigError(f"custom tool {tool_name!r} is already registered")
        doc_text, doc_args = _split_docstring(inspect.getdoc(fn) or "")
        text = unwrap_text(description) if description else doc_text
        if not text:
            raise BandConfigError(f"custom tool {tool_name!r} needs a description (a docstring)")
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception as exc:
            raise BandConfigError(
                f"custom tool {tool_name!r}: cannot read type hints: {exc}"
            ) from exc
        params: list[Param] = []
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
                raise BandConfigError(
                    f"custom tool {tool_name!r}: parameter {p.name!r} must be a plain "
                    "named parameter"
                )
            if p.name not in hints:
                raise BandConfigError(
                    f"custom tool {tool_name!r}: parameter {p.name!r} needs a type hint"
                )
            base, annotated_text, meta = _annotated_meta(hints[p.name])
            try:
                check_supported(base, f"{tool_name}.{p.name}")
            except TypeError as exc:
                raise BandConfigError(f"custom tool {exc}") from None
            arg_text = (
                annotated_text or (meta.description if meta else None) or doc_args.get(p.name)
            )
            if not arg_text:
                raise BandConfigError(
                    f"custom tool {tool_name!r}: parameter {p.name!r} needs a description "
                    "(an Args: entry in the docstring or Annotated[T, 'text'])"
                )
            arg_meta = meta if meta is not None else ArgMeta(description=arg_text)
            if meta is not None and annotated_text:
                arg_meta = ArgMeta(
                    description=annotated_text,
                    aliases=meta.aliases,
                    minimum=meta.minimum,
                    maximum=meta.maximum,
                    resource_id=meta.resource_id,
                    task_ref=meta.task_ref,
                    visible=meta.visible,
                    max_length=meta.max_length,
                )
            required = p.default is inspect.Parameter.empty
            params.append(
                Param(
                    name=p.name,
                    annotation=base,
                    meta=arg_meta,
                    required=required,
                    default=None if required else p.default,
                )
            )
        definition = ToolDefinition(
            name=tool_name,
            description=text,
            params=tuple(params),
            category=None,
            capability=None,
            effect=ToolEffect(effect),
        )
        self._definitions[tool_name] = definition
        self._functions[tool_name] = fn
        self._in_thread[tool_name] = run_in_thread
        return definition

    def get(self, name: str) -> ToolDefinition | None:
        """The custom tool called ``name``, or None."""
        return self._definitions.get(name)

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """Every registered tool, in registration order."""
        return tuple(self._definitions.values())

    def __contains__(self, name: object) -> bool:
        return name in self._definitions

    def __len__(self) -> int:
        return len(self._definitions)

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(self._definitions.values())

    async def invoke(
        self,
        definition: ToolSpec,
        args: Any,
        *,
        record: Callable[[ToolEffect], None] | None = None,
    ) -> Any:
        """Validate ``args``, call the tool, record its effect on success.

        Raises:
            ToolArgumentsError: the arguments fail the tool's parameters.
            Exception: whatever the tool function raises.
        """
        # Only ``definition.name`` is read: the registered tool of that name is run.
        tool = self._definitions[definition.name]
        kwargs = validate_params(tool.name, tool.params, args)
        fn = self._functions[tool.name]
        if inspect.iscoroutinefunction(fn):
            result = await fn(**kwargs)
        elif self._in_thread[tool.name]:
            result = await trio.to_thread.run_sync(lambda: fn(**kwargs))
        else:
            await trio.lowlevel.checkpoint()
            result = fn(**kwargs)
            if inspect.isawaitable(result):
                result = await result
        if record is not None:
            record(tool.effect)
        return result
