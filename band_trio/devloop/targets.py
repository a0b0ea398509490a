"""What ``band-trio dev TARGET`` runs: parsing a target, importing it, finding the agent.

A target names Python code in one of two forms:

* ``path/to/file.py`` or ``path/to/file.py:name`` — the file is imported as a
  module named after its stem, with its directory first on ``sys.path`` (so
  its sibling modules import);
* ``package.module`` or ``package.module:name`` — imported as usual, with the
  current directory first on ``sys.path``.

``name`` picks one module attribute; it may be any of these (how each is told
apart, in this order):

1. a :class:`~band_trio.Agent` (already built at import time; it reads the
   ``BAND_*`` settings the dev process sets) — served as it is;
2. an adapter instance: any object, not a class, with callable ``on_started``,
   ``on_event`` and ``on_cleanup`` (the adapter protocol; every
   :class:`~band_trio.SimpleAdapter` has them);
3. an adapter class: a class with those three methods — called with no
   arguments;
4. a function (sync or async), called with no arguments: it is an adapter
   factory when it returns an adapter, an agent-building function when it
   returns an :class:`~band_trio.Agent`.

Without ``name``, the module is searched, and exactly one candidate of the
first kind that has any must exist: module-level ``Agent`` objects, then
module-level adapter instances, then functions called ``create_agent``,
``build_agent``, ``make_agent``, ``create_adapter``, ``build_adapter`` or
``make_adapter``, then adapter classes defined in that very module (not
imported into it, not abstract). Several candidates of one kind is an error
that lists them; name one with ``:name``.

Everything here runs in the agent's own process (see
:mod:`band_trio.devloop.child`), so importing user code never touches the dev
process.
"""

from __future__ import annotations

import enum
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

from band_trio.agent import Agent
from band_trio.errors import BandConfigError

__all__ = [
    "FACTORY_NAMES",
    "ResolvedTarget",
    "Target",
    "TargetError",
    "TargetKind",
    "build_agent",
    "check_target_exists",
    "import_target",
    "is_adapter",
    "is_adapter_class",
    "parse_target",
    "resolve_target",
    "user_source_files",
]

FACTORY_NAMES = (
    "create_agent",
    "build_agent",
    "make_agent",
    "create_adapter",
    "build_adapter",
    "make_adapter",
)
"""Function names a target module is searched for when it names no attribute."""

_HOOKS = ("on_started", "on_event", "on_cleanup")


class TargetError(BandConfigError):
    """A target that cannot be parsed, found or turned into an agent.

    The message says what was expected and how to name the right object.
    """


class TargetKind(enum.Enum):
    """What a target's object is, and so how an agent is built from it."""

    AGENT = "agent"
    ADAPTER = "adapter instance"
    ADAPTER_CLASS = "adapter class"
    FUNCTION = "function"


@attrs.frozen
class Target:
    """A parsed target (see the module docstring for the forms).

    Attributes:
        spec: the text as given.
        path: the file, for a file target (absolute).
        module: the dotted module name, for a module target.
        attribute: the ``:name`` part, if any.
    """

    spec: str
    path: Path | None
    module: str | None
    attribute: str | None

    @property
    def root(self) -> Path:
        """The directory put first on ``sys.path``: the file's directory for a
        file target, the current directory for a module target. Source files
        under it are the user's (watched for changes)."""
        if self.path is not None:
            return self.path.parent
        return Path.cwd()

    @property
    def default_name(self) -> str:
        """The agent name used when no ``--name`` is given: the attribute, else
        the file's stem or the module's last component."""
        if self.attribute:
            return self.attribute
        if self.path is not None:
            return self.path.stem
        assert self.module is not None
        return self.module.rsplit(".", 1)[-1]


def parse_target(spec: str) -> Target:
    """Parse ``file.py[:name]`` or ``package.module[:name]``.

    A spec ending in ``.py``, containing a path separator, or naming an existing
    file is a file target; anything else is a module name.

    Raises:
        TargetError: an empty spec, module or attribute, or a malformed name.
    """
    text = spec.strip()
    where, attribute = text, None
    head, sep, tail = text.rpartition(":")
    if sep and head and "/" not in tail and os.sep not in tail:
        where, attribute = head, tail
        if not attribute.isidentifier():
            raise TargetError(f"{spec!r}: {attribute!r} after ':' is not a Python name")
    if not where:
        raise TargetError(f"{spec!r}: expected path/to/file.py or package.module[:name]")
    is_path = where.endswith(".py") or "/" in where or os.sep in where or Path(where).is_file()
    if is_path:
        return Target(spec=spec, path=Path(where).resolve(), module=None, attribute=attribute)
    if not all(part.isidentifier() for part in where.split(".")):
        raise TargetError(f"{spec!r}: {where!r} is neither a .py file nor a dotted module name")
    return Target(spec=spec, path=None, module=where, attribute=attribute)


def check_target_exists(target: Target) -> None:
    """Check, without importing anything, that the target's file exists, or that
    its module's top-level package can be found (in the current directory or
    on ``sys.path``).

    Raises:
        TargetError: no such file, or no such module.
    """
    if target.path is not None:
        if not target.path.is_file():
            what = "a directory, not a .py file" if target.path.is_dir() else "no such file"
            raise TargetError(f"{target.spec!r}: {what} ({target.path})")
        return
    assert target.module is not None
    top = target.module.split(".", 1)[0]
    if top in sys.modules or top in sys.builtin_module_names:
        return
    spec = importlib.machinery.PathFinder.find_spec(top, [str(target.root), *sys.path])
    if spec is None:
        raise TargetError(
            f"{target.spec!r}: no such file, and no module named {top!r} in "
            f"{target.root} or on sys.path (a file needs its .py)"
        )
    if spec.origin is None and top == target.module:
        # A directory without __init__.py imports as an empty namespace package.
        raise TargetError(f"{target.spec!r}: a directory, not a .py file or a package")


def import_target(target: Target) -> ModuleType:
    """Import the target's module (its root first on ``sys.path``).

    Raises:
        TargetError: the file does not exist or the module cannot be found.
        Exception: whatever the user's module raises while importing (a
            ``SyntaxError`` included), unchanged so it can be shown as it is.
    """
    root = str(target.root)
    if root not in sys.path:
        sys.path.insert(0, root)
    if target.path is None:
        assert target.module is not None
        if importlib.util.find_spec(target.module) is None:
            raise TargetError(f"no module named {target.module!r} (looked in {root} and sys.path)")
        return importlib.import_module(target.module)
    if not target.path.is_file():
        raise TargetError(f"no such file: {target.path}")
    name = target.path.stem
    if not name.isidentifier() or name in sys.modules:
        # Never shadow a module already imported (a file called trio.py, say).
        name = "_band_trio_dev_" + "".join(c if c.isalnum() else "_" for c in name)
    spec = importlib.util.spec_from_file_location(name, target.path)
    if spec is None or spec.loader is None:  # pragma: no cover - .py files always load
        raise TargetError(f"cannot import {target.path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def is_adapter(obj: object) -> bool:
    """Whether ``obj`` is an adapter instance (not a class) with the adapter hooks."""
    return not isinstance(obj, type) and all(callable(getattr(obj, h, None)) for h in _HOOKS)


def is_adapter_class(obj: object) -> bool:
    """Whether ``obj`` is a class whose instances have the adapter hooks."""
    return isinstance(obj, type) and all(callable(getattr(obj, h, None)) for h in _HOOKS)


@attrs.frozen
class ResolvedTarget:
    """The object a target names and its kind.

    Attributes:
        kind: how the agent is built from ``obj``.
        name: the attribute's name in its module.
        obj: the object itself.
    """

    kind: TargetKind
    name: str
    obj: Any


def _kind_of(obj: object) -> TargetKind | None:
    if isinstance(obj, Agent):
        return TargetKind.AGENT
    if is_adapter(obj):
        return TargetKind.ADAPTER
    if is_adapter_class(obj):
        return TargetKind.ADAPTER_CLASS
    if inspect.isfunction(obj) or inspect.iscoroutinefunction(obj):
        return TargetKind.FUNCTION
    return None


def resolve_target(module: ModuleType, attribute: str | None = None) -> ResolvedTarget:
    """Find the object a target names in its imported module.

    Raises:
        TargetError: the attribute is missing or of no usable kind; without an
            attribute, no candidate or several of the same kind (the message
            lists them).
    """
    where = getattr(module, "__file__", None) or module.__name__
    if attribute is not None:
        if not hasattr(module, attribute):
            raise TargetError(f"{where} has no attribute {attribute!r}")
        obj = getattr(module, attribute)
        kind = _kind_of(obj)
        if kind is None:
            raise TargetError(
                f"{where}:{attribute} is a {type(obj).__name__}; expected an adapter, "
                "an adapter class, a function returning one, or a band_trio.Agent"
            )
        return ResolvedTarget(kind, attribute, obj)
    members = [(n, v) for n, v in vars(module).items() if not n.startswith("_")]
    searches: list[tuple[str, list[tuple[str, Any]]]] = [
        ("band_trio.Agent objects", [(n, v) for n, v in members if isinstance(v, Agent)]),
        ("adapter instances", [(n, v) for n, v in members if is_adapter(v)]),
        (
            "factory functions",
            [(n, v) for n, v in members if n in FACTORY_NAMES and callable(v)],
        ),
        (
            "adapter classes",
            [
                (n, v)
                for n, v in members
                if is_adapter_class(v)
                and v.__module__ == module.__name__
                and not inspect.isabstract(v)
            ],
        ),
    ]
    for label, found in searches:
        if len(found) == 1:
            name, obj = found[0]
            kind = _kind_of(obj)
            assert kind is not None
            return ResolvedTarget(kind, name, obj)
        if found:
            names = ", ".join(n for n, _ in found)
            raise TargetError(f"{where} has several {label} ({names}); name one as TARGET:name")
    raise TargetError(
        f"{where} defines no adapter: write a SimpleAdapter subclass in it, or name "
        "an adapter, a factory or a band_trio.Agent as TARGET:name"
    )


async def build_agent(resolved: ResolvedTarget, *, make_agent: Any) -> Agent:
    """Turn a resolved target into an :class:`~band_trio.Agent`.

    Args:
        resolved: from :func:`resolve_target`.
        make_agent: ``make_agent(adapter) -> Agent`` for targets that give an
            adapter (identity and state come from the dev process's settings).

    Raises:
        TargetError: a class or function that needs arguments, or a function
            returning something that is neither an adapter nor an ``Agent``.
        Exception: whatever the user's constructor or function raises.
    """
    obj = resolved.obj
    if resolved.kind is TargetKind.AGENT:
        return obj  # type: ignore[no-any-return]
    if resolved.kind is TargetKind.ADAPTER:
        return make_agent(obj)  # type: ignore[no-any-return]
    _check_no_required_arguments(resolved)
    result = obj()
    if inspect.isawaitable(result):
        result = await result
    if isinstance(result, Agent):
        return result
    if is_adapter(result):
        return make_agent(result)  # type: ignore[no-any-return]
    raise TargetError(
        f"{resolved.name}() returned a {type(result).__name__}; "
        "expected an adapter or a band_trio.Agent"
    )


def _check_no_required_arguments(resolved: ResolvedTarget) -> None:
    try:
        signature = inspect.signature(resolved.obj)
    except (TypeError, ValueError):  # builtins without a signature: just call them
        return
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if required:
        what = "class" if resolved.kind is TargetKind.ADAPTER_CLASS else "function"
        raise TargetError(
            f"{resolved.name} is a {what} that needs arguments ({', '.join(required)}); "
            "dev calls it with none: give them defaults or name a factory that takes none"
        )


def user_source_files(root: Path, extra: Iterable[str | None] = ()) -> list[str]:
    """The user's source files among the loaded modules: those under ``root``
    and outside this Python's installation (its prefixes and site-packages),
    plus the ``extra`` files that exist (a file that failed to compile, say)."""
    root = root.resolve()
    # The installation's own directories, unless the root is inside one of them
    # (then only site-packages is told apart).
    installed = {Path(p).resolve() for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}}
    excluded = [p for p in installed if not root.is_relative_to(p)]
    files: set[str] = set()
    candidates = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
    for name in [*candidates, *extra]:
        if not name or not name.endswith(".py"):
            continue
        path = Path(name).resolve()
        if not path.is_file() or not path.is_relative_to(root):
            continue
        if any(path.is_relative_to(p) for p in excluded) or "site-packages" in path.parts:
            continue
        files.add(str(path))
    return sorted(files)
