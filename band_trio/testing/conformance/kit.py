"""The entry points: :func:`check_adapter`, :class:`AdapterConformance`, :func:`replay`.

Each generated scenario runs in its own ``trio.run`` (virtual time, no
sockets, see :mod:`band_trio.testing.conformance.runner`), then every
invariant reads the result. A violation raises :class:`ConformanceFailure`;
Hypothesis then shrinks the scenario and the final message shows the minimal
one as Python you can paste into :func:`replay`.

Profiles (Hypothesis settings):

* ``band-conformance-ci`` (default): 50 scenarios, derandomized (the same
  scenarios on every run), no example database, 5 s deadline per scenario.
* ``band-conformance-long``: 1,000 random scenarios, no deadline; for a run by
  hand: ``BAND_CONFORMANCE_PROFILE=long pytest ...``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from band_trio import (
    AgentConfig,
    BandError,
    FrameworkAdapter,
    HistoryConverter,
)
from band_trio.testing.conformance.invariants import (
    DEFAULT_INVARIANTS,
    Invariant,
    RoomIndependence,
)
from band_trio.testing.conformance.runner import (
    RunOptions,
    ScenarioResult,
    _default_config,
    run_scenario,
)
from band_trio.testing.conformance.steps import Post, Scenario, step_room
from band_trio.testing.conformance.strategies import history_items, scenarios
from band_trio.testing.conformance.validators import HistoryValidator

__all__ = [
    "CI_PROFILE",
    "LONG_PROFILE",
    "PROFILE_ENV_VAR",
    "AdapterConformance",
    "ConformanceFailure",
    "HistoryConverterConformance",
    "check_adapter",
    "check_history_converter",
    "check_result",
    "conformance_settings",
    "replay",
]

logger = logging.getLogger("band_trio.testing.conformance")

CI_PROFILE = "band-conformance-ci"
LONG_PROFILE = "band-conformance-long"
PROFILE_ENV_VAR = "BAND_CONFORMANCE_PROFILE"
"""Set to ``long`` (or a registered profile's name) to choose the profile."""

_SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile(
    CI_PROFILE,
    max_examples=50,
    deadline=timedelta(seconds=5),
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=_SUPPRESSED,
)
settings.register_profile(
    LONG_PROFILE,
    max_examples=1000,
    deadline=None,
    suppress_health_check=_SUPPRESSED,
)


def conformance_settings(profile: str | None = None) -> settings:
    """The Hypothesis settings of a profile: ``profile``, else the one named by
    ``$BAND_CONFORMANCE_PROFILE`` (``ci``, ``long`` or a registered name), else CI."""
    name = profile or os.environ.get(PROFILE_ENV_VAR) or CI_PROFILE
    name = {"ci": CI_PROFILE, "long": LONG_PROFILE}.get(name, name)
    return settings.get_profile(name)


class ConformanceFailure(BandError, AssertionError):
    """An adapter broke one or more invariants in a scenario.

    Attributes:
        scenario: the scenario (paste it into :func:`replay`).
        failures: ``(invariant name, message)`` pairs.
    """

    def __init__(self, scenario: Scenario | None, failures: Sequence[tuple[str, str]]) -> None:
        self.scenario = scenario
        self.failures = tuple(failures)
        lines = [f"{name}: {message}" for name, message in self.failures]
        text = "the adapter broke the conformance invariants:\n  " + "\n  ".join(lines)
        if scenario is not None:
            text += (
                "\n\nScenario (paste it into a regression test):\n\n"
                f"    replay(make_adapter, {_indent(repr(scenario))})\n"
            )
        super().__init__(text)

    @property
    def invariants(self) -> frozenset[str]:
        """The names of the invariants broken."""
        return frozenset(name for name, _ in self.failures)


def _indent(text: str) -> str:
    return text.replace("\n", "\n    ")


INDEPENDENCE_NOT_JUDGED = (
    "RoomIndependence was not judged: the adapter did not declare that it answers "
    "the same inputs the same way (deterministic=True), so a room's output could "
    "not be compared with the same room played alone"
)
"""The note of a passing run whose rooms' independence the kit could not judge."""


def check_result(
    result: ScenarioResult,
    invariants: Iterable[Invariant] = DEFAULT_INVARIANTS,
) -> list[tuple[str, str]]:
    """Every ``(invariant name, message)`` violation in a finished run."""
    failures: dict[tuple[str, str], None] = {}
    for invariant in invariants:
        for message in invariant.violations(result):
            failures[invariant.name, message] = None
    return list(failures)


def _busy_rooms(scenario: Scenario) -> list[int]:
    rooms = {step_room(s) for s in scenario.steps if isinstance(s, Post)}
    return sorted(r for r in rooms if r is not None)


def _check(
    factory: Callable[[], FrameworkAdapter],
    scenario: Scenario,
    options: RunOptions,
    invariants: Sequence[Invariant],
    deterministic: bool,
) -> ScenarioResult:
    result = run_scenario(factory, scenario, options)
    failures = check_result(result, invariants)
    busy = _busy_rooms(scenario)
    metamorphic = deterministic or any(isinstance(i, RoomIndependence) for i in invariants)
    if not metamorphic and len(busy) > 1:
        result.notes = (*result.notes, INDEPENDENCE_NOT_JUDGED)
    if metamorphic and not failures and len(busy) > 1:
        for room in busy:
            alone = run_scenario(factory, scenario.only_room(room), options)
            failures.extend(
                (RoomIndependence.name, message)
                for message in RoomIndependence.compare(result, alone, room)
            )
    if failures:
        raise ConformanceFailure(scenario, failures)
    return result


def _options(
    options: RunOptions | None,
    config: AgentConfig | None,
    max_replies_per_message: int | None,
    history_validator: HistoryValidator | None,
) -> RunOptions:
    base = options if options is not None else RunOptions()
    changes: dict[str, Any] = {}
    if config is not None:
        changes["config"] = config
    if max_replies_per_message is not None:
        changes["max_replies_per_message"] = max_replies_per_message
    if history_validator is not None:
        changes["history_validator"] = history_validator
    return attrs.evolve(base, **changes) if changes else base


def replay(
    factory: Callable[[], FrameworkAdapter],
    scenario: Scenario,
    *,
    options: RunOptions | None = None,
    invariants: Sequence[Invariant] = DEFAULT_INVARIANTS,
    deterministic: bool = False,
    max_replies_per_message: int | None = None,
    history_validator: HistoryValidator | None = None,
    config: AgentConfig | None = None,
) -> ScenarioResult:
    """Run one scenario and check it: the regression test for a shrunk failure.

    Call it from a synchronous test. Arguments are those of :func:`check_adapter`.

    Returns:
        The result, when every invariant holds.

    Raises:
        ConformanceFailure: an invariant was broken.
    """
    opts = _options(options, config, max_replies_per_message, history_validator)
    return _check(factory, scenario, opts, list(invariants), deterministic)


def check_adapter(
    factory: Callable[[], FrameworkAdapter],
    *,
    options: RunOptions | None = None,
    invariants: Sequence[Invariant] = DEFAULT_INVARIANTS,
    deterministic: bool = False,
    max_replies_per_message: int | None = None,
    history_validator: HistoryValidator | None = None,
    config: AgentConfig | None = None,
    scenario_strategy: st.SearchStrategy[Scenario] | None = None,
    profile: str | None = None,
    hypothesis_settings: settings | None = None,
) -> tuple[str, ...]:
    """Run generated scenarios against adapters from ``factory``; raise on the first
    broken invariant (after shrinking it).

    When every scenario passes, the notes returned (and logged as warnings)
    say what the kit could not judge: without ``deterministic=True``, whether
    the rooms are independent of each other.

    Call it from a synchronous test (it runs ``trio.run`` per scenario, so not
    from inside a Trio test); it works with or without pytest-trio.

    Args:
        factory: builds a fresh adapter (called at start and after each restart).
        options: thresholds and the runtime configuration (see :class:`RunOptions`).
        invariants: what to check (default: every single-run invariant).
        deterministic: the adapter answers the same inputs the same way; turns
            on the :class:`~band_trio.testing.conformance.invariants.RoomIndependence` check.
        max_replies_per_message: replies the adapter may post for one message.
        history_validator: checks the adapter's converted histories (for example
            :func:`~band_trio.testing.conformance.validate_anthropic_messages`).
        config: the runtime configuration (shortcut for ``options.config``).
        scenario_strategy: the scenarios to draw (default :func:`scenarios`).
        profile: the settings profile (default: ``$BAND_CONFORMANCE_PROFILE``, else CI).
        hypothesis_settings: explicit Hypothesis settings (override ``profile``).

    Raises:
        ConformanceFailure: a scenario broke an invariant; the message holds
            the shrunk scenario.

    Returns:
        What the kit could not judge (empty when it judged everything).
    """
    opts = _options(options, config, max_replies_per_message, history_validator)
    checks = list(invariants)
    strategy = scenario_strategy if scenario_strategy is not None else scenarios()
    chosen = (
        hypothesis_settings if hypothesis_settings is not None else conformance_settings(profile)
    )

    notes: dict[str, None] = {}

    @chosen
    @given(scenario=strategy)
    def conformance(scenario: Scenario) -> None:
        notes.update(dict.fromkeys(_check(factory, scenario, opts, checks, deterministic).notes))

    conformance()
    for note in notes:
        logger.warning("conformance: %s", note)
    return tuple(notes)


def check_history_converter(
    converter: HistoryConverter[Any],
    validator: HistoryValidator | None = None,
    *,
    profile: str | None = None,
    hypothesis_settings: settings | None = None,
) -> None:
    """Convert generated histories; fail when the converter raises or its output
    does not pass ``validator``.

    Raises:
        ConformanceFailure: with the ``HistoryConversion`` invariant and the
            history (shrunk) in the message.
    """
    chosen = (
        hypothesis_settings if hypothesis_settings is not None else conformance_settings(profile)
    )
    chosen = settings(chosen, max_examples=max(chosen.max_examples, 200))

    @chosen
    @given(items=history_items())
    def conversion(items: list[Any]) -> None:
        shown = "\n    ".join(repr(i) for i in items)
        try:
            converted = converter.convert(items)
        except Exception as exc:
            raise ConformanceFailure(
                None,
                [
                    (
                        "HistoryConversion",
                        f"the converter raised {type(exc).__name__}: {exc} on the history:\n"
                        f"    {shown}",
                    )
                ],
            ) from exc
        problems = list(validator(converted)) if validator is not None else []
        if problems:
            raise ConformanceFailure(
                None,
                [
                    (
                        "HistoryConversion",
                        f"the converted history is invalid: {'; '.join(problems)}\n"
                        f"  history:\n    {shown}\n  converted: {converted!r}",
                    )
                ],
            )

    conversion()


class AdapterConformance:
    """Base class of a pytest test class that holds an adapter to the kit.

    Subclass it (the name must start with ``Test`` for pytest) and implement
    :meth:`make_adapter`; set the class attributes that apply::

        class TestMyAdapter(AdapterConformance):
            deterministic = True

            def make_adapter(self) -> MyAdapter:
                return MyAdapter()

    The tests are synchronous (each scenario runs its own ``trio.run``), so
    they work whether or not pytest-trio is installed.

    Attributes:
        deterministic: see :func:`check_adapter`.
        max_replies_per_message: see :func:`check_adapter`.
        history_validator: see :func:`check_adapter` (a plain function).
        invariants: what to check.
        profile: the settings profile (None: ``$BAND_CONFORMANCE_PROFILE``, else CI).
    """

    deterministic: bool = False
    max_replies_per_message: int = 1
    history_validator: HistoryValidator | None = None
    invariants: Sequence[Invariant] = DEFAULT_INVARIANTS
    profile: str | None = None

    def make_adapter(self) -> FrameworkAdapter:
        """A fresh adapter (called for every agent run of every scenario)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_adapter")

    def make_config(self) -> AgentConfig:
        """The runtime configuration scenarios run with (set ``turn_timeout`` so
        that timeouts are exercised)."""
        return _default_config()

    def make_options(self) -> RunOptions:
        """Thresholds and clock settings (see :class:`RunOptions`); the runtime
        configuration comes from :meth:`make_config`."""
        return RunOptions()

    def test_scenarios(self) -> None:
        """Generated scenarios keep every invariant."""
        check_adapter(
            self.make_adapter,
            options=self.make_options(),
            invariants=self.invariants,
            deterministic=self.deterministic,
            max_replies_per_message=self.max_replies_per_message,
            history_validator=type(self).history_validator,
            config=self.make_config(),
            profile=self.profile,
        )


class HistoryConverterConformance:
    """Base class of a pytest test class that holds a history converter to the kit.

    Implement :meth:`make_converter`; set :attr:`history_validator` to the
    provider's validator::

        class TestMyConverter(HistoryConverterConformance):
            history_validator = validate_anthropic_messages

            def make_converter(self) -> MyConverter:
                return MyConverter()

    Attributes:
        history_validator: checks the converted value (None: the converter
            is only required not to raise).
        profile: the settings profile (None: ``$BAND_CONFORMANCE_PROFILE``, else CI).
    """

    history_validator: HistoryValidator | None = None
    profile: str | None = None

    def make_converter(self) -> HistoryConverter[Any]:
        """The converter under test."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_converter")

    def test_history_converter(self) -> None:
        """The converter is total on generated histories and its output is valid."""
        check_history_converter(
            self.make_converter(), type(self).history_validator, profile=self.profile
        )
