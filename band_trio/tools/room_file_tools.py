"""``RoomFileTools``: the file tools of one room (list, read, upload).

``AgentTools`` exposes them to adapters and models (posting an uploaded file
with its caption stays there, with the other posts); this class holds their
REST calls, the inline limits and the attachment cache of the turn.
"""

from __future__ import annotations

import base64
import datetime as _dt
from typing import Any

from band_trio.errors import BandToolError, NotFoundError
from band_trio.tools._schema import check_resource_id
from band_trio.wire.models import Attachment
from band_trio.wire.rest import RestClient

__all__ = [
    "FILE_UNAVAILABLE",
    "INLINE_IMAGE_LIMIT",
    "INLINE_TEXT_LIMIT",
    "ROOM_FILE_LIMIT",
    "RoomFileTools",
]

FILE_UNAVAILABLE = "File not found, or file transfer is unavailable in this room."
INLINE_TEXT_LIMIT = 16384
INLINE_IMAGE_LIMIT = 5 * 1024 * 1024
ROOM_FILE_LIMIT = 1_000_000
_INLINE_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
# Text the model can read even when the platform labels it application/* (the
# official SDK inlines only text/*).
_TEXTUAL_APPLICATION_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/csv",
        "application/javascript",
        "application/x-ndjson",
        "application/toml",
    }
)
_CONTEXT_PAGE_LIMIT = 50
_MAX_CONTEXT_PAGES = 200


def _expired(attachment: Attachment, now: _dt.datetime) -> bool:
    if not attachment.expires_at:
        return False
    try:
        when = _dt.datetime.fromisoformat(attachment.expires_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    return when <= now


class RoomFileTools:
    """The file tools of one room, on the agent's REST client.

    Args:
        rest: the REST client.
        room_id: the room whose files the tools act on.
    """

    def __init__(self, rest: RestClient, room_id: str) -> None:
        self._rest = rest
        self._room_id = room_id
        self._attachments: dict[str, Attachment] = {}

    async def list_room_files(self, cursor: str | None = None) -> dict[str, Any]:
        """The ``band_list_room_files`` tool (see :meth:`AgentTools.list_room_files`)."""
        page = await self._rest.get_context(self._room_id, cursor=cursor, limit=_CONTEXT_PAGE_LIMIT)
        seen: set[str] = set()
        files = []
        for message in page.items:
            for att in message.attachments:
                self._attachments[att.id] = att
                if att.id in seen:
                    continue
                seen.add(att.id)
                files.append(
                    {
                        "id": att.id,
                        "name": att.name,
                        "content_type": att.content_type,
                        "bytes": att.bytes,
                        "has_thumb": att.has_thumb,
                        "expires_at": att.expires_at,
                    }
                )
        return {"data": files, "next_cursor": page.next_cursor if page.has_more else None}

    async def _find_attachment(self, file_id: str) -> Attachment | None:
        cursor: str | None = None
        seen_cursors: set[str] = set()
        for _ in range(_MAX_CONTEXT_PAGES):
            page = await self._rest.get_context(
                self._room_id, cursor=cursor, limit=_CONTEXT_PAGE_LIMIT
            )
            found: Attachment | None = None
            for message in page.items:
                for att in message.attachments:
                    self._attachments[att.id] = att
                    if att.id == file_id:
                        found = att
            if found is not None:
                return found
            if not page.has_more or not page.next_cursor or page.next_cursor in seen_cursors:
                return None
            seen_cursors.add(page.next_cursor)
            cursor = page.next_cursor
        return None

    async def read_room_file(self, file_id: str) -> dict[str, Any]:
        """The ``band_read_room_file`` tool (see :meth:`AgentTools.read_room_file`)."""
        file_id = check_resource_id(file_id, "file_id")
        now = _dt.datetime.now(_dt.UTC)
        att = self._attachments.get(file_id)
        if att is None or _expired(att, now):
            att = await self._find_attachment(file_id)
        if att is None or _expired(att, now):
            raise BandToolError(FILE_UNAVAILABLE)
        ctype = att.content_type.split(";")[0].strip().lower()
        textual = ctype.startswith("text/") or ctype in _TEXTUAL_APPLICATION_TYPES
        if textual and att.bytes <= INLINE_TEXT_LIMIT:
            data = await self._download(file_id)
            text = data.decode("utf-8", errors="replace")
            result: dict[str, Any] = {
                "name": att.name,
                "content_type": att.content_type,
                "bytes": att.bytes,
                "text": text,
            }
            if "\ufffd" in text:
                result["description"] = (
                    "Some bytes are not valid UTF-8 and were replaced with U+FFFD."
                )
            return result
        if ctype in _INLINE_IMAGE_TYPES and att.bytes <= INLINE_IMAGE_LIMIT:
            data = await self._download(file_id)
            return {
                "content": [
                    {
                        "type": "image",
                        "data": base64.b64encode(data).decode("ascii"),
                        "mimeType": ctype,
                    }
                ]
            }
        if textual:
            reason = f"exceeds the {INLINE_TEXT_LIMIT}-byte inline text limit"
        elif ctype in _INLINE_IMAGE_TYPES:
            reason = f"exceeds the {INLINE_IMAGE_LIMIT}-byte inline image limit"
        else:
            reason = "is not a previewable text or image type"
        return {
            "name": att.name,
            "content_type": att.content_type,
            "bytes": att.bytes,
            "description": f"File not shown inline: {reason}. Its contents were not fetched.",
        }

    async def _download(self, file_id: str) -> bytes:
        try:
            return await self._rest.download_file(self._room_id, file_id)
        except NotFoundError as exc:
            raise BandToolError(FILE_UNAVAILABLE) from exc

    def file_bytes(self, content: str, filename: str) -> bytes:
        """The bytes of a text file to upload as ``filename``.

        Raises:
            BandToolError: a non-ASCII file name, or content over 1000000 bytes.
        """
        if not filename or not all(0x20 <= ord(ch) <= 0x7E for ch in filename):
            raise BandToolError(
                f"File name {filename!r} must be plain printable ASCII; rename the file "
                "and try again."
            )
        data = content.encode("utf-8")
        if len(data) > ROOM_FILE_LIMIT:
            raise BandToolError(
                f"File content is {len(data)} bytes; the limit is {ROOM_FILE_LIMIT} bytes."
            )
        return data

    async def upload(self, data: bytes, filename: str) -> Attachment:
        """Upload ``data`` as the text file ``filename`` to the room.

        Raises:
            BandToolError: file transfer is unavailable in this room.
        """
        try:
            return await self._rest.upload_file(
                self._room_id, data, filename=filename, content_type="text/plain"
            )
        except NotFoundError as exc:
            raise BandToolError(FILE_UNAVAILABLE) from exc
