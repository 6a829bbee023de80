"""The official record: an append-only SQLite journal, numbered and hash-chained.

Every event is one row. Each row's hash covers the previous row's hash, so an edited, inserted
or deleted row breaks the chain; the head (last id and hash) is kept in its own table so that
cutting rows off the end is found too. WAL with synchronous=FULL: a row is on disk when
`append` returns, which is what makes a call survive a power cut.

Published calls are acknowledged in a separate table, outside the chain: the outbox of calls
still to publish is "call events without an acknowledgement".
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

GENESIS = "0" * 64
PUBLISHED_KINDS = ("call", "void")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    clock_ok INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    prev TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS head (one INTEGER PRIMARY KEY CHECK (one = 1), id INTEGER, hash TEXT);
CREATE TABLE IF NOT EXISTS frames (event_id INTEGER PRIMARY KEY, jpeg BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS published (seq INTEGER PRIMARY KEY, ts TEXT NOT NULL);
"""


class RecordError(Exception):
    """The record cannot be written (disk full, read-only, damaged)."""


@dataclass(frozen=True)
class Event:
    id: int
    ts: str
    clock_ok: bool
    kind: str
    data: dict[str, Any]
    prev: str
    hash: str


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _canonical(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def chain_hash(prev: str, id: int, ts: str, clock_ok: bool, kind: str, data_json: str,
               frame: bytes | None = None) -> str:
    """The row's hash covers the previous hash, every column and the frame kept with it."""
    frame_sha = hashlib.sha256(frame).hexdigest() if frame is not None else ""
    text = "\x1f".join((prev, str(id), ts, "1" if clock_ok else "0", kind, data_json, frame_sha))
    return hashlib.sha256(text.encode()).hexdigest()


class Record:
    def __init__(self, path: str | Path, clock_ok=lambda: True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._clock_ok = clock_ok
        self._lock = threading.RLock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        row = self._db.execute("SELECT id, hash FROM head").fetchone()
        self._head: tuple[int, str] = (row[0], row[1]) if row else (0, GENESIS)

    # -- writing ---------------------------------------------------------------------------
    def append(self, kind: str, data: dict[str, Any], frame_jpeg: bytes | None = None,
               ts: str | None = None) -> Event:
        data_json = _canonical(data)
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                row = self._db.execute("SELECT id, hash FROM head").fetchone()
                last_id, prev = row if row else (0, GENESIS)
                new_id = last_id + 1
                ts = ts or utc_now()
                clock_ok = bool(self._clock_ok())
                digest = chain_hash(prev, new_id, ts, clock_ok, kind, data_json, frame_jpeg)
                self._db.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?)",
                                 (new_id, ts, int(clock_ok), kind, data_json, prev, digest))
                if frame_jpeg is not None:
                    self._db.execute("INSERT INTO frames VALUES (?,?)", (new_id, frame_jpeg))
                self._db.execute("INSERT OR REPLACE INTO head VALUES (1,?,?)", (new_id, digest))
                self._db.execute("COMMIT")
                self._head = (new_id, digest)
            except sqlite3.Error as e:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise RecordError(f"cannot write the record {self.path}: {e}") from e
        return Event(new_id, ts, clock_ok, kind, json.loads(data_json), prev, digest)

    def mark_published(self, seq: int) -> None:
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO published VALUES (?,?)", (seq, utc_now()))

    # -- reading ---------------------------------------------------------------------------
    def events(self, kinds: tuple[str, ...] | None = None, from_id: int = 1,
               to_id: int | None = None) -> Iterator[Event]:
        sql = "SELECT id, ts, clock_ok, kind, data, prev, hash FROM events WHERE id >= ?"
        args: list[Any] = [from_id]
        if to_id is not None:
            sql += " AND id <= ?"
            args.append(to_id)
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            args.extend(kinds)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        for r in rows:
            yield Event(r[0], r[1], bool(r[2]), r[3], json.loads(r[4]), r[5], r[6])

    def frame(self, event_id: int) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT jpeg FROM frames WHERE event_id = ?", (event_id,)).fetchone()
        return row[0] if row else None

    def unpublished(self) -> list[dict[str, Any]]:
        """Call and void messages not yet acknowledged by the broker, in seq order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT data FROM events WHERE kind IN ('call','void') AND "
                "json_extract(data, '$.seq') NOT IN (SELECT seq FROM published) "
                "ORDER BY json_extract(data, '$.seq')").fetchall()
        return [json.loads(r[0]) for r in rows]

    def last_id(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT id FROM head").fetchone()
        return row[0] if row else 0

    def head(self) -> tuple[int, str]:
        """The last event this process wrote or found at open: id and hash ((0, GENESIS) when
        empty). Published with every state, so copies held outside the appliance pin the chain
        down; kept in memory, so a state can still be published when the disk has failed."""
        with self._lock:
            return self._head

    # -- checking --------------------------------------------------------------------------
    def verify(self, anchors: dict[int, str] | None = None) -> list[str]:
        """Problems found in the chain; an empty list means the record is intact.

        `anchors` maps event ids to the hashes published for them at the time (the `record`
        of a `state` message someone kept): a rewritten chain, every hash recomputed, passes
        every other check but not these."""
        problems: list[str] = []
        prev, expected = GENESIS, 1
        with self._lock:
            rows = self._db.execute(
                "SELECT e.id, e.ts, e.clock_ok, e.kind, e.data, e.prev, e.hash, f.jpeg "
                "FROM events e LEFT JOIN frames f ON f.event_id = e.id ORDER BY e.id").fetchall()
            head = self._db.execute("SELECT id, hash FROM head").fetchone()
        for id_, ts, clock_ok, kind, data, row_prev, digest, frame in rows:
            if id_ != expected:
                problems.append(f"event {expected}: missing (next is {id_})")
            if row_prev != prev:
                problems.append(f"event {id_}: does not follow the previous event (chain broken)")
            if chain_hash(row_prev, id_, ts, bool(clock_ok), kind, data, frame) != digest:
                problems.append(f"event {id_}: contents or frame do not match its hash (edited)")
            prev, expected = digest, id_ + 1
        last = rows[-1][0] if rows else 0
        if (head or (0, GENESIS))[0] != last or (rows and head and head[1] != prev):
            problems.append(f"head says event {head[0] if head else 0} is last but the record ends at {last} "
                            "(events cut off or added)")
        hashes = {r[0]: r[6] for r in rows}
        for id_, published in sorted((anchors or {}).items()):
            if id_ not in hashes:
                problems.append(f"event {id_}: published as {published[:12]}... but not in the record (cut off)")
            elif hashes[id_] != published:
                problems.append(f"event {id_}: hash {hashes[id_][:12]}... is not the {published[:12]}... published "
                                "at the time (the record was rewritten)")
        return problems

    def close(self) -> None:
        with self._lock:
            self._db.close()
