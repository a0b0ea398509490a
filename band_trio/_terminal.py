"""Text that other people wrote, made safe to print on a terminal.

A room's messages, titles and names come from every participant, agents
included. Printed as they are, control characters act on the reader's
terminal: ``ESC ] 52`` (OSC 52) writes the clipboard, a carriage return plus
``ESC [ K`` erases the line and forges another, C1 controls (``U+009B`` is a
one-character CSI) do the same on terminals that honour them, and the Unicode
bidi controls reorder what is shown. :func:`terminal_safe` is what every
terminal printer of band-trio applies (``band-trio chat``, ``dev``, ``demo``);
the local platform refuses the same characters in titles and names
(:func:`control_character`).
"""

from __future__ import annotations

import re

__all__ = ["control_character", "terminal_safe"]

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# Line and paragraph separators end a line on some terminals: shown escaped too.
_SEPARATORS = "\u2028\u2029"
_UNSAFE_IN_TEXT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}{_SEPARATORS}]")
_UNSAFE_IN_NAME = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}{_SEPARATORS}]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control and bidi character shown escaped.

    C0 controls (but newline and tab), DEL, C1 controls, the bidi embedding,
    override, isolate and mark characters and the Unicode line separators
    become visible escapes (``\\x1b``, ``\\u202e``); everything else, newline
    and tab included, is kept as it is.
    """
    return _UNSAFE_IN_TEXT.sub(_escaped, text)


def control_character(text: str) -> str | None:
    """The first character of ``text`` a title or a name may not hold (every
    character :func:`terminal_safe` escapes, and newline and tab), or None."""
    found = _UNSAFE_IN_NAME.search(text)
    return None if found is None else found.group()
