"""Argument specs: the one place that turns typed tool inputs into JSON schemas and
validates the arguments a model sends.

Platform tools declare their inputs as attrs classes whose fields are made with
:func:`arg`; custom tools declare them as function parameters. Both become a tuple
of :class:`Param`, from which the schema (both formats) is rendered and against
which arguments are validated, so the text a model reads and the checks its calls
go through cannot drift apart.
"""

from __future__ import annotations

import enum
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from band_trio.adapter.content import is_visible
from band_trio.errors import BandToolError, ToolArgumentsError

__all__ = [
    "ArgMeta",
    "Param",
    "arg",
    "check_resource_id",
    "json_schema_for_params",
    "params_from_attrs",
    "validate_params",
]

_META_KEY = "band_trio.arg"

_RESOURCE_ID = re.compile(r"[A-Za-z0-9_-]+")
_RESOURCE_ID_ERROR = "must contain only ASCII letters, digits, underscores or hyphens"


def check_resource_id(value: str, what: str) -> str:
    """``value`` when it is a valid resource id (a memory, file or task id).

    Raises:
        BandToolError: ``"<what> must contain only ASCII letters, ..."``.
    """
    if not isinstance(value, str) or not _RESOURCE_ID.fullmatch(value):
        raise BandToolError(f"{what} {_RESOURCE_ID_ERROR}")
    return value


@attrs.frozen
class ArgMeta:
    """What a tool argument means and which extra checks it gets.

    Attributes:
        description: the text the model reads for this argument (required).
        aliases: other input keys accepted for this argument.
        minimum: inclusive lower bound for integers (checked, and stated in the
            description, but not advertised as a schema keyword: several model
            providers reject numeric bounds).
        maximum: inclusive upper bound for integers.
        resource_id: the string must be an id made of ``[A-Za-z0-9_-]``.
        task_ref: like ``resource_id`` after stripping one leading ``#`` (``"#12"``).
        visible: the string must contain a visible character.
        max_length: the longest accepted string.
    """

    description: str
    aliases: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    resource_id: bool = False
    task_ref: bool = False
    visible: bool = False
    max_length: int | None = None


def arg(
    description: str,
    *,
    default: Any = attrs.NOTHING,
    aliases: tuple[str, ...] = (),
    minimum: int | None = None,
    maximum: int | None = None,
    resource_id: bool = False,
    task_ref: bool = False,
    visible: bool = False,
    max_length: int | None = None,
) -> Any:
    """An attrs field for a tool input class, carrying its :class:`ArgMeta`."""
    meta = ArgMeta(
        description=description,
        aliases=aliases,
        minimum=minimum,
        maximum=maximum,
        resource_id=resource_id,
        task_ref=task_ref,
        visible=visible,
        max_length=max_length,
    )
    return attrs.field(default=default, metadata={_META_KEY: meta})


@attrs.frozen
class Param:
    """One argument of a tool, whatever declared it.

    Attributes:
        name: the argument name the model uses.
        annotation: the Python type (``str``, ``int``, ``Literal[...]``, ``X | None``,
            ``list[X]``, ``Mapping[str, Any]``, an ``enum.Enum`` subclass, ``Any``).
        meta: description and extra checks.
        required: the model must supply it.
        default: the value used when it is not required and absent (or null).
    """

    name: str
    annotation: Any
    meta: ArgMeta
    required: bool
    default: Any = None


class _Invalid(Exception):
    def __init__(self, message: str, loc: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc


# --------------------------------------------------------------------------- types

_NONE_TYPE = type(None)


def _split_optional(tp: Any) -> tuple[Any, bool]:
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        members = [a for a in get_args(tp) if a is not _NONE_TYPE]
        nullable = len(members) != len(get_args(tp))
        if len(members) == 1:
            return members[0], nullable
        raise TypeError(f"unsupported union type {tp!r}: only 'X | None' is allowed")
    return tp, False


def _strip_annotated(tp: Any) -> Any:
    if get_origin(tp) is typing.Annotated:
        return get_args(tp)[0]
    return tp


def check_supported(tp: Any, where: str) -> None:
    """Raise TypeError when ``tp`` cannot be rendered as a JSON schema."""
    try:
        _type_schema(tp)
    except TypeError as exc:
        raise TypeError(f"{where}: {exc}") from None


def _type_schema(tp: Any) -> dict[str, Any]:
    tp = _strip_annotated(tp)
    inner, nullable = _split_optional(tp)
    if nullable:
        return {"anyOf": [_type_schema(inner), {"type": "null"}]}
    if tp is Any:
        return {}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"enum {tp.__name__} must have string values")
        return {"type": "string", "enum": values}
    origin = get_origin(tp)
    if origin is Literal:
        values = list(get_args(tp))
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"{tp!r}: only string literals are supported")
        return {"type": "string", "enum": values}
    if origin in (list, tuple, Sequence, typing.Sequence):
        item_args = get_args(tp)
        if origin is tuple and not (len(item_args) == 2 and item_args[1] is Ellipsis):
            raise TypeError(f"{tp!r}: only tuple[X, ...] is supported")
        item = item_args[0] if item_args else Any
        return {"type": "array", "items": _type_schema(item)}
    if origin in (dict, Mapping, typing.Mapping) or tp in (dict, Mapping):
        key_args = get_args(tp)
        if key_args and key_args[0] is not str:
            raise TypeError(f"{tp!r}: object keys must be strings")
        return {"type": "object"}
    raise TypeError(f"unsupported argument type {tp!r}")


def _type_name(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    kind = schema.get("type")
    return {
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "a boolean (true or false)",
        "array": "an array",
        "object": "an object",
    }.get(str(kind), "a value")


def _coerce(tp: Any, value: Any, loc: str) -> Any:
    tp = _strip_annotated(tp)
    inner, nullable = _split_optional(tp)
    if nullable:
        if value is None:
            return None
        return _coerce(inner, value, loc)
    if tp is Any:
        return value
    if value is None:
        raise _Invalid(f"must be {_type_name(_type_schema(tp))}, not null", loc)
    if tp is str:
        if not isinstance(value, str):
            raise _Invalid(f"must be a string, got {_json_kind(value)}", loc)
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _Invalid(f"must be a boolean (true or false), got {_json_kind(value)}", loc)
        return value
    if tp is int:
        # Lax like most tool runtimes: 3.0 and "3" are the integer 3.
        if isinstance(value, bool):
            raise _Invalid("must be an integer, got a boolean", loc)
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"[+-]?\d{1,18}", value.strip()):
            return int(value.strip())
        raise _Invalid(f"must be an integer, got {_json_kind(value)}", loc)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Invalid(f"must be a number, got {_json_kind(value)}", loc)
        return float(value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if member.value == value:
                return member
        raise _Invalid(_enum_message([m.value for m in tp], value), loc)
    origin = get_origin(tp)
    if origin is Literal:
        allowed = get_args(tp)
        if isinstance(value, str) and value in allowed:
            return value
        raise _Invalid(_enum_message(list(allowed), value), loc)
    if origin in (list, tuple, Sequence, typing.Sequence):
        if not isinstance(value, list | tuple):
            raise _Invalid(f"must be an array, got {_json_kind(value)}", loc)
        item_args = get_args(tp)
        item = item_args[0] if item_args else Any
        return tuple(_coerce(item, v, f"{loc}.{i}" if loc else str(i)) for i, v in enumerate(value))
    if origin in (dict, Mapping, typing.Mapping) or tp in (dict, Mapping):
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise _Invalid(f"must be an object, got {_json_kind(value)}", loc)
        return dict(value)
    raise _Invalid(f"has an unsupported type {tp!r}", loc)  # pragma: no cover


def _enum_message(allowed: list[Any], value: Any) -> str:
    shown = value if isinstance(value, str | int | float | bool) or value is None else "…"
    choices = ", ".join(repr(a) for a in allowed)
    return f"must be one of {choices}; got {shown!r}"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _apply_checks(meta: ArgMeta, value: Any, loc: str) -> Any:
    if isinstance(value, str):
        if meta.task_ref:
            value = value.strip()
            if value.startswith("#"):
                value = value[1:]
        if (meta.resource_id or meta.task_ref) and not _RESOURCE_ID.fullmatch(value):
            raise _Invalid(f"{_RESOURCE_ID_ERROR}; got {value!r}", loc)
        if meta.visible and not is_visible(value):
            raise _Invalid("can't be blank", loc)
        if meta.max_length is not None and len(value) > meta.max_length:
            raise _Invalid(f"must be at most {meta.max_length} characters", loc)
    if isinstance(value, int) and not isinstance(value, bool):
        if meta.minimum is not None and value < meta.minimum:
            raise _Invalid(f"must be at least {meta.minimum}, got {value}", loc)
        if meta.maximum is not None and value > meta.maximum:
            raise _Invalid(f"must be at most {meta.maximum}, got {value}", loc)
    return value


# --------------------------------------------------------------------------- params


def unwrap_text(text: str) -> str:
    """Join wrapped lines inside paragraphs; keep blank lines between paragraphs."""
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


def params_from_attrs(cls: type) -> tuple[Param, ...]:
    """The :class:`Param` tuple of an attrs tool input class.

    Raises:
        TypeError: a field was not made with :func:`arg` or has an unsupported type.
    """
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for field in attrs.fields(cls):
        meta = field.metadata.get(_META_KEY)
        if not isinstance(meta, ArgMeta):
            raise TypeError(f"{cls.__name__}.{field.name} must be declared with arg()")
        annotation = hints[field.name]
        check_supported(annotation, f"{cls.__name__}.{field.name}")
        required = field.default is attrs.NOTHING
        if isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            raise TypeError(f"{cls.__name__}.{field.name}: use an immutable default")
        out.append(
            Param(
                name=field.name,
                annotation=annotation,
                meta=meta,
                required=required,
                default=None if required else field.default,
            )
        )
    return tuple(out)


def _describe(param: Param) -> str:
    text = unwrap_text(param.meta.description)
    bounds = []
    if param.meta.minimum is not None:
        bounds.append(f"at least {param.meta.minimum}")
    if param.meta.maximum is not None:
        bounds.append(f"at most {param.meta.maximum}")
    if bounds:
        text += f" Must be {' and '.join(bounds)}."
    return text


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    return value


def json_schema_for_params(params: Sequence[Param], description: str) -> dict[str, Any]:
    """The JSON schema (an ``object``) describing a tool's arguments."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for p in params:
        prop = dict(_type_schema(p.annotation))
        prop["description"] = _describe(p)
        if p.required:
            required.append(p.name)
        else:
            prop["default"] = _json_default(p.default)
        properties[p.name] = prop
    schema: dict[str, Any] = {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": required,
    }
    return schema


def validate_params(tool_name: str, params: Sequence[Param], args: Any) -> dict[str, Any]:
    """Check ``args`` against ``params`` and return the values to call with.

    Unknown keys are ignored (models often add them). An absent or null optional
    argument takes its default. Aliases are folded into the canonical name.

    Raises:
        ToolArgumentsError: one line per problem, every problem listed.
    """
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise ToolArgumentsError(
            tool_name, (f"arguments must be an object, got {_json_kind(args)}",)
        )
    problems: list[str] = []
    out: dict[str, Any] = {}
    for p in params:
        key = next((k for k in (p.name, *p.meta.aliases) if k in args), None)
        raw = args[key] if key is not None else None
        if key is None or (raw is None and not p.required and not _accepts_none(p)):
            if p.required:
                problems.append(f"{p.name}: required argument is missing")
            else:
                out[p.name] = p.default
            continue
        try:
            value = _coerce(p.annotation, raw, p.name)
            if isinstance(value, tuple):
                value = tuple(
                    _apply_checks(p.meta, v, f"{p.name}.{i}") for i, v in enumerate(value)
                )
            else:
                value = _apply_checks(p.meta, value, p.name)
        except _Invalid as exc:
            problems.append(f"{exc.loc}: {exc.message}" if exc.loc else exc.message)
            continue
        out[p.name] = value
    if problems:
        raise ToolArgumentsError(tool_name, tuple(problems))
    return out


def _accepts_none(p: Param) -> bool:
    tp = _strip_annotated(p.annotation)
    return tp is Any or _split_optional(tp)[1]
