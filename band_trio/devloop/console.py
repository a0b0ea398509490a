"""One place where the dev loop prints: chat events, agent output, notices.

Lines are printed as they arrive while the user may be typing a line at the
prompt; on a terminal the half-typed line is cleared first and redrawn after,
so output never garbles what is being typed.
"""

from __future__ import annotations

import sys
from typing import TextIO

from band_trio._terminal import terminal_safe

__all__ = ["Console"]

try:
    import readline as _readline
except ImportError:  # pragma: no cover - no readline on this platform
    _readline = None  # type: ignore[assignment]


class Console:
    """Prints whole lines, keeping an active prompt and its typed text intact.

    Args:
        out: the stream (stdout by default).
        interactive: whether ``out`` is a terminal (the prompt is redrawn);
            detected when None.
    """

    def __init__(self, out: TextIO | None = None, *, interactive: bool | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        if interactive is None:
            isatty = getattr(self.out, "isatty", None)
            interactive = bool(isatty and isatty())
        self.interactive = interactive
        self.prompt: str | None = None
        """The prompt being shown while a line is read, else None."""

    def print(self, text: str = "") -> None:
        """Print ``text`` (one or more lines) above the prompt.

        Control and bidi characters are shown escaped (:func:`terminal_safe`):
        what is printed comes from other people and must not drive the terminal.
        """
        redraw = self.interactive and self.prompt is not None
        if redraw:
            self.out.write("\r\x1b[K")
        self.out.write(terminal_safe(text) + "\n")
        if redraw:
            typed = _readline.get_line_buffer() if _readline is not None else ""
            self.out.write(terminal_safe(f"{self.prompt}{typed}"))
        self.out.flush()
