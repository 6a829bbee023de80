"""The engine under a hall's rule profile: Delaware and Missouri, with a clock the test sets.

Each rule of issue 4 items 2, 3 and 7 is driven through the real engine on a real record; a
refusal must cite its rule, be recorded, and change nothing else. Restarting from the record
must keep every rule's facts (ball check passed, cookie jar, the occasion's clock).
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from services.commands import execute
from services.contract import validate
from services.engine import DrawEngine, Refused
from services.record import Record
from services.rules import load_profile
from vision.balls import ALL_NUMBERS

NEW_YORK = "America/New_York"


class Clock:
    def __init__(self, start: datetime) -> None:
        self.t = start

    def __call__(self) -> datetime:
        return self.t

    def set_local(self, hh: int, mm: int = 0, day: int = 2) -> None:
        # New York in December is UTC-5.
        self.t = datetime(2026, 12, day, hh + 5, mm, tzinfo=timezone.utc)

    def advance(self, **delta) -> None:
        self.t += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    c = Clock(datetime(2026, 12, 2, 15, 0, tzinfo=timezone.utc))  # 10:00 in New York
    return c


def make(tmp_path, clock, profile="delaware", overrides=None, tz=NEW_YORK) -> DrawEngine:
    return DrawEngine(Record(tmp_path / "r.db"), profile=load_profile(profile, overrides), timezone_name=tz,
                      now=clock, device_id="hall-1")


def refusals(engine: DrawEngine) -> list[str]:
    return [e.data["reason"] for e in engine.record.events(("refused",))]


def run_check(engine: DrawEngine, numbers, unreadable: int = 0) -> dict:
    engine.ball_check_start(by="anne")
    for n in numbers:
        outcome = engine.on_reading(n, 0.9995, "commit", 5)
        assert outcome.decision == "refused" and outcome.reason.startswith("ball check")
    for _ in range(unreadable):
        assert engine.on_reading(40, 0.95, "confirm", 5).reason.startswith("ball check: unreadable")
    return engine.ball_check_finish(by="anne")


def test_delaware_event_in_order(tmp_path, clock):
    """Ball check, then cookie jar, then no game before noon, then the prize limits."""
    engine = make(tmp_path, clock)
    engine.new_occasion(by="anne")
    with pytest.raises(Refused, match=r"^Delaware 4\.25: the balls must be verified"):
        engine.new_game("any_line", prize="$50", prize_cents=5000, all_balls_in_blower=True)
    with pytest.raises(Refused, match=r"^Delaware 4\.25"):
        engine.cookie_jar(7)
    assert refusals(engine)[-2:] == [
        "Delaware 4.25: the balls must be verified (a passed ball check) before the first game",
        "Delaware 4.25: the balls must be verified before the cookie jar number is drawn"]

    assert run_check(engine, ALL_NUMBERS)["passed"] is True
    assert engine.occasion_info()["event_started_at"] == "2026-12-02T15:00:00.000Z"  # DE 4.25: starts here
    with pytest.raises(Refused, match=r"^Delaware 4\.31\.6: the cookie jar number must be drawn"):
        engine.new_game("any_line", prize="$50", prize_cents=5000, all_balls_in_blower=True)
    assert engine.cookie_jar(7, by="anne") == {"kind": "cookie_jar", "armed": False, "ball": "B7"}
    with pytest.raises(Refused, match="already been drawn"):
        engine.cookie_jar(8)

    with pytest.raises(Refused, match=r"^Delaware 4\.2: no game may start before 12:00 local time"):
        engine.new_game("any_line", prize="$50", prize_cents=5000, all_balls_in_blower=True)
    clock.set_local(12, 0)
    with pytest.raises(Refused, match=r"^Delaware 4\.6: the prize must be announced"):
        engine.new_game("any_line", all_balls_in_blower=True)
    with pytest.raises(Refused, match=r"prize_cents"):
        engine.new_game("any_line", prize="a ham", all_balls_in_blower=True)
    with pytest.raises(Refused, match=r"^Delaware 4\.6: a game's prize may be at most \$350\.00"):
        engine.new_game("any_line", prize="$400", prize_cents=40000, all_balls_in_blower=True)
    with pytest.raises(Refused, match=r"^Delaware 4\.12: all 75 balls"):
        engine.new_game("any_line", prize="$350", prize_cents=35000)
    assert engine.state()["game"] is None  # every refusal above changed nothing
    assert engine.new_game("any_line", prize="$350", prize_cents=35000, all_balls_in_blower=True) == {"game": 1}
    state = engine.state()
    assert state["game"]["cookie_jar"] == "B7" and state["device_id"] == "hall-1"
    validate("state", state)


def test_delaware_six_hours_count_from_the_ball_check(tmp_path, clock):
    engine = make(tmp_path, clock)
    engine.new_occasion()
    clock.set_local(11, 30)
    run_check(engine, ALL_NUMBERS)
    engine.cookie_jar(7)
    clock.set_local(12, 0)
    engine.new_game("any_line", prize="$10", prize_cents=1000, all_balls_in_blower=True)
    clock.set_local(17, 29)
    engine.manual_call(12)
    clock.set_local(17, 30)
    with pytest.raises(Refused, match=r"^Delaware 4\.2: an occasion may last at most 6 hours; "
                                      r"this one started at 11:30 and its time ended at 17:30"):
        engine.manual_call(13)
    # A restart keeps the occasion's clock, the check and the cookie jar.
    again = make(tmp_path, clock)
    assert again.occasion.ball_check_passed and again.state()["game"]["cookie_jar"] == "B7"
    with pytest.raises(Refused, match="at most 6 hours"):
        again.manual_call(13)
    assert again.on_reading(13, 0.9995, "commit", 5).decision == "refused"
    assert again.state()["game"]["called"] == ["B12"]


def test_delaware_games_per_occasion(tmp_path, clock):
    engine = make(tmp_path, clock, overrides={"max_games_per_occasion": 2, "earliest_game_time": "09:00",
                                              "cookie_jar": False})
    engine.new_occasion()
    run_check(engine, ALL_NUMBERS)
    for _ in range(2):
        engine.new_game("any_line", prize="$1", prize_cents=100, all_balls_in_blower=True)
        engine.end_game()
    with pytest.raises(Refused, match=r"^Delaware 4\.17: an occasion may hold at most 2 games; 2 have been played"):
        engine.new_game("any_line", prize="$1", prize_cents=100, all_balls_in_blower=True)
    with pytest.raises(Refused, match=r"^Delaware 4\.6: prizes in one occasion"):
        make(tmp_path, clock, overrides={"max_prizes_per_occasion_cents": 250, "earliest_game_time": "09:00",
                                         "cookie_jar": False, "max_games_per_occasion": 5}).new_game(
            "any_line", prize="$1", prize_cents=100, all_balls_in_blower=True)


def test_ball_check_tally_and_who_ran_it(tmp_path, clock):
    engine = make(tmp_path, clock, profile="none")
    engine.new_occasion()
    with pytest.raises(Refused, match="no ball check is running"):
        engine.ball_check_finish()
    numbers = [n for n in ALL_NUMBERS if n != 44] + [12]  # B12 read twice, N44 never
    result = run_check(engine, numbers, unreadable=2)
    assert result["passed"] is False and result["missing"] == ["N44"] and result["duplicated"] == ["B12"]
    assert result["unreadable"] == 2 and result["seen"] == 74
    assert result["started_by"] == "anne" and result["finished_by"] == "anne"
    assert result["finished_at"] == "2026-12-02T15:00:00.000Z"
    assert engine.state()["seq"] == 0 and engine.record.unpublished() == []  # nothing was called

    # A second check; the unreadable ball is entered at the console.
    engine.ball_check_start()
    with pytest.raises(Refused, match="already running"):
        engine.ball_check_start()
    for n in ALL_NUMBERS[:-1]:
        engine.on_reading(n, 0.9995, "commit", 5)
    assert engine.on_reading(75, 0.5, "confirm", 5).decision == "refused"
    assert engine.state()["awaiting_confirm"] is None  # a check reading never waits for confirm
    progress = execute(engine, "ball_check", {"action": "ball", "ball": "O75", "by": "bob"})["result"]
    assert progress["missing"] == [] and progress["running"] is True
    done = execute(engine, "ball_check", {"action": "finish", "by": "bob"})["result"]
    assert done["passed"] is True and done["unreadable"] == 1
    finished = [e for e in engine.record.events(("ball_check_finished",))]
    assert [(e.data["passed"], e.data["by"]) for e in finished] == [(False, "anne"), (True, "bob")]
    assert make(tmp_path, clock, profile="none").ball_check_status()["passed"] is True

    engine.new_game("any_line", all_balls_in_blower=True)
    with pytest.raises(Refused, match="cannot run while a game is running"):
        engine.ball_check_start()


def test_missouri_predraws_do_not_start_the_occasion(tmp_path, clock):
    engine = make(tmp_path, clock, profile="missouri", tz="America/Chicago")
    engine.new_occasion()
    with pytest.raises(Refused, match=r"^Missouri 45-30\.190\(1\): all 75 balls must be in the blower"):
        engine.predraw("hot", 22)
    assert engine.predraw("hot", 22, all_balls_in_blower=True) == {"kind": "hot", "armed": False, "ball": "I22"}
    # Armed: the next camera reading is the bonanza ball.
    assert engine.predraw("bonanza", None, all_balls_in_blower=True)["armed"] is True
    assert engine.on_reading(60, 0.9995, "commit", 5).reason == "bonanza draw: G60"
    assert engine.occasion_info()["event_started_at"] is None
    assert [p["ball"] for p in engine.occasion_info()["predraws"]] == ["I22", "G60"]

    with pytest.raises(Refused, match=r"^Missouri 45-30\.190\(2\): all 75 balls must be confirmed"):
        engine.new_game("any_line", prize="$5", prize_cents=500)
    engine.new_game("any_line", prize="$5", prize_cents=500, all_balls_in_blower=True)
    assert engine.game.predraws and engine.occasion_info()["predraws"] == []
    assert engine.occasion_info()["event_started_at"] is None  # a game started, but nothing called yet
    clock.advance(minutes=3)
    call = engine.manual_call(1)
    assert engine.occasion_info()["event_started_at"] == call["ts"] == "2026-12-02T15:03:00.000Z"
    with pytest.raises(Refused, match=r"^Missouri 45-30\.190\(5\): only one game at a time"):
        engine.new_game("any_line", prize="$5", prize_cents=500, all_balls_in_blower=True)
    with pytest.raises(Refused, match="not while a game is running"):
        engine.predraw("wild", 3, all_balls_in_blower=True)


def test_missouri_prizes_per_day(tmp_path, clock):
    engine = make(tmp_path, clock, profile="missouri")
    engine.new_occasion()
    engine.new_game("any_line", prize="$3,000", prize_cents=300000, all_balls_in_blower=True)
    engine.end_game()
    with pytest.raises(Refused, match=r"^Missouri 45-30\.190\(6\): prizes in one day may total at most \$3,600"):
        engine.new_game("any_line", prize="$700", prize_cents=70000, all_balls_in_blower=True)
    clock.advance(days=1)
    engine.new_game("any_line", prize="$700", prize_cents=70000, all_balls_in_blower=True)


def test_cookie_jar_drawn_by_the_reader_after_the_check(tmp_path, clock):
    engine = make(tmp_path, clock, overrides={"earliest_game_time": "09:00"})
    engine.new_occasion()
    run_check(engine, ALL_NUMBERS)
    assert execute(engine, "cookie_jar", {})["result"]["armed"] is True
    assert engine.on_reading(33, 0.95, "confirm", 5).decision == "refused"  # unsure: not taken
    assert engine.occasion_info()["cookie_jar"] is None
    assert engine.on_reading(33, 0.9995, "commit", 5, frame_jpeg=b"jpeg").reason == "cookie_jar draw: N33"
    assert engine.occasion_info()["cookie_jar"] == "N33"
    drawn = next(engine.record.events(("cookie_jar_drawn",)))
    assert engine.record.frame(drawn.id) == b"jpeg" and drawn.data["source"] == "camera"
    assert engine.state()["seq"] == 0  # posted, not called


def test_break_open_game_draws_its_count(tmp_path, clock):
    engine = make(tmp_path, clock, profile="none")
    engine.new_occasion()
    with pytest.raises(Refused, match="preset count of 1 to 75"):
        engine.new_game("any_line", kind="break_open", all_balls_in_blower=True)
    assert execute(engine, "new_game", {"kind": "regular", "count": 3, "all_balls_in_blower": True})["error"] \
        == "count is only for a break-open game (kind break_open)"
    execute(engine, "new_game", {"kind": "break_open", "count": 3, "all_balls_in_blower": True})
    for n in (1, 2, 3):
        engine.manual_call(n)
    with pytest.raises(Refused, match=r"Delaware 4\.29: break-open game 1 draws 3 numbers"):
        engine.manual_call(4)
    assert engine.on_reading(4, 0.9995, "commit", 5).decision == "refused"
    engine.end_game()
    engine.new_game("any_line", all_balls_in_blower=True)  # the balls went back
    engine.manual_call(1)


def test_a_duplicate_reading_is_raised_not_called(tmp_path, clock):
    engine = make(tmp_path, clock, profile="none")
    engine.new_occasion()
    engine.new_game("any_line", all_balls_in_blower=True)
    engine.on_reading(12, 0.9995, "commit", 5)
    assert engine.on_reading(12, 0.9995, "commit", 5).decision == "duplicate"
    fault = engine.state()["faults"][0]
    assert fault["code"] == "duplicate_read" and fault["affects_calls"] is False and "B12" in fault["message"]
    assert engine.on_reading(13, 0.9995, "commit", 5).decision == "called"  # not blocking; cleared by a call
    assert engine.state()["faults"] == [] and engine.state()["game"]["called"] == ["B12", "B13"]


def test_profile_and_time_zone_come_from_config(tmp_path, clock):
    from services.config import parse_config

    cfg = parse_config({"device_id": "hall-2", "rules": {"profile": "delaware", "timezone": NEW_YORK,
                                                         "overrides": {"max_games_per_occasion": 12}}})
    engine = DrawEngine.from_config(Record(tmp_path / "c.db"), cfg, now=clock)
    assert engine.profile.max_games_per_occasion == 12 and engine.profile.require_ball_check
    assert engine.state()["device_id"] == "hall-2" and str(engine.tz) == NEW_YORK
    with pytest.raises(ValueError, match="unknown time zone"):
        DrawEngine(Record(tmp_path / "d.db"), timezone_name="Mars/Olympus")
    from services.config import ConfigError

    bad = parse_config({"rules": {"profile": "delaware", "overrides": {"max_gamez": 3}}})
    with pytest.raises(ConfigError, match="rules: rule profile 'delaware': unknown rule setting 'max_gamez'"):
        DrawEngine.from_config(Record(tmp_path / "e.db"), bad)
    bad = parse_config({"rules": {"profile": "missouri", "timezone": "America/Springfield"}})
    with pytest.raises(ConfigError, match="rules: unknown time zone 'America/Springfield'"):
        DrawEngine.from_config(Record(tmp_path / "f.db"), bad)


def test_ball_check_tally_is_pure_counting():
    from services.ball_check import Sighting, tally

    t = tally([Sighting(1), Sighting(1), Sighting(None, guess=7), Sighting(75, "console")])
    assert t.seen == (1, 75) and t.duplicated == (1,) and t.unreadable == 1 and len(t.missing) == 73
    assert not t.passed
    assert tally(Sighting(n) for n in ALL_NUMBERS).passed
    with pytest.raises(ValueError, match="not a ball number"):
        tally([Sighting(76)])
