"""Keeping the local platform's state in SQLite, so that it survives a restart.

:class:`StateFile` is the SQLite file of one platform, ``local-platform.sqlite3``
in a state directory. :meth:`StateFile.load` fills a fresh
:class:`~band_trio.local.store.PlatformState` from it; :meth:`StateFile.save`
writes what changed since the last save, in one transaction. The platform
saves after every request, WebSocket frame and in-process call, before the
pushes that change caused go out, so whatever a client was told is on disk.

What is kept: users and agents with their API keys; rooms with their
participants, stopped agents, task board and goal; messages and events with
each agent's delivery status and attempts; files; memories; contacts and
contact requests; finished bulk deletions. What is not: live sockets and
presence, activity reports (they expire within seconds anyway), the
delegation rate windows, fault rules and the admin key.

How changes are found: messages and memories, the two collections that grow
without bound, are reported one by one by the state
(:meth:`~band_trio.local.directory.Directory.take_changes`). Every other record
is small and the records are few, so each save encodes them all and writes
only those whose encoding differs from what was last written; a save with no
change writes nothing.

Each write is a small local transaction (WAL journal, ``synchronous=NORMAL``:
it survives the process being killed, not a power loss), cheaper than a
thread hop, so it is synchronous on purpose: no Trio cancellation can stop it
half way. A failing write (disk full, read-only file) is logged, the first
time at error level, and counted; the platform keeps serving from memory and
the next save tries the same changes again.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Final

import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.preconf.json import make_converter

from band_trio.errors import BandConfigError
from band_trio.local.directory import ChangedRecords
from band_trio.local.model import (
    AgentRecord,
    ContactRecord,
    ContactRequestRecord,
    Memory,
    Message,
    RoomRecord,
    StoredFile,
    UserRecord,
)
from band_trio.local.store import PlatformState

__all__ = ["STATE_FILE_NAME", "StateFile"]

log = logging.getLogger("band_trio.local.persistence")

STATE_FILE_NAME: Final = "local-platform.sqlite3"
"""The name of the platform's SQLite file inside its state directory."""

_SCHEMA_VERSION: Final = 1
_SCHEMA: Final = (
    # Users, agents, rooms (without their messages and files), contacts,
    # contact requests and bulk jobs, one JSON body each; rowid keeps the
    # order they were created in, which the platform lists them by.
    """CREATE TABLE IF NOT EXISTS records (
        kind TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (kind, id))""",
    """CREATE TABLE IF NOT EXISTS messages (
        id TEXT PRIMARY KEY, room_id TEXT NOT NULL, seq INTEGER NOT NULL,
        body TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS messages_by_room ON messages (room_id)",
    """CREATE TABLE IF NOT EXISTS memories (
        id TEXT PRIMARY KEY, seq INTEGER NOT NULL, body TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS files (
        id TEXT PRIMARY KEY, room_id TEXT NOT NULL, body TEXT NOT NULL,
        data BLOB NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS settings (
        key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
)

Statement = tuple[str, tuple[Any, ...]]
RecordKey = tuple[str, str]


def _make_converter() -> cattrs.Converter:
    converter = make_converter()
    omit = override(omit=True)
    # What a room record leaves out: its messages and files have their own
    # tables, the per-agent lists are rebuilt from the messages, and the inbox
    # floors and activity reports are caches of the moment.
    converter.register_unstructure_hook(
        RoomRecord,
        make_dict_unstructure_fn(
            RoomRecord,
            converter,
            messages=omit,
            by_id=omit,
            inbox=omit,
            inbox_floor=omit,
            context=omit,
            activity=omit,
            files=omit,
        ),
    )
    converter.register_structure_hook(
        RoomRecord,
        make_dict_structure_fn(
            RoomRecord,
            converter,
            messages=omit,
            by_id=omit,
            inbox=omit,
            inbox_floor=omit,
            context=omit,
            activity=omit,
            files=omit,
        ),
    )
    converter.register_unstructure_hook(
        StoredFile, make_dict_unstructure_fn(StoredFile, converter, data=omit)
    )
    return converter


_converter = _make_converter()


def _dumps(record: object) -> str:
    # ASCII escapes: a lone surrogate posted through the Python API still encodes.
    return json.dumps(_converter.unstructure(record), separators=(",", ":"))


def _loads(body: str, cls: type[Any]) -> Any:
    return _converter.structure(json.loads(body), cls)


def _acquire_lock(lock_path: Path) -> IO[bytes]:
    """Take the advisory lock ``lock_path`` without waiting."""
    try:
        handle = open(lock_path, "a+b")  # noqa: SIM115 - held until close()
    except OSError as exc:
        raise BandConfigError(f"cannot open the state lock {str(lock_path)!r}: {exc}") from exc
    in_use = BandConfigError(
        f"the state directory {str(lock_path.parent)!r} is in use by another local platform"
    )
    try:
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
            import msvcrt  # exists on Windows only

            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl  # exists on POSIX only

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise in_use from None
    except OSError as exc:
        handle.close()
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            raise in_use from None
        raise BandConfigError(f"cannot lock {str(lock_path)!r}: {exc}") from exc
    return handle


class StateFile:
    """The SQLite file a local platform's state is kept in.

    Build it with :meth:`open`. Not thread-safe: use it from the Trio thread
    that serves the platform.

    Attributes:
        path: the SQLite file.
        fresh: True when the file held no state when it was opened.
        write_errors: saves that failed (their changes are retried by the next save).
    """

    def __init__(self, connection: sqlite3.Connection, path: Path, lock: IO[bytes]) -> None:
        self.path = path
        self.write_errors = 0
        self._db = connection
        self._lock: IO[bytes] | None = lock
        self._saved: dict[RecordKey, str] = {}
        self._file_ids: set[str] = set()
        self._pending = ChangedRecords()
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, _SCHEMA_VERSION):
            raise BandConfigError(
                f"{str(path)!r} holds local platform state of an unknown version ({version})"
            )
        for statement in _SCHEMA:
            connection.execute(statement)
        connection.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
        self.fresh = connection.execute("SELECT 1 FROM records LIMIT 1").fetchone() is None

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> StateFile:
        """Open (or create) the state file in ``directory``, created with mode
        0700 if missing, and hold its lock until :meth:`close`.

        Raises:
            BandConfigError: another platform holds the directory, or the file
                cannot be opened or is not a local platform's state.
        """
        folder = Path(directory)
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise BandConfigError(
                f"cannot create the state directory {str(folder)!r}: {exc}"
            ) from exc
        path = folder / STATE_FILE_NAME
        lock = _acquire_lock(folder / (STATE_FILE_NAME + ".lock"))
        try:
            try:
                db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            except sqlite3.Error as exc:
                raise BandConfigError(f"cannot open the state file {str(path)!r}: {exc}") from exc
            try:
                # The file holds API keys: only its owner may read it.
                os.chmod(path, 0o600)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                return cls(db, path, lock)
            except (OSError, sqlite3.Error) as exc:
                db.close()
                raise BandConfigError(
                    f"{str(path)!r} is not a usable local platform state file: {exc}"
                ) from exc
            except BaseException:
                db.close()
                raise
        except BaseException:
            lock.close()
            raise

    def close(self) -> None:
        """Close the file and release the directory. Idempotent."""
        if self._lock is not None:
            self._db.close()
            self._lock.close()
            self._lock = None

    # ------------------------------------------------------------------ settings

    def setting(self, key: str) -> str | None:
        """A value remembered with :meth:`remember` (None if never set)."""
        row = self._db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def remember(self, key: str, value: str) -> None:
        """Keep a small setting of the platform (for example its last port).

        A failing write is logged and counted, like a failing :meth:`save`.
        """
        if self._lock is None:
            return
        try:
            self._db.execute(
                "INSERT INTO settings VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
        except sqlite3.Error as exc:
            self._write_failed(exc)

    # ------------------------------------------------------------------ reading

    def load(self, state: PlatformState) -> None:
        """Fill ``state``, fresh and empty, with what the file holds, then make
        it report its changes for :meth:`save`.

        Raises:
            BandConfigError: a stored record cannot be read back.
        """
        db = self._db
        try:
            records: dict[str, list[str]] = {}
            for kind, body in db.execute("SELECT kind, body FROM records ORDER BY rowid"):
                records.setdefault(kind, []).append(body)
            for body in records.get("user", ()):
                state.restore_principal(_loads(body, UserRecord))
            for body in records.get("agent", ()):
                state.restore_principal(_loads(body, AgentRecord))
            by_room: dict[str, list[Message]] = {}
            top = 0
            for room_id, seq, body in db.execute(
                "SELECT room_id, seq, body FROM messages ORDER BY seq"
            ):
                by_room.setdefault(room_id, []).append(_loads(body, Message))
                top = max(top, seq)
            for body in records.get("room", ()):
                room: RoomRecord = _loads(body, RoomRecord)
                state.restore_room(room, by_room.get(room.id, ()))
            for room_id, body, data in db.execute(
                "SELECT room_id, body, data FROM files ORDER BY rowid"
            ):
                loaded = state.rooms.get(room_id)
                if loaded is not None:
                    # plain strings but for the bytes, kept in their own column
                    stored = StoredFile(**json.loads(body), data=bytes(data))
                    loaded.files[stored.id] = stored
                    self._file_ids.add(stored.id)
            for seq, body in db.execute("SELECT seq, body FROM memories ORDER BY seq"):
                memory: Memory = _loads(body, Memory)
                state.memories[memory.id] = memory
                top = max(top, seq)
            for body in records.get("contact", ()):
                contact: ContactRecord = _loads(body, ContactRecord)
                state.contacts[contact.id] = contact
            for body in records.get("contact_request", ()):
                request: ContactRequestRecord = _loads(body, ContactRequestRecord)
                state.contact_requests[request.id] = request
            for body in records.get("bulk_job", ()):
                job = json.loads(body)
                state.bulk_jobs[job["id"]] = job
        except (sqlite3.Error, ValueError, KeyError, TypeError, cattrs.BaseValidationError) as exc:
            raise BandConfigError(
                f"cannot read the local platform state in {str(self.path)!r}: {exc}"
            ) from exc
        state.restore_seq(top)
        self._saved = dict(self._records(state))
        state.track_changes()

    # ------------------------------------------------------------------ writing

    def save(self, state: PlatformState) -> None:
        """Write what changed in ``state`` since the last save, in one transaction.

        A failing write is logged and counted in :attr:`write_errors`, never
        raised; the next save writes the same changes again.
        """
        if self._lock is None:
            return
        changed = state.take_changes()
        self._pending.messages.update(changed.messages)
        self._pending.memories |= changed.memories
        current = dict(self._records(state))
        statements: list[Statement] = []
        for key, body in current.items():
            if self._saved.get(key) != body:
                statements.append(
                    (
                        "INSERT INTO records VALUES (?, ?, ?) "
                        "ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body",
                        (*key, body),
                    )
                )
        for key in self._saved.keys() - current.keys():
            statements.append(("DELETE FROM records WHERE kind = ? AND id = ?", key))
            if key[0] == "room":
                statements.append(("DELETE FROM messages WHERE room_id = ?", (key[1],)))
                statements.append(("DELETE FROM files WHERE room_id = ?", (key[1],)))
        for message in self._pending.messages.values():
            room = state.rooms.get(message.room_id)
            if room is not None and room.by_id.get(message.id) is message:
                statements.append(
                    (
                        "INSERT OR REPLACE INTO messages VALUES (?, ?, ?, ?)",
                        (message.id, message.room_id, message.seq, _dumps(message)),
                    )
                )
        for memory_id in self._pending.memories:
            memory = state.memories.get(memory_id)
            if memory is None:
                statements.append(("DELETE FROM memories WHERE id = ?", (memory_id,)))
            else:
                statements.append(
                    (
                        "INSERT OR REPLACE INTO memories VALUES (?, ?, ?)",
                        (memory.id, memory.seq, _dumps(memory)),
                    )
                )
        new_files = [
            stored
            for room in state.rooms.values()
            for file_id, stored in room.files.items()
            if file_id not in self._file_ids
        ]
        for stored in new_files:
            statements.append(
                (
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
                    (stored.id, stored.room_id, _dumps(stored), stored.data),
                )
            )
        if not statements:
            return
        try:
            self._write(statements)
        except sqlite3.Error as exc:
            self._write_failed(exc)
            return
        self._saved = current
        self._file_ids.update(stored.id for stored in new_files)
        self._pending = ChangedRecords()

    def _write_failed(self, exc: sqlite3.Error) -> None:
        self.write_errors += 1
        report = log.error if self.write_errors == 1 else log.debug
        report("local platform state write failed (kept in memory only): %s", exc)

    def _write(self, statements: list[Statement]) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                db.execute(sql, params)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    @staticmethod
    def _records(state: PlatformState) -> Iterator[tuple[RecordKey, str]]:
        """Every small record of ``state``, encoded."""
        for user in state.users.values():
            yield ("user", user.id), _dumps(user)
        for agent in state.agents.values():
            yield ("agent", agent.id), _dumps(agent)
        for room in state.rooms.values():
            yield ("room", room.id), _dumps(room)
        for contact in state.contacts.values():
            yield ("contact", contact.id), _dumps(contact)
        for request in state.contact_requests.values():
            yield ("contact_request", request.id), _dumps(request)
        for job_id, job in state.bulk_jobs.items():
            yield ("bulk_job", job_id), json.dumps(job, sort_keys=True)
