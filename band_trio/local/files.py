"""Room files: upload with sha256 and dedupe, download with ``Range``."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from band_trio.local.model import JSON, Principal, StoredFile, new_id, now_ts
from band_trio.local.refusal import RequestRefusedError, bad_request, fail, invalid, not_found
from band_trio.local.store import PlatformState

__all__ = ["download", "sniff_content_type", "upload"]

# ASCII digits, at most 18 of them: a longer or non-ASCII range is not one we
# parse (int() would accept other scripts' digits, or refuse 5,000 of them).
_RANGE_RE = re.compile(r"^bytes=([0-9]{0,18})-([0-9]{0,18})$", re.ASCII)

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
)


def sniff_content_type(data: bytes, declared: str | None) -> str:
    """The content type derived from the bytes (the declared one is only a hint
    for text formats)."""
    for magic, content_type in _MAGIC:
        if data.startswith(magic):
            return content_type
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    if declared and declared.split(";")[0].strip().startswith(("text/", "application/json")):
        return declared.split(";")[0].strip()
    return "text/plain"


def upload(
    state: PlatformState,
    actor: Principal,
    room_id: str,
    data: bytes,
    headers: Mapping[str, str],
    *,
    max_bytes: int,
) -> JSON:
    """Store ``data`` as a room file (``PUT /chats/{room}/files``). Identical bytes in one room dedupe to
    the first record.

    Raises:
        RequestRefusedError: 404 foreign room, 400 missing ``x-file-name``, 413 too
            large, 422 empty or checksum mismatch.
    """
    room = state.room_for(actor, room_id)
    if len(data) > max_bytes:
        raise fail(413, f"file is too large (maximum is {max_bytes} bytes)")
    name = headers.get("x-file-name", "").strip()
    if not name:
        raise bad_request("the x-file-name header is required")
    name = name.replace("\\", "/").rsplit("/", 1)[-1][:255] or "file"
    if not data:
        raise invalid("/body", "can't be empty")
    digest = hashlib.sha256(data).hexdigest()
    declared = headers.get("x-file-sha256")
    if declared is not None and declared.strip().lower() != digest:
        raise invalid("/x-file-sha256", "does not match the uploaded bytes")
    for stored in room.files.values():
        if stored.sha256 == digest:
            return stored.attachment_json()
    stored = StoredFile(
        id=new_id(),
        room_id=room.id,
        name=name,
        content_type=sniff_content_type(data, headers.get("content-type")),
        data=data,
        sha256=digest,
        uploaded_by=actor.id,
        inserted_at=now_ts(),
    )
    room.files[stored.id] = stored
    return stored.attachment_json()


def download(
    state: PlatformState, actor: Principal, room_id: str, file_id: str, range_header: str | None
) -> tuple[int, list[tuple[str, str]], bytes]:
    """The bytes of a room file (``GET /chats/{room}/files/{id}``) as ``(status, headers, body)``.

    ``Range: bytes=a-b | a- | -n`` is honoured (206); unparseable ranges are
    ignored (200, whole file); unsatisfiable ones are 416.

    Raises:
        RequestRefusedError: 404 for anything unreachable, 416 for a bad range.
    """
    room = state.rooms.get(room_id)
    if room is None or actor.id not in room.members or file_id not in room.files:
        raise not_found("file")
    stored = room.files[file_id]
    size = len(stored.data)
    headers = [
        ("content-type", stored.content_type),
        ("content-disposition", f'attachment; filename="{_quote(stored.name)}"'),
        ("accept-ranges", "bytes"),
        ("x-file-sha256", stored.sha256),
    ]
    match = _RANGE_RE.match(range_header.strip()) if range_header else None
    if match is None or (match.group(1) == "" and match.group(2) == ""):
        return 200, headers, stored.data
    first, last = match.group(1), match.group(2)
    if first == "":
        length = int(last)
        if length == 0:
            raise _unsatisfiable(size)
        start, end = max(0, size - length), size - 1
    else:
        start = int(first)
        end = size - 1 if last == "" else min(int(last), size - 1)
        if last != "" and int(last) < start:
            return 200, headers, stored.data
    if start >= size or size == 0:
        raise _unsatisfiable(size)
    headers.append(("content-range", f"bytes {start}-{end}/{size}"))
    return 206, headers, stored.data[start : end + 1]


def _unsatisfiable(size: int) -> RequestRefusedError:
    return RequestRefusedError(
        416,
        f"range not satisfiable (file has {size} bytes)",
        headers=[("content-range", f"bytes */{size}")],
    )


def _quote(name: str) -> str:
    return "".join(ch if ch.isprintable() and ch not in '"\\' else "_" for ch in name)
