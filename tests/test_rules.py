"""Rule profiles and their checks: each rule refuses with its reason and allows otherwise."""
from datetime import datetime, time, timedelta

import pytest
from pydantic import ValidationError

from services import rules
from services.cards import Card, check_card
from services.patterns import pattern_from_spec
from services.rules import load_profile

DAY = datetime(2026, 12, 5)
DELAWARE = load_profile("delaware", {})
MISSOURI = load_profile("missouri", {})
NONE = load_profile("none", {})


def at(hh: int, mm: int = 0) -> datetime:
    return DAY.replace(hour=hh, minute=mm)


def new_game(profile, **changes):
    """check_new_game where everything is in order unless `changes` says otherwise."""
    facts = dict(now_local=at(13), occasion_started_at=at(12, 30), games_in_occasion=0,
                 ball_check_passed=True, game_running=False, all_balls_confirmed=True,
                 cookie_jar_drawn=True)
    facts.update(changes)
    return rules.check_new_game(profile, **facts)


# --- profiles ------------------------------------------------------------------

def test_delaware_defaults():
    p = DELAWARE
    assert p.earliest_game_time == time(12, 0)  # DE 4.2
    assert p.max_occasion_hours == 6  # DE 4.2
    assert p.max_games_per_occasion == 40  # DE 4.17
    assert p.require_ball_check and p.occasion_starts_at_ball_check  # DE 4.25
    assert p.cookie_jar  # DE 4.31.6
    assert p.require_all_balls_confirmed  # DE 4.12
    assert (p.max_prize_per_game_cents, p.max_prizes_per_occasion_cents) == (35000, 300000)  # 4.6
    assert p.require_announced_prize  # DE 4.6
    assert p.claims_same_day  # DE 4.10
    assert not p.occasion_starts_at_first_call


def test_missouri_defaults():
    p = MISSOURI
    assert p.occasion_starts_at_first_call and p.predraw_requires_all_balls  # MO (1)
    assert p.require_all_balls_confirmed  # MO (2)
    assert p.max_prizes_per_day_cents == 360000  # MO (6)
    assert p.require_announced_prize  # MO (3)
    assert not p.claims_same_day
    assert p.earliest_game_time is None and p.max_games_per_occasion is None
    assert not p.require_ball_check and not p.cookie_jar


def test_none_profile_sets_no_limits():
    p = NONE
    assert p.earliest_game_time is None and p.max_occasion_hours is None
    assert p.max_games_per_occasion is None and p.max_prize_per_game_cents is None
    assert not any([p.require_ball_check, p.cookie_jar, p.occasion_starts_at_first_call,
                    p.predraw_requires_all_balls, p.require_all_balls_confirmed,
                    p.require_announced_prize, p.claims_same_day])


def test_overrides_change_limits():
    p = load_profile("delaware", {"earliest_game_time": "13:30", "max_games_per_occasion": 30,
                                  "cookie_jar": False})
    assert (p.earliest_game_time, p.max_games_per_occasion, p.cookie_jar) == (time(13, 30), 30, False)
    assert load_profile("delaware", {"max_occasion_hours": None}).max_occasion_hours is None
    assert load_profile("none", None) == NONE


def test_profiles_cannot_be_changed_in_place():
    with pytest.raises(ValidationError, match="frozen"):
        DELAWARE.max_games_per_occasion = 99


@pytest.mark.parametrize("name, overrides, message", [
    ("kansas", {}, "unknown rule profile 'kansas'"),
    ("delaware", {"max_gamez": 3}, "unknown rule setting 'max_gamez'"),
    ("delaware", {"name": "none"}, "override 'name' is not allowed"),
    ("delaware", {"earliest_game_time": "noon"}, "'earliest_game_time'"),
    ("delaware", {"earliest_game_time": "24:00"}, "'earliest_game_time'"),
    ("delaware", {"earliest_game_time": 43200}, "'earliest_game_time'"),
    ("delaware", {"max_games_per_occasion": 0}, "'max_games_per_occasion'"),
    ("delaware", {"max_games_per_occasion": "40"}, "'max_games_per_occasion'"),
    ("delaware", {"max_games_per_occasion": True}, "'max_games_per_occasion'"),
    ("delaware", {"max_occasion_hours": 0}, "'max_occasion_hours'"),
    ("delaware", {"max_occasion_hours": 25}, "'max_occasion_hours'"),
    ("delaware", {"max_prize_per_game_cents": -1}, "'max_prize_per_game_cents'"),
    ("delaware", {"cookie_jar": "yes"}, "'cookie_jar'"),
    ("missouri", {"occasion_starts_at_ball_check": True}, "cannot both be true"),
])
def test_bad_profile_or_override_is_named(name, overrides, message):
    with pytest.raises(ValueError) as info:
        load_profile(name, overrides)
    assert message in str(info.value)


def test_which_event_starts_the_occasion():
    assert rules.occasion_start_trigger(DELAWARE) == "ball_check"  # DE 4.25
    assert rules.occasion_start_trigger(MISSOURI) == "first_call"  # MO (1)
    assert rules.occasion_start_trigger(NONE) == "opened"


# --- new game ----------------------------------------------------------------------

@pytest.mark.parametrize("profile", [DELAWARE, MISSOURI, NONE])
def test_a_game_in_order_is_allowed(profile):
    assert new_game(profile) is None


def test_only_one_game_at_a_time():
    assert new_game(MISSOURI, game_running=True).startswith("Missouri 45-30.190(5):")
    for profile in (DELAWARE, NONE):
        assert "only one game at a time" in new_game(profile, game_running=True)


def test_delaware_no_game_before_noon():  # DE 4.2
    reason = new_game(DELAWARE, now_local=at(11, 59), occasion_started_at=at(11))
    assert reason == "Delaware 4.2: no game may start before 12:00 local time"
    assert new_game(DELAWARE, now_local=at(12, 0), occasion_started_at=at(11)) is None
    assert new_game(MISSOURI, now_local=at(9), occasion_started_at=None) is None
    late_start = load_profile("none", {"earliest_game_time": "18:30"})
    assert new_game(late_start, now_local=at(18, 29)) == \
        "house rule: no game may start before 18:30 local time"


def test_delaware_occasion_lasts_at_most_six_hours():  # DE 4.2
    reason = new_game(DELAWARE, now_local=at(18, 30), occasion_started_at=at(12, 30))
    assert reason.startswith("Delaware 4.2: an occasion may last at most 6 hours")
    assert "started at 12:30" in reason and "ended at 18:30" in reason
    assert new_game(DELAWARE, now_local=at(18, 29), occasion_started_at=at(12, 30)) is None
    # Until the occasion has started there is no clock to run out.
    assert new_game(DELAWARE, now_local=at(23), occasion_started_at=None) is None
    assert new_game(NONE, now_local=at(23), occasion_started_at=at(12)) is None


def test_an_occasion_running_past_midnight_is_measured_in_time_not_clock_hours():
    p = load_profile("none", {"max_occasion_hours": 2.5})
    start = at(22)
    assert new_game(p, now_local=start + timedelta(hours=2, minutes=29),
                    occasion_started_at=start) is None
    assert "at most 2.5 hours" in new_game(p, now_local=start + timedelta(hours=2, minutes=30),
                                           occasion_started_at=start)


def test_delaware_at_most_40_games():  # DE 4.17
    assert new_game(DELAWARE, games_in_occasion=39) is None
    assert new_game(DELAWARE, games_in_occasion=40) == \
        "Delaware 4.17: an occasion may hold at most 40 games; 40 have been played"
    assert new_game(MISSOURI, games_in_occasion=400) is None
    house = load_profile("missouri", {"max_games_per_occasion": 20})
    assert new_game(house, games_in_occasion=20).startswith(
        "house rule (Missouri 45-30.190(7)): an occasion may hold at most 20 games")


def test_delaware_ball_check_before_the_first_game():  # DE 4.25
    reason = new_game(DELAWARE, ball_check_passed=False)
    assert reason.startswith("Delaware 4.25: the balls must be verified")
    assert new_game(MISSOURI, ball_check_passed=False) is None
    assert new_game(load_profile("delaware", {"require_ball_check": False}),
                    ball_check_passed=False) is None


def test_delaware_cookie_jar_number_before_the_first_game():  # DE 4.31.6
    reason = new_game(DELAWARE, cookie_jar_drawn=False)
    assert reason.startswith("Delaware 4.31.6: the cookie jar number must be drawn and posted")
    assert new_game(MISSOURI, cookie_jar_drawn=False) is None
    assert new_game(load_profile("delaware", {"cookie_jar": False}), cookie_jar_drawn=False) is None


def test_all_75_balls_confirmed_before_each_game():  # MO (2), DE 4.12
    assert new_game(MISSOURI, all_balls_confirmed=False) == \
        "Missouri 45-30.190(2): all 75 balls must be confirmed in the blower before the game starts"
    assert new_game(DELAWARE, all_balls_confirmed=False).startswith("Delaware 4.12:")
    assert new_game(NONE, all_balls_confirmed=False) is None


# --- calls -------------------------------------------------------------------------

def call(profile, number, called=(), **changes):
    facts = dict(now_local=at(13), occasion_started_at=at(12, 30), game_running=True,
                 number=number, called_in_game=set(called))
    facts.update(changes)
    return rules.check_call(profile, **facts)


def test_a_call_in_a_running_game_is_allowed():
    assert call(DELAWARE, 12, called=[5, 40]) is None
    # Missouri: the first call starts the occasion, so there is no start time yet.
    assert call(MISSOURI, 12, occasion_started_at=None) is None


def test_a_number_already_called_in_the_game_is_refused():
    assert call(NONE, 12, called=[5, 12]) == \
        "B12 was already called in this game: a misread or a ball not returned to the blower"


def test_a_call_needs_a_running_game():
    assert "no game is running" in call(NONE, 12, game_running=False)


@pytest.mark.parametrize("bad", [0, 76, "12", True, None])
def test_a_call_must_be_a_ball_number(bad):
    assert "not a ball number" in call(NONE, bad)


def test_no_calls_after_the_delaware_six_hours():  # DE 4.2
    assert call(DELAWARE, 12, now_local=at(18, 30)).startswith("Delaware 4.2:")
    assert call(DELAWARE, 12, now_local=at(18, 29)) is None


# --- pre-draws (Missouri (1)) -----------------------------------------------------

def predraw(profile, **changes):
    facts = dict(now_local=at(13), occasion_started_at=None, game_running=False,
                 ball_check_passed=True, all_balls_confirmed=True)
    facts.update(changes)
    return rules.check_predraw(profile, **facts)


def test_missouri_predraw_needs_all_75_balls():
    assert predraw(MISSOURI) is None
    assert predraw(MISSOURI, all_balls_confirmed=False) == (
        "Missouri 45-30.190(1): all 75 balls must be in the blower before hot, "
        "bonanza or wild balls are drawn")
    assert predraw(NONE, all_balls_confirmed=False) is None


def test_predraw_is_between_games():
    assert "not while a game is running" in predraw(MISSOURI, game_running=True)


def test_delaware_predraw_after_the_ball_check_and_within_six_hours():
    assert predraw(DELAWARE, ball_check_passed=False).startswith("Delaware 4.25:")
    assert predraw(DELAWARE, now_local=at(19), occasion_started_at=at(12)).startswith("Delaware 4.2:")


# --- cookie jar (Delaware 4.31.6, 4.25) -----------------------------------------------

def cookie(profile, **changes):
    facts = dict(ball_check_passed=True, cookie_jar_drawn=False, game_running=False,
                 games_in_occasion=0)
    facts.update(changes)
    return rules.check_cookie_jar(profile, **facts)


def test_cookie_jar_drawn_once_after_the_ball_check_before_the_first_game():
    assert cookie(DELAWARE) is None
    assert cookie(DELAWARE, ball_check_passed=False) == \
        "Delaware 4.25: the balls must be verified before the cookie jar number is drawn"
    assert "already been drawn" in cookie(DELAWARE, cookie_jar_drawn=True)
    assert "before the first game" in cookie(DELAWARE, games_in_occasion=1)
    assert "before the first game" in cookie(DELAWARE, game_running=True)


def test_no_cookie_jar_where_the_profile_has_none():
    assert cookie(MISSOURI) == "this hall's rule profile (missouri) has no cookie jar"


def test_cookie_jar_goes_to_a_bingo_achieved_on_its_number():
    card = Card("C-1", (1, 2, 3, 4, 5, 16, 17, 18, 19, 20, 31, 32, 34, 35,
                        46, 47, 48, 49, 50, 61, 62, 63, 64, 65))
    any_row = pattern_from_spec("any_row")
    on_cookie = check_card(card, [1, 16, 31, 46, 61], any_row)  # completed by 61
    assert rules.cookie_jar_won(61, on_cookie)
    # Holding the cookie number is not enough: the bingo must come on its call.
    assert not rules.cookie_jar_won(16, on_cookie)
    assert not rules.cookie_jar_won(61, check_card(card, [61, 1, 16], any_row))
    assert not rules.cookie_jar_won(None, on_cookie)


# --- break-open (Delaware 4.29) -----------------------------------------------------------

def test_break_open_needs_a_preset_count_and_is_a_game_like_the_others():
    facts = dict(now_local=at(13), occasion_started_at=at(12, 30), games_in_occasion=0,
                 ball_check_passed=True, game_running=False, all_balls_confirmed=True,
                 cookie_jar_drawn=True)
    assert rules.check_break_open(DELAWARE, count=20, **facts) is None
    for bad in (0, 76, "20", True):
        assert "preset count of 1 to 75" in rules.check_break_open(DELAWARE, count=bad, **facts)
    assert rules.check_break_open(DELAWARE, count=20, **{**facts, "games_in_occasion": 40}) \
        .startswith("Delaware 4.17:")


# --- ball check, prizes ------------------------------------------------------------------

def test_no_ball_check_during_a_game():
    assert rules.check_ball_check(DELAWARE, game_running=False) is None
    assert "while a game is running" in rules.check_ball_check(DELAWARE, game_running=True)


def prize(profile, cents, occasion=0, today=0):
    return rules.check_prize(profile, prize_cents=cents, prizes_in_occasion_cents=occasion,
                             prizes_today_cents=today)


def test_delaware_prize_limits():  # DE 4.6
    assert prize(DELAWARE, 35000) is None
    assert prize(DELAWARE, 35001) == \
        "Delaware 4.6: a game's prize may be at most $350.00; $350.01 was asked"
    assert prize(DELAWARE, 10000, occasion=290000) is None
    assert prize(DELAWARE, 10001, occasion=290000) == (
        "Delaware 4.6: prizes in one occasion may total at most $3,000.00; "
        "$2,900.00 already announced")


def test_missouri_daily_prize_limit():  # MO (6)
    assert prize(MISSOURI, 60000, today=300000) is None
    assert prize(MISSOURI, 60001, today=300000).startswith(
        "Missouri 45-30.190(6): prizes in one day may total at most $3,600.00")
    assert prize(NONE, 10**9, occasion=10**9, today=10**9) is None


def test_the_prize_is_announced_with_the_game():  # DE 4.6, MO (3)
    for blank in ("", "   ", None):
        assert rules.check_announced_prize(DELAWARE, prize=blank) == \
            "Delaware 4.6: the prize must be announced with the game, before it starts"
        assert rules.check_announced_prize(MISSOURI, prize=blank).startswith(
            "Missouri 45-30.190(3):")
        assert rules.check_announced_prize(NONE, prize=blank) is None
    assert rules.check_announced_prize(DELAWARE, prize="$100") is None
    assert rules.check_announced_prize(MISSOURI, prize=0) is None


def test_delaware_winners_on_the_day_of_the_game():  # DE 4.10
    started = at(23, 40)
    assert rules.check_claim(DELAWARE, now_local=at(23, 59), game_started_at=started) is None
    reason = rules.check_claim(DELAWARE, now_local=started + timedelta(minutes=25),
                               game_started_at=started)
    assert reason == "Delaware 4.10: winners are determined on the day the game is played (2026-12-05)"
    assert rules.check_claim(MISSOURI, now_local=started + timedelta(days=1),
                             game_started_at=started) is None


@pytest.mark.parametrize("bad", [-1, 1.5, "100", True])
def test_a_prize_is_whole_cents(bad):
    assert "whole, non-negative number of cents" in prize(NONE, bad)


def test_every_refusal_of_a_profile_rule_cites_a_section_of_its_regulation():
    for rule_sources in (rules.SOURCES["delaware"], rules.SOURCES["missouri"]):
        for rule, section in rule_sources.items():
            assert section.startswith(("Delaware 4.", "Missouri 45-30.190("))
            assert rule in rules.RuleProfile.model_fields or rule == "one_game_at_a_time"
