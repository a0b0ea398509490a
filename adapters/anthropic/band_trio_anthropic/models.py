"""Claude model ids checked against the installed ``anthropic`` client.

A model id the client has never heard of is almost always a typo or a model
that was retired; the Messages API would answer it with a 404 at the first
turn of the first room, long after the agent started. The client ships the
ids it knows as the ``anthropic.types.Model`` type (a ``Literal`` of ids, or
any string), so the adapter checks the id when it is configured and says what
the client knows. A model newer than the installed client is a legitimate
case: ``allow_unknown_model=True`` lets it through.

The client also lists models it considers deprecated and models for which
manual extended thinking (``{"type": "enabled"}``) is discouraged; those are
warnings of the client at every call, logged here once at configuration.
"""

from __future__ import annotations

import difflib
import logging
import typing
from collections.abc import Iterable
from typing import Any

import anthropic

from band_trio import BandConfigError

__all__ = ["UnknownModelError", "check_model", "known_models"]

logger = logging.getLogger("band_trio_anthropic")


class UnknownModelError(BandConfigError):
    """The model id is not one the installed ``anthropic`` client knows.

    Attributes:
        model: the id that was given.
        known: the ids the client knows, sorted.
    """

    def __init__(self, model: str, known: Iterable[str]) -> None:
        self.model = model
        self.known = tuple(sorted(known))
        close = difflib.get_close_matches(model, self.known, n=3, cutoff=0.6)
        hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(self.known)}."
        super().__init__(
            f"unknown Claude model {model!r}: the installed anthropic client "
            f"({anthropic.__version__}) does not know it; {hint} Pass "
            "allow_unknown_model=True for a model newer than the client."
        )


def _literals(tp: Any) -> set[str]:
    """Every string of the ``Literal`` types inside ``tp`` (through unions and aliases)."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return {a for a in typing.get_args(tp) if isinstance(a, str)}
    out: set[str] = set()
    for arg in typing.get_args(tp):
        out |= _literals(arg)
    return out


def known_models() -> frozenset[str]:
    """The model ids the installed ``anthropic`` client lists (``anthropic.types.Model``)."""
    return frozenset(_literals(anthropic.types.Model))


def _client_list(name: str) -> Any:
    # The client keeps these lists in a private module; an older or newer
    # client without them simply gives no warnings.
    try:
        from anthropic import _data
    except ImportError:  # pragma: no cover - depends on the installed client
        return ()
    return getattr(_data, name, ())


def check_model(model: str, *, allow_unknown: bool, manual_thinking: bool) -> None:
    """Check ``model`` (and the thinking mode asked for) against the client.

    Args:
        model: the model id.
        allow_unknown: accept an id the client does not list.
        manual_thinking: extended thinking with a fixed budget is asked for.

    Raises:
        UnknownModelError: ``model`` is unknown and ``allow_unknown`` is false.
    """
    known = known_models()
    if model not in known:
        if not allow_unknown:
            raise UnknownModelError(model, known)
        logger.info("model %r is not known to the anthropic client; used as given", model)
    deprecated = _client_list("DEPRECATED_MODELS")
    if model in deprecated:
        logger.warning(
            "model %r is deprecated (end of life: %s) according to the anthropic client",
            model,
            deprecated[model],
        )
    if manual_thinking and model in _client_list("MODELS_TO_WARN_WITH_THINKING_ENABLED"):
        logger.warning(
            "the anthropic client discourages thinking with a fixed budget on %r; "
            "it still works, but the model does better deciding its own thinking",
            model,
        )
