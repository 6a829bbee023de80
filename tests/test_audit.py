"""`ballreader audit verify` and `export`, run as real processes on a real record.

The record is made by the real engine; tampering is done with the `sqlite3` command-line tool,
as someone with access to the appliance's disk would.
"""
from __future__ import annotations

import csv
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import cv2
import numpy as np
import pytest

from services.engine import DrawEngine
from services.record import Record

ROOT = Path(__file__).resolve().parent.parent
SQLITE3 = shutil.which("sqlite3")


class Clock:
    def __init__(self, start: datetime) -> None:
        self.t = start

    def __call__(self) -> datetime:
        return self.t

    def advance(self, **delta) -> None:
        self.t += timedelta(**delta)


def _jpeg(value: int) -> bytes:
    image = np.full((24, 32, 3), value, np.uint8)
    return cv2.imencode(".jpg", image)[1].tobytes()


@pytest.fixture
def record_path(tmp_path) -> Path:
    """Two evenings: 2 Dec 18:00-19:00 UTC with four calls (one voided), 3 Dec with two calls."""
    path = tmp_path / "record.db"
    clock = Clock(datetime(2026, 12, 2, 18, 0, tzinfo=timezone.utc))
    engine = DrawEngine(Record(path), now=clock)
    engine.new_occasion(by="anne")
    engine.new_game("four_corners", prize="$25", all_balls_in_blower=True, by="anne")
    for n in (5, 20, 35, 50):
        clock.advance(minutes=10)
        engine.on_reading(n, 0.9995, "commit", 5, frame_jpeg=_jpeg(n))
    engine.void(2, reason="fell back", by="anne")
    engine.end_game(by="anne")
    engine.end_occasion(by="anne")
    clock.advance(days=1)
    engine.new_occasion(by="bob")
    engine.new_game("any_line", prize="$10", all_balls_in_blower=True, by="bob")
    for n in (61, 62):
        clock.advance(minutes=1)
        engine.on_reading(n, 0.9995, "commit", 5, frame_jpeg=_jpeg(n))
    engine.record.close()
    return path


def audit(*args: str) -> subprocess.CompletedProcess:
    """`ballreader audit ...`, as a real process."""
    return subprocess.run([sys.executable, "-m", "services.cli", "audit", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def sqlite(path: Path, sql: str) -> None:
    subprocess.run([SQLITE3, str(path), sql], check=True, timeout=30)


needs_sqlite3 = pytest.mark.skipif(SQLITE3 is None, reason="the sqlite3 command-line tool is not installed")


def test_untouched_record_verifies(record_path):
    done = audit("verify", "--record", str(record_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "intact" in done.stdout


@needs_sqlite3
@pytest.mark.parametrize("sql,expected", [
    ("UPDATE events SET data = replace(data, '\"B5\"', '\"B6\"') WHERE kind = 'call'", "edited"),
    ("DELETE FROM events WHERE id = 5", "missing"),
    ("DELETE FROM events WHERE id = (SELECT max(id) FROM events)", "cut off"),
    ("INSERT INTO events SELECT id + 1000, ts, clock_ok, kind, data, prev, hash FROM events WHERE id = 4",
     "added"),
    ("UPDATE events SET ts = '2026-12-01T10:00:00.000Z' WHERE id = 3", "edited"),
])
def test_a_record_edited_with_sqlite3_fails(record_path, sql, expected):
    sqlite(record_path, sql)
    done = audit("verify", "--record", str(record_path))
    assert done.returncode == 1
    assert "NOT intact" in done.stdout and expected in done.stdout


@needs_sqlite3
def test_a_rehashed_row_still_breaks_the_chain(record_path):
    # Someone who edits a row and recomputes its hash still breaks the next row's link.
    rec = Record(record_path)
    victim = next(e for e in rec.events(("call",)))
    rec.close()
    from services.record import chain_hash
    data = json.dumps({**victim.data, "ball": "B6", "number": 6}, sort_keys=True, separators=(",", ":"))
    digest = chain_hash(victim.prev, victim.id, victim.ts, victim.clock_ok, victim.kind, data)
    sqlite(record_path, f"UPDATE events SET data = '{data}', hash = '{digest}' WHERE id = {victim.id}")
    done = audit("verify", "--record", str(record_path))
    assert done.returncode == 1 and f"event {victim.id + 1}: does not follow" in done.stdout


def rewrite_with_every_hash_recomputed(path: Path, event_id: int, **changes) -> None:
    """What someone with the disk could do: change one event and recompute the whole chain after it."""
    from services.record import chain_hash

    db = sqlite3.connect(path)
    rows = db.execute("SELECT e.id, e.ts, e.clock_ok, e.kind, e.data, e.prev, f.jpeg FROM events e "
                      "LEFT JOIN frames f ON f.event_id = e.id ORDER BY e.id").fetchall()
    prev = None
    for id_, ts, clock_ok, kind, data, row_prev, jpeg in rows:
        if id_ == event_id:
            data = json.dumps({**json.loads(data), **changes}, sort_keys=True, separators=(",", ":"))
        prev = row_prev if prev is None else prev
        digest = chain_hash(prev, id_, ts, bool(clock_ok), kind, data, jpeg)
        db.execute("UPDATE events SET data = ?, prev = ?, hash = ? WHERE id = ?", (data, prev, digest, id_))
        prev = digest
    db.execute("UPDATE head SET hash = ?", (prev,))
    db.commit()
    db.close()


def test_a_rewritten_record_fails_against_the_hashes_its_state_messages_published(record_path, tmp_path):
    # A hall's logger kept the retained state (mosquitto_sub -v output): it carries the record's head.
    state = DrawEngine(Record(record_path)).state()
    head = state["record"]
    assert (head["event"], len(head["hash"])) == (Record(record_path).last_id(), 64)
    log = tmp_path / "states.log"
    log.write_text("bingo/hall-1/availability online\n" f"bingo/hall-1/state {json.dumps(state)}\n")
    assert audit("verify", "--record", str(record_path), "--anchors", str(log)).returncode == 0

    victim = next(Record(record_path).events(("call",)))
    rewrite_with_every_hash_recomputed(record_path, victim.id, ball="B6", number=6)
    plain = audit("verify", "--record", str(record_path))
    assert plain.returncode == 0  # the chain alone cannot tell
    anchored = audit("verify", "--record", str(record_path), "--anchors", str(log))
    assert anchored.returncode == 1 and f"event {head['event']}: hash" in anchored.stdout
    assert "rewritten" in anchored.stdout
    # An anchor from before the edited event still matches; a malformed one is refused.
    early = next(e for e in Record(record_path).events() if e.id == victim.id - 1)
    assert audit("verify", "--record", str(record_path), "--anchor", f"{early.id}:{early.hash}").returncode == 0
    bad = audit("verify", "--record", str(record_path), "--anchor", "12:abc")
    assert bad.returncode == 2 and "EVENT:HASH" in bad.stderr


def test_verify_takes_the_record_from_the_config(record_path, tmp_path):
    config = tmp_path / "ballreader.toml"
    config.write_text(f'[record]\npath = "{record_path}"\n')
    assert audit("verify", "--config", str(config)).returncode == 0


def test_a_missing_record_is_an_error_and_is_not_created(tmp_path):
    missing = tmp_path / "nowhere.db"
    done = audit("verify", "--record", str(missing))
    assert done.returncode == 2 and "no record" in done.stderr
    assert not missing.exists()


def test_export_writes_the_range_with_calls_and_frames(record_path, tmp_path):
    out = tmp_path / "exam"
    done = audit("export", "--record", str(record_path), "--from", "2026-12-02T18:00:00Z",
                 "--to", "2026-12-03", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr

    rec = Record(record_path)
    wanted = [e for e in rec.events() if e.ts.startswith("2026-12-02")]
    with open(out / "events.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["id"]) for r in rows] == [e.id for e in wanted]
    assert all(json.loads(r["data"]) == e.data and r["hash"] == e.hash for r, e in zip(rows, wanted))
    assert [e["id"] for e in json.loads((out / "events.json").read_text())] == [e.id for e in wanted]

    with open(out / "calls.csv", newline="") as f:
        calls = list(csv.DictReader(f))
    assert [(c["seq"], c["ball"], c["event_type"]) for c in calls] == [
        ("1", "B5", "called"), ("2", "I20", "called"), ("3", "N35", "called"), ("4", "G50", "called"),
        ("5", "I20", "voided")]
    assert calls[4]["voids_seq"] == "2" and calls[4]["by"] == "anne"
    for call in calls[:4]:
        frame = out / call["frame"]
        assert frame.name == f"{call['event_id']}.jpg"
        assert frame.read_bytes() == rec.frame(int(call["event_id"]))
        assert cv2.imread(str(frame)) is not None  # a real JPEG an examiner can open
    assert calls[4]["frame"] == ""

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["chain_intact"] and manifest["events"] == len(wanted) and manifest["calls"] == 5
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    assert not any(e.ts.startswith("2026-12-03") for e in wanted)


@needs_sqlite3
def test_export_of_a_broken_record_says_so(record_path, tmp_path):
    sqlite(record_path, "DELETE FROM events WHERE id = 4")
    done = audit("export", "--record", str(record_path), "--from", "2026-12-01", "--to", "2026-12-04",
                 "--out", str(tmp_path / "exam"))
    assert done.returncode == 1 and "NOT intact" in done.stdout
    assert json.loads((tmp_path / "exam" / "manifest.json").read_text())["chain_intact"] is False


def test_export_refuses_an_empty_or_bad_range(record_path, tmp_path):
    done = audit("export", "--record", str(record_path), "--from", "2026-12-03", "--to", "2026-12-02",
                 "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "after --from" in done.stderr
    done = audit("export", "--record", str(record_path), "--from", "yesterday", "--to", "2026-12-02",
                 "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "ISO 8601" in done.stderr
