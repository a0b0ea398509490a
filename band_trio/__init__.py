"""band-trio: a Trio-native SDK connecting LLM agents to the Band platform."""

from band_trio.errors import *  # noqa: F403
from band_trio.errors import __all__ as _errors_all

__version__ = "0.1.0"

__all__ = [*_errors_all, "__version__"]
