"""The few band-trio names this package needs that the root package does not export.

Kept in one place so that a move inside band-trio changes one import here.
"""

from band_trio.adapter import (
    GENERIC_FAILURE_MESSAGE,
    MISSING_REPLY_MESSAGE,
    image_blocks_placeholder,
)
from band_trio.tools import ToolCategory

__all__ = [
    "GENERIC_FAILURE_MESSAGE",
    "MISSING_REPLY_MESSAGE",
    "ToolCategory",
    "image_blocks_placeholder",
]
