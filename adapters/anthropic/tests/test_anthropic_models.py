"""Model ids are checked against the installed anthropic client when the
adapter is configured, not by a 404 at the first turn."""

from __future__ import annotations

import logging
import typing

import anthropic
import pytest
from band_trio_anthropic import (
    DEFAULT_MODEL,
    AnthropicAdapter,
    AnthropicAdapterConfig,
    UnknownModelError,
    known_models,
)

from band_trio import BandConfigError, BandError


def test_known_models_are_the_clients_model_literal() -> None:
    literal, _any_string = typing.get_args(anthropic.types.Model)
    assert known_models() == frozenset(typing.get_args(literal))
    assert DEFAULT_MODEL in known_models()


@pytest.mark.parametrize("model", sorted(known_models()))
def test_every_known_model_is_accepted(model: str) -> None:
    assert AnthropicAdapterConfig(model=model).model == model


def test_an_unknown_model_is_a_clear_typed_error_at_construction() -> None:
    with pytest.raises(UnknownModelError) as raised:
        AnthropicAdapterConfig(model="claude-sonet-5-5")
    error = raised.value
    assert isinstance(error, BandConfigError)
    assert isinstance(error, BandError)
    assert error.model == "claude-sonet-5-5"
    assert error.known == tuple(sorted(known_models()))
    text = str(error)
    assert "'claude-sonet-5-5'" in text
    assert anthropic.__version__ in text
    assert "did you mean claude-sonnet-5-5" in text
    assert "allow_unknown_model=True" in text
    with pytest.raises(UnknownModelError):
        AnthropicAdapter(AnthropicAdapterConfig(model="gpt-4o"))


def test_a_model_newer_than_the_client_can_be_allowed() -> None:
    config = AnthropicAdapterConfig(model="claude-opus-9", allow_unknown_model=True)
    assert config.model == "claude-opus-9"


def test_a_deprecated_model_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    from anthropic._data import DEPRECATED_MODELS

    model = next(m for m in DEPRECATED_MODELS if m in known_models())
    with caplog.at_level(logging.WARNING, logger="band_trio_anthropic"):
        AnthropicAdapterConfig(model=model)
    assert any("is deprecated" in r.message for r in caplog.records)
