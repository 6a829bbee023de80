import sqlite3

from services.record import Record


def make(tmp_path, n=5):
    rec = Record(tmp_path / "r.db")
    for i in range(1, n + 1):
        rec.append("call", {"seq": i, "ball": f"B{i}"})
    return rec


def test_untouched_record_verifies(tmp_path):
    rec = make(tmp_path)
    assert rec.verify() == []
    assert [e.id for e in rec.events()] == [1, 2, 3, 4, 5]


def tamper(tmp_path, sql):
    db = sqlite3.connect(tmp_path / "r.db")
    db.execute(sql)
    db.commit()
    db.close()
    return Record(tmp_path / "r.db").verify()


def test_edited_row_is_found(tmp_path):
    make(tmp_path).close()
    problems = tamper(tmp_path, "UPDATE events SET data = replace(data, 'B3', 'B9') WHERE id = 3")
    assert any("event 3" in p and "edited" in p for p in problems)


def test_deleted_row_is_found(tmp_path):
    make(tmp_path).close()
    problems = tamper(tmp_path, "DELETE FROM events WHERE id = 2")
    assert any("missing" in p for p in problems)


def test_truncated_tail_is_found(tmp_path):
    make(tmp_path).close()
    problems = tamper(tmp_path, "DELETE FROM events WHERE id = 5")
    assert any("cut off" in p for p in problems)


def test_inserted_row_is_found(tmp_path):
    make(tmp_path).close()
    problems = tamper(tmp_path, "INSERT INTO events VALUES (6, 'x', 1, 'call', '{}', 'p', 'h')")
    assert problems


def test_outbox_is_calls_without_acknowledgement(tmp_path):
    rec = make(tmp_path)
    rec.mark_published(1)
    rec.mark_published(3)
    assert [c["seq"] for c in rec.unpublished()] == [2, 4, 5]
    rec.close()
    assert [c["seq"] for c in Record(tmp_path / "r.db").unpublished()] == [2, 4, 5]


def test_clock_not_synchronised_is_marked(tmp_path):
    rec = Record(tmp_path / "r.db", clock_ok=lambda: False)
    assert rec.append("power_on", {}).clock_ok is False
    assert rec.verify() == []


def test_swapped_frame_is_found(tmp_path):
    rec = Record(tmp_path / "r.db")
    rec.append("call", {"seq": 1, "ball": "B1"}, frame_jpeg=b"the real frame")
    rec.close()
    problems = tamper(tmp_path, "UPDATE frames SET jpeg = x'00' WHERE event_id = 1")
    assert any("event 1" in p and "frame" in p for p in problems)
