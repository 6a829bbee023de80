import pytest

from services.commands import execute
from services.engine import DrawEngine, Refused
from services.record import Record


@pytest.fixture
def engine(tmp_path):
    eng = DrawEngine(Record(tmp_path / "r.db"))
    eng.new_occasion()
    eng.new_game({"name": "any_line"}, prize="$50", all_balls_in_blower=True)
    return eng


def test_camera_commit_calls_the_ball(engine):
    out = engine.on_reading(12, 0.9995, "commit", 5)
    assert out.decision == "called"
    assert out.call["ball"] == "B12" and out.call["index"] == 1 and out.call["seq"] == 1
    assert engine.state()["game"]["called"] == ["B12"]


def test_a_number_already_called_is_raised_not_published(engine):
    engine.on_reading(12, 0.9995, "commit", 5)
    out = engine.on_reading(12, 0.9995, "commit", 5)
    assert out.decision == "duplicate" and out.call is None
    assert engine.state()["game"]["called"] == ["B12"]
    assert [c["seq"] for c in engine.record.unpublished()] == [1]
    with pytest.raises(Refused, match="already called"):
        engine.manual_call(12)


def test_unsure_reading_waits_for_a_person(engine):
    out = engine.on_reading(69, 0.95, "confirm", 5, frame_jpeg=b"jpeg")
    assert out.decision == "confirm" and engine.state()["awaiting_confirm"]["ball"] == "O69"
    call = engine.confirm(66)  # the person corrects the reader
    assert call["ball"] == "O66" and call["source"] == "console"
    assert engine.record.frame(engine.record.last_id()) == b"jpeg"  # frame kept with the call
    assert engine.state()["awaiting_confirm"] is None
    with pytest.raises(Refused, match="no reading is waiting"):
        engine.confirm(5)


def test_represent_and_no_game_call_nothing(tmp_path, engine):
    assert engine.on_reading(None, 0.1, "represent", 5).decision == "represent"
    idle = DrawEngine(Record(tmp_path / "idle.db"))
    assert idle.on_reading(5, 0.9999, "commit", 5).decision == "refused"
    assert idle.record.unpublished() == []


def test_void_is_a_new_event_and_the_original_stays(engine):
    first = engine.manual_call(5)
    engine.manual_call(20)
    void = engine.void(first["seq"], reason="misread")
    assert void["event_type"] == "voided" and void["voids_seq"] == first["seq"] and void["seq"] == 3
    assert engine.state()["game"]["called"] == ["I20"]
    kinds = [e.kind for e in engine.record.events(("call", "void"))]
    assert kinds == ["call", "call", "void"]
    with pytest.raises(Refused, match="already voided"):
        engine.void(first["seq"])
    engine.manual_call(5)  # a voided number may be called again
    assert engine.state()["game"]["called"] == ["I20", "B5"]


def test_state_is_rebuilt_from_the_record(tmp_path, engine):
    for n in (3, 33, 63):
        engine.manual_call(n)
    engine.void(2)
    before = engine.state()
    again = DrawEngine(Record(tmp_path / "r.db"))
    after = again.state()
    assert {k: v for k, v in after.items() if k != "ts"} == {k: v for k, v in before.items() if k != "ts"}
    assert again.manual_call(75)["seq"] == 5  # seq continues, never reused


def test_one_game_at_a_time_and_all_balls_confirmed(tmp_path, engine):
    with pytest.raises(Refused, match="only one game at a time"):
        engine.new_game({"name": "any_line"}, all_balls_in_blower=True)
    engine.end_game()
    with pytest.raises(Refused, match="all 75 balls"):
        engine.new_game({"name": "any_line"})
    refusals = [e for e in engine.record.events(("refused",))]
    assert [r.data["command"] for r in refusals] == ["new_game", "new_game"]


def test_blocking_fault_stops_calls(engine):
    engine.raise_fault("camera", "no frame for 2 s")
    assert engine.on_reading(7, 0.9999, "commit", 5).decision == "refused"
    engine.clear_fault("camera")
    assert engine.on_reading(7, 0.9999, "commit", 5).decision == "called"


def test_drawn_lists_drawn_and_remaining(engine):
    engine.manual_call(1)
    engine.manual_call(75)
    drawn = engine.drawn()
    assert [d["ball"] for d in drawn["drawn"]] == ["B1", "O75"]
    assert len(drawn["remaining"]) == 73 and "B1" not in drawn["remaining"]


@pytest.mark.parametrize("name,payload,error", [
    ("manual_call", b"{not json", "not valid JSON"),
    ("manual_call", b"[1]", "JSON object"),
    ("nope", b"{}", "unknown command"),
    ("manual_call", b'{"ball": "B77"}', "out of range"),
    ("manual_call", b'{"ball": "I5"}', "column B"),
    ("manual_call", b'{"ball": 5, "extra": 1}', "extra: unknown field"),
    ("void", b'{"seq": "x"}', "seq"),
    ("void", b'{"seq": 99}', "no call with seq 99"),
])
def test_bad_requests_answer_an_error_and_change_nothing(engine, name, payload, error):
    before = engine.record.last_id()
    response = execute(engine, name, payload)
    assert response["status"] == "error" and error in response["error"]
    assert engine.state()["game"]["called"] == []
    assert engine.record.last_id() - before <= 1  # at most the refusal itself is recorded


def test_request_echoes_transaction(engine):
    response = execute(engine, "manual_call", b'{"ball": "N40", "transaction": "t-1"}')
    assert response == {"transaction": "t-1", "status": "ok", "result": response["result"]}
    assert response["result"]["ball"] == "N40"


def test_what_is_published_keeps_the_mqtt_contract(engine):
    from services.contract import validate

    published = []
    engine.on_call = published.append
    engine.on_reading(12, 0.9995, "commit", 5)
    engine.on_reading(40, 0.95, "confirm", 5)
    engine.confirm(41, by="anne")
    engine.void(1, reason="fell back", by="anne")
    assert [c["event_type"] for c in published] == ["called", "called", "voided"]
    for c in published:
        validate("call", c)
    validate("state", engine.state())
    for name in ("drawn", "status", "end_game", "end_occasion", "new_occasion"):
        validate("response", execute(engine, name, {}), command=name)


def test_who_called_by_hand_is_recorded(engine):
    engine.manual_call(5, by="anne")
    engine.on_reading(20, 0.9995, "commit", 5)
    who = [(e.kind, e.data.get("by")) for e in engine.record.events(("console_call", "call"))]
    assert who == [("console_call", "anne"), ("call", None), ("call", None)]


def test_a_pending_confirmation_survives_a_restart(tmp_path, engine):
    engine.on_reading(69, 0.95, "confirm", 5, frame_jpeg=b"jpeg")
    again = DrawEngine(Record(tmp_path / "r.db"))
    assert again.state()["awaiting_confirm"]["ball"] == "O69"
    assert again.confirm(69)["seq"] == 1
    assert again.record.frame(again.record.last_id()) == b"jpeg"


def test_a_record_that_cannot_be_written_answers_an_error(engine):
    engine.record.close()  # as a failed disk would leave it
    response = execute(engine, "manual_call", {"ball": 5})
    assert response["status"] == "error" and "database" in response["error"]
    assert engine.state()["game"]["called"] == []  # nothing applied that is not on disk


def test_games_are_numbered_within_the_occasion(tmp_path, engine):
    engine.manual_call(5)
    engine.end_game()
    engine.end_occasion()
    engine.new_occasion()
    assert engine.new_game("four_corners", all_balls_in_blower=True) == {"game": 1}
    assert engine.manual_call(5)["seq"] == 2  # seq goes on; only the game number starts again


def test_a_power_cut_between_announcing_and_starting_leaves_the_game_announced(tmp_path, engine):
    engine.end_game()
    # As if the power went after the announcement reached the disk and before the start did.
    engine.record.append("game_announced", {"game": 2, "occasion": 1, "pattern": engine.game.pattern,
                                            "prize": "$5", "kind": "regular", "by": "anne"})
    again = DrawEngine(Record(tmp_path / "r.db"))
    assert again.state()["game"]["status"] == "announced" and again.state()["game"]["number"] == 2
    assert again.on_reading(7, 0.9995, "commit", 5).decision == "refused"  # it does not start by itself
    assert again.new_game("any_line", all_balls_in_blower=True) == {"game": 3}
