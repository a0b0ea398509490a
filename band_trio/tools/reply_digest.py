"""The digest of a reply's text, equal for the text as sent and as stored.

The tools journal this digest before posting a reply, and the runtime looks
for a message with the same digest when the post's outcome was never learned.
The platform rewrites mentions into ``@[[<id>]]`` tokens (and prepends one for
a mentioned participant the text does not name), so the digest is taken over
the text without any mention token or ``@handle`` (the punctuation around a
mention is kept), with whitespace collapsed.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

__all__ = ["reply_digest"]

_TOKEN: Final = re.compile(r"@\[\[[^\]]*\]\]")
# A handle as the platform matches it (whole handles only):
# not after a word character, and without the punctuation that follows it
# ("@alice," becomes "@[[id]],"), a final "." included ("see @alice.").
_AT_WORD: Final = re.compile(r"(?<![A-Za-z0-9_])@[A-Za-z0-9_/-]+(?:\.[A-Za-z0-9_/-]+)*")


def reply_digest(content: str) -> str:
    """The digest of a reply's text as sent, equal to that of the text as stored."""
    text = _AT_WORD.sub(" ", _TOKEN.sub(" ", content))
    normal = " ".join(text.split())
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()[:32]
