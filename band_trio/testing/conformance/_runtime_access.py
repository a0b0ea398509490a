"""Every name the conformance kit takes from band-trio's internals, in one place.

The kit drives the real runtime (the same ``Agent``, rooms and engine an agent
runs) against the embedded platform reached in-process, so it needs a few
names that are not part of the root package: the platform's request-body
wrapper, file upload and contact book (to act as people without HTTP), the
in-memory ledger marker, the runtime's fixed failure texts and the REST retry
policy. Keeping them here means a reorganisation of the core changes one
module of the kit. (The kit also reads the local platform's state objects:
rooms, messages, deliveries, the WebSocket hub.)
"""

from __future__ import annotations

from band_trio import MissingExtraError

try:
    import hypothesis  # noqa: F401

    from band_trio.local import LocalPlatform
except ModuleNotFoundError as exc:  # installed without the `conformance` extra
    raise MissingExtraError("conformance", "the adapter conformance kit") from exc

from band_trio.adapter import ERROR_EVENT_TEXT, MISSING_REPLY_LABEL, MISSING_REPLY_TEXT
from band_trio.local._input import Obj
from band_trio.local.contact_book import add_contact, remove_contact
from band_trio.local.files import upload
from band_trio.runtime import IN_MEMORY
from band_trio.wire import RetryPolicy

__all__ = [
    "ERROR_EVENT_TEXT",
    "IN_MEMORY",
    "MISSING_REPLY_LABEL",
    "MISSING_REPLY_TEXT",
    "LocalPlatform",
    "Obj",
    "RetryPolicy",
    "add_contact",
    "remove_contact",
    "upload",
]
