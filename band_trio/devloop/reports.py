"""What the agent process tells the dev process, besides its ordinary output.

A report is one stdout line: :data:`REPORT_PREFIX` then one JSON object with an
``event`` field (see :mod:`band_trio.devloop.child` for the events). Kept apart
from the child's module so the dev process never imports the child's code.
"""

from __future__ import annotations

__all__ = ["EXIT_LOAD_ERROR", "LOG_LEVEL_VARIABLE", "REPORT_PREFIX"]

REPORT_PREFIX = "\x1b[band-trio-dev] "
"""Start of a report line (an escape character, so no ordinary print matches)."""

EXIT_LOAD_ERROR = 3
"""Exit status after a target that could not be loaded (the error was reported)."""

LOG_LEVEL_VARIABLE = "BAND_TRIO_DEV_LOG_LEVEL"
"""Environment variable with the logging level of the agent process (WARNING)."""
