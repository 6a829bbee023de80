"""Winner verification through the engine (issue 4 items 6 and 7): card import, claims,
verify_card by serial or typed numbers, late claims, the prize split and the cookie jar win."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from services.commands import execute
from services.contract import validate
from services.engine import DrawEngine, Refused
from services.record import Record
from services.rules import load_profile

# Column order: B top to bottom, I, N without the centre, G, O.
CARD_A = [1, 2, 3, 4, 5, 16, 17, 18, 19, 20, 31, 32, 34, 35, 46, 47, 48, 49, 50, 61, 62, 63, 64, 65]
CARD_B = [1, 6, 7, 8, 9, 16, 21, 22, 23, 24, 31, 36, 37, 38, 46, 51, 52, 53, 54, 61, 66, 67, 68, 69]
CARD_C = [10, 11, 12, 13, 14, 25, 26, 27, 28, 29, 39, 40, 41, 42, 55, 56, 57, 58, 59, 70, 71, 72, 73, 74]
CSV = "serial,numbers...\n" + "\n".join(f"{s},{','.join(map(str, n))}"
                                          for s, n in (("A-1", CARD_A), ("B-1", CARD_B), ("C-1", CARD_C)))


class Clock:
    def __init__(self) -> None:
        self.t = datetime(2026, 12, 2, 23, 50, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make(tmp_path, clock, overrides=None) -> DrawEngine:
    return DrawEngine(Record(tmp_path / "r.db"), profile=load_profile("none", overrides), timezone_name="UTC",
                      now=clock)


def ok(engine: DrawEngine, command: str, **payload) -> dict:
    response = execute(engine, command, payload)
    assert response["status"] == "ok", response
    if command in ("verify_card", "new_game", "end_game", "manual_call", "drawn", "status"):
        validate("response", response, command=command)
    return response["result"]


@pytest.fixture
def engine(tmp_path, clock) -> DrawEngine:
    eng = make(tmp_path, clock, {"cookie_jar": True})
    ok(eng, "new_occasion")
    assert ok(eng, "import_cards", csv=CSV, by="anne") == {"imported": 3, "cards": 3}
    ok(eng, "cookie_jar", ball=61)
    ok(eng, "new_game", pattern="any_line", prize="$10.01", prize_cents=1001, all_balls_in_blower=True)
    return eng


def call(engine: DrawEngine, *numbers: int) -> None:
    for n in numbers:
        ok(engine, "manual_call", ball=n)


def test_winners_on_the_same_call_share_and_a_late_claim_is_told_apart(engine):
    call(engine, 10, 11, 12, 13, 14)  # card C covers column B on call 5 ...
    call(engine, 1, 16, 31, 46, 61)   # ... A and B cover row 1 on call 10, the cookie jar number
    assert ok(engine, "claim", by="anne") == {"game": 1, "at_index": 10}
    assert engine.state()["game"]["status"] == "claims"
    paused = execute(engine, "manual_call", {"ball": 70})
    assert paused["error"] == "calling is paused while a claim is checked in game 1"
    assert engine.on_reading(70, 0.9995, "commit", 5).decision == "refused"

    a = ok(engine, "verify_card", serial="A-1")
    assert (a["winner"], a["arrangement_name"], a["won_at_index"], a["won_on_ball"], a["late"]) == \
        (True, "row 1", 10, "O61", False)
    assert a["cookie_jar_won"] is True and a["grid"][2][2] is None
    c = ok(engine, "verify_card", serial="C-1")
    assert (c["winner"], c["arrangement_name"], c["won_at_index"], c["late"], c["cookie_jar_won"]) == \
        (True, "column B", 5, True, False)
    b = ok(engine, "verify_card", numbers=CARD_B)  # typed in, as for a player-pick card
    assert b["winner"] and b["won_at_index"] == 10 and b["card"] == "B-1"  # the imported face: one winner
    ok(engine, "verify_card", serial="B-1")
    typed = ok(engine, "verify_card", numbers=CARD_A[:-1] + [75])  # a player-pick face nobody imported
    assert typed["card"].startswith("typed:") and typed["winner"] and typed["won_at_index"] == 10
    assert ok(engine, "end_game") == {"game": 1}

    winners = ok(engine, "winners")
    assert [(w["card"], w["share_cents"]) for w in winners["winners"]] == [
        ("A-1", 334), ("B-1", 334), (typed["card"], 333)]
    ended = next(engine.record.events(("game_ended",)))
    assert ended.data["shares_cents"] == [334, 334, 333] and sum(ended.data["shares_cents"]) == 1001
    verified = [e.data["card"] for e in engine.record.events(("card_verified",))]
    assert verified == ["A-1", "C-1", "B-1", "B-1", typed["card"]]


def test_a_claim_without_a_winner_resumes_calling(engine):
    call(engine, 1, 2)
    ok(engine, "claim")
    assert ok(engine, "verify_card", serial="A-1")["winner"] is False
    ok(engine, "resume")
    assert engine.state()["game"]["status"] == "running"
    call(engine, 3)
    assert execute(engine, "resume", {})["error"] == "no claim is being checked"
    assert ok(engine, "winners")["winners"] == []


def test_cards_are_kept_in_the_record(tmp_path, clock, engine):
    again = make(tmp_path, clock, {"cookie_jar": True})
    assert sorted(again.cards) == ["A-1", "B-1", "C-1"] and again.cards["A-1"].numbers == tuple(CARD_A)
    error = execute(again, "import_cards", {"csv": CSV})["error"]
    assert error.startswith("card A-1 is already imported (3 serial(s) again)")
    assert ok(again, "import_cards", csv=CSV.replace("C-1", "D-1"), replace=True) == {"imported": 3, "cards": 3}
    assert execute(again, "verify_card", {"serial": "C-1"})["error"] == "no card with serial 'C-1' has been imported"


@pytest.mark.parametrize("payload,error", [
    ({"csv": "A-9,1,2,3"}, "line 1: 3 numbers after the serial"),
    ({"csv": "A-9," + ",".join(map(str, [16] + CARD_A[1:]))}, "16 cannot be in column B"),
    ({"csv": ""}, "csv: String should have at least 1 character"),
    ({"csv": CSV, "replace": "yes"}, "replace: Input should be a valid boolean"),
])
def test_bad_card_files_are_refused_whole(engine, payload, error):
    before = dict(engine.cards)
    response = execute(engine, "import_cards", payload)
    assert response["status"] == "error" and error in response["error"]
    assert engine.cards == before


@pytest.mark.parametrize("payload,error", [
    ({}, "give serial, or numbers"),
    ({"serial": "A-1", "numbers": CARD_A}, "give serial, or numbers"),
    ({"numbers": CARD_A[:-1]}, "numbers: List should have at least 24 items"),
    ({"numbers": CARD_A[:-1] + [1]}, "1 cannot be in column O"),
    ({"numbers": CARD_A[:-2] + [65, 65]}, "appear twice"),
])
def test_bad_verify_requests(engine, payload, error):
    response = execute(engine, "verify_card", payload)
    assert response["status"] == "error" and error in response["error"]


def test_winners_are_determined_the_same_day(tmp_path, clock):
    engine = make(tmp_path, clock, {"claims_same_day": True})
    engine.new_occasion()
    engine.import_cards(CSV)
    engine.new_game("any_line", all_balls_in_blower=True)  # 23:50
    call(engine, 1, 16, 31, 46, 61)
    clock.t += timedelta(minutes=20)  # past midnight
    with pytest.raises(Refused, match=r"^house rule: winners are determined on the day the game is played "
                                      r"\(2026-12-02\)"):
        engine.claim()
    assert execute(engine, "verify_card", {"serial": "A-1"})["status"] == "error"
    engine.end_game()
    # After the game a card can still be looked at (a dispute), but it wins nothing.
    assert engine.verify_card("A-1")["winner"] is True and engine.winners()["winners"] == []


def test_split_prize_command():
    assert execute(None, "split_prize", {"amount_cents": 10000, "winners": 3})["result"] == \
        {"shares_cents": [3334, 3333, 3333]}
    assert execute(None, "split_prize", {"amount_cents": 100, "winners": 0})["status"] == "error"


def test_indexes_are_the_calls_own_after_a_void(engine):
    call(engine, 1, 70)
    engine.void(2, reason="fell back")
    call(engine, 16, 31, 46, 61)  # indexes 3..6; A and B cover row 1 on index 6
    assert ok(engine, "claim")["at_index"] == 6
    a = ok(engine, "verify_card", serial="A-1")
    assert (a["won_at_index"], a["won_on_ball"], a["won_on_seq"], a["late"], a["calls_checked"]) == \
        (6, "O61", 7, False, 5)
