"""Files attached to a room."""

from __future__ import annotations

import hashlib

from band_trio.wire.models import Attachment
from band_trio.wire.rest._client_core import API_PREFIX, RestClientCore, path_segment

__all__ = ["FileEndpoints"]


class FileEndpoints(RestClientCore):
    """``/agent/chats/{id}/files...``."""

    async def upload_file(
        self,
        chat_id: str,
        data: bytes,
        *,
        filename: str,
        content_type: str = "application/octet-stream",
    ) -> Attachment:
        """``PUT /agent/chats/{id}/files`` — upload bytes (identical bytes dedupe).

        The SHA-256 header is computed here.

        Raises:
            ContentTooLargeError: the file is too large (HTTP 413).
        """
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/files"
        headers = {
            "x-file-name": filename,
            "x-file-sha256": hashlib.sha256(data).hexdigest(),
            "Content-Type": content_type,
        }
        # Idempotent: the platform dedupes identical bytes in a room to one file.
        response = await self._request(
            "PUT", path, content=bytes(data), headers=headers, idempotent=True
        )
        return self._one(response, Attachment, "PUT", path)

    async def download_file(
        self, chat_id: str, file_id: str, *, byte_range: str | None = None
    ) -> bytes:
        """``GET /agent/chats/{id}/files/{fid}`` — a file's bytes.

        Args:
            chat_id: the room.
            file_id: the attachment id.
            byte_range: an HTTP ``Range`` value, e.g. ``"bytes=0-99"``.

        Raises:
            RangeNotSatisfiableError: HTTP 416.
        """
        path = f"{API_PREFIX}/chats/{path_segment(chat_id)}/files/{path_segment(file_id)}"
        headers = {"Range": byte_range} if byte_range is not None else None
        response = await self._request("GET", path, headers=headers)
        return response.content
