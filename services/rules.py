"""Rule profiles of the halls' regulators and the checks the engine asks before acting.

Profiles: `delaware` (10 DE Admin Code 101-4.0), `missouri` (11 CSR 45-30.190) and
`none`. Each is a set of limits a hall may override. Every check is pure: the
engine passes what it knows (time included) and gets None when the request is
allowed, or a refusal reason that names the rule it comes from.
"""
from __future__ import annotations

import re
from collections.abc import Collection
from datetime import datetime, time, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from services.cards import CardCheck
from vision.balls import ball_name

ProfileName = Literal["delaware", "missouri", "none"]
_HHMM = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")


class RuleProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: ProfileName = Field(title="Profile", description="Which regulation the defaults come from.")
    earliest_game_time: time | None = Field(
        default=None, title="Earliest game time",
        description="No game may start before this local time, as HH:MM (Delaware 4.2: 12:00).")
    max_occasion_hours: float | None = Field(
        default=None, gt=0, le=24, strict=True, title="Longest occasion (hours)",
        description="Hours an occasion may run from its start (Delaware 4.2: 6).")
    max_games_per_occasion: int | None = Field(
        default=None, ge=1, strict=True, title="Most games per occasion",
        description="Games an occasion may hold (Delaware 4.17: 40).")
    max_prize_per_game_cents: int | None = Field(
        default=None, ge=0, strict=True, title="Largest prize per game (cents)",
        description="Value of the prize announced for one game (Delaware 4.6: $350).")
    max_prizes_per_occasion_cents: int | None = Field(
        default=None, ge=0, strict=True, title="Prizes per occasion (cents)",
        description="Total prize value announced in one occasion (Delaware 4.6: $3,000).")
    max_prizes_per_day_cents: int | None = Field(
        default=None, ge=0, strict=True, title="Prizes per day (cents)",
        description="Total prize value announced in one day (Missouri (6): $3,600).")
    require_ball_check: bool = Field(
        default=False, strict=True, title="Ball check before the first game",
        description="Every ball passes the reader before the event starts (Delaware 4.25).")
    cookie_jar: bool = Field(
        default=False, strict=True, title="Cookie jar number",
        description="A cookie jar number is drawn at the start of the event, after the ball "
                    "check, and posted; no game starts before it (Delaware 4.31.6, 4.25).")
    occasion_starts_at_ball_check: bool = Field(
        default=False, strict=True, title="Occasion starts at the ball check",
        description="The event starts when the balls are verified (Delaware 4.25).")
    occasion_starts_at_first_call: bool = Field(
        default=False, strict=True, title="Occasion starts at the first call",
        description="The occasion begins with the first call of the first game; pre-draws "
                    "do not start it (Missouri (1)).")
    predraw_requires_all_balls: bool = Field(
        default=False, strict=True, title="All balls present before pre-draws",
        description="Hot, bonanza or wild balls are drawn only with all 75 balls in the "
                    "blower (Missouri (1)).")
    require_announced_prize: bool = Field(
        default=False, strict=True, title="Prize announced with the game",
        description="A game is announced with its prize before it starts "
                    "(Delaware 4.6, Missouri (3)).")
    claims_same_day: bool = Field(
        default=False, strict=True, title="Winners on the day of the game",
        description="Winners are determined on the calendar day the game is played "
                    "(Delaware 4.10).")
    require_all_balls_confirmed: bool = Field(
        default=False, strict=True, title="All 75 balls confirmed before each game",
        description="The console confirms all 75 balls are in the blower before a game "
                    "starts (Missouri (2), Delaware 4.12).")

    @field_validator("earliest_game_time", mode="before")
    @classmethod
    def _hh_mm(cls, value: Any) -> Any:
        # Only "HH:MM" (or a time): pydantic would otherwise take 43200 as noon.
        if value is None or isinstance(value, time):
            return value
        if isinstance(value, str) and _HHMM.match(value):
            return value
        raise ValueError(f"expected a time as 'HH:MM' (e.g. '12:00'), got {value!r}")

    @model_validator(mode="after")
    def _one_start(self) -> RuleProfile:
        if self.occasion_starts_at_ball_check and self.occasion_starts_at_first_call:
            raise ValueError(
                "occasion_starts_at_ball_check and occasion_starts_at_first_call "
                "cannot both be true"
            )
        return self


PROFILE_DEFAULTS: dict[str, dict[str, Any]] = {
    "delaware": {
        "earliest_game_time": "12:00",
        "max_occasion_hours": 6,
        "max_games_per_occasion": 40,
        "max_prize_per_game_cents": 350_00,
        "max_prizes_per_occasion_cents": 3_000_00,
        "require_ball_check": True,
        "cookie_jar": True,
        "occasion_starts_at_ball_check": True,
        "require_all_balls_confirmed": True,
        "require_announced_prize": True,
        "claims_same_day": True,
    },
    "missouri": {
        "max_prizes_per_day_cents": 3_600_00,
        "occasion_starts_at_first_call": True,
        "predraw_requires_all_balls": True,
        "require_all_balls_confirmed": True,
        "require_announced_prize": True,
    },
    "none": {},
}

# The section each limit comes from, per profile. A limit a hall switches on that
# its regulation does not set is cited as a house rule.
SOURCES: dict[str, dict[str, str]] = {
    "delaware": {
        "earliest_game_time": "Delaware 4.2",
        "max_occasion_hours": "Delaware 4.2",
        "max_games_per_occasion": "Delaware 4.17",
        "max_prize_per_game_cents": "Delaware 4.6",
        "max_prizes_per_occasion_cents": "Delaware 4.6",
        "require_ball_check": "Delaware 4.25",
        "cookie_jar": "Delaware 4.31.6",
        "require_all_balls_confirmed": "Delaware 4.12",
        "require_announced_prize": "Delaware 4.6",
        "claims_same_day": "Delaware 4.10",
    },
    "missouri": {
        "occasion_starts_at_first_call": "Missouri 45-30.190(1)",
        "predraw_requires_all_balls": "Missouri 45-30.190(1)",
        "require_all_balls_confirmed": "Missouri 45-30.190(2)",
        "one_game_at_a_time": "Missouri 45-30.190(5)",
        "require_announced_prize": "Missouri 45-30.190(3)",
        "max_prizes_per_day_cents": "Missouri 45-30.190(6)",
    },
    "none": {},
}
HOUSE_RULE = {
    "delaware": "house rule (Delaware 4.20)",
    "missouri": "house rule (Missouri 45-30.190(7))",
    "none": "house rule",
}


def source(profile: RuleProfile, rule: str) -> str:
    """The section a refusal cites, e.g. 'Delaware 4.17'."""
    return SOURCES[profile.name].get(rule, HOUSE_RULE[profile.name])


def _refuse(profile: RuleProfile, rule: str, reason: str) -> str:
    return f"{source(profile, rule)}: {reason}"


def _describe_error(error: dict[str, Any]) -> str:
    field = ".".join(str(part) for part in error["loc"])
    if not field:  # a check across fields
        return error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        return f"unknown rule setting {field!r}"
    return f"bad value for {field!r}: {error['msg']}"


def load_profile(name: str, overrides: dict[str, Any] | None = None) -> RuleProfile:
    """The named profile with a hall's overrides applied; ValueError names what is wrong."""
    if name not in PROFILE_DEFAULTS:
        raise ValueError(
            f"unknown rule profile {name!r}; choose one of: {', '.join(PROFILE_DEFAULTS)}"
        )
    overrides = dict(overrides or {})
    if "name" in overrides:
        raise ValueError("the override 'name' is not allowed; choose the profile by its name")
    try:
        return RuleProfile.model_validate({**PROFILE_DEFAULTS[name], **overrides, "name": name})
    except ValidationError as exc:
        problems = "; ".join(_describe_error(e) for e in exc.errors())
        raise ValueError(f"rule profile {name!r}: {problems}") from None


def occasion_start_trigger(profile: RuleProfile) -> Literal["opened", "ball_check", "first_call"]:
    """Which event starts the occasion's clock (for `max_occasion_hours`)."""
    if profile.occasion_starts_at_first_call:
        return "first_call"
    if profile.occasion_starts_at_ball_check:
        return "ball_check"
    return "opened"


def _hours(value: float) -> str:
    return f"{value:g} hour" + ("" if value == 1 else "s")


def _check_duration(profile: RuleProfile, now_local: datetime,
                    occasion_started_at: datetime | None) -> str | None:
    limit = profile.max_occasion_hours
    if limit is None or occasion_started_at is None:
        return None
    ends = occasion_started_at + timedelta(hours=limit)
    if now_local >= ends:
        return _refuse(
            profile, "max_occasion_hours",
            f"an occasion may last at most {_hours(limit)}; this one started at "
            f"{occasion_started_at:%H:%M} and its time ended at {ends:%H:%M}",
        )
    return None


def _check_game_running(profile: RuleProfile, game_running: bool) -> str | None:
    if not game_running:
        return None
    reason = "only one game at a time; end the running game first"
    if profile.name == "missouri":
        return _refuse(profile, "one_game_at_a_time", reason)
    return reason


def _check_all_balls(profile: RuleProfile, all_balls_confirmed: bool) -> str | None:
    if profile.require_all_balls_confirmed and not all_balls_confirmed:
        return _refuse(
            profile, "require_all_balls_confirmed",
            "all 75 balls must be confirmed in the blower before the game starts",
        )
    return None


def check_new_game(
    profile: RuleProfile, *,
    now_local: datetime,
    occasion_started_at: datetime | None,
    games_in_occasion: int,
    ball_check_passed: bool,
    game_running: bool,
    all_balls_confirmed: bool,
    cookie_jar_drawn: bool,
) -> str | None:
    """May a new game start now? `games_in_occasion` counts games already started."""
    if refusal := _check_game_running(profile, game_running):
        return refusal
    if profile.require_ball_check and not ball_check_passed:
        return _refuse(profile, "require_ball_check",
                       "the balls must be verified (a passed ball check) before the first game")
    if profile.cookie_jar and not cookie_jar_drawn:
        return _refuse(profile, "cookie_jar",
                       "the cookie jar number must be drawn and posted at the start of the "
                       "event, before the first game")
    earliest = profile.earliest_game_time
    if earliest is not None and now_local.time() < earliest:
        return _refuse(profile, "earliest_game_time",
                       f"no game may start before {earliest:%H:%M} local time")
    if refusal := _check_duration(profile, now_local, occasion_started_at):
        return refusal
    limit = profile.max_games_per_occasion
    if limit is not None and games_in_occasion >= limit:
        return _refuse(profile, "max_games_per_occasion",
                       f"an occasion may hold at most {limit} games; {games_in_occasion} "
                       "have been played")
    return _check_all_balls(profile, all_balls_confirmed)


def check_call(
    profile: RuleProfile, *,
    now_local: datetime,
    occasion_started_at: datetime | None,
    game_running: bool,
    number: int,
    called_in_game: Collection[int],
) -> str | None:
    """May `number` be called now in the running game?

    A number already called in this game is refused: reading it again means a
    misread or a ball that was not returned, which needs the caller's attention.
    """
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 75:
        return f"not a ball number 1-75: {number!r}"
    if not game_running:
        return "no game is running; a call belongs to a game"
    if number in called_in_game:
        return (f"{ball_name(number)} was already called in this game: a misread or a ball "
                "not returned to the blower")
    return _check_duration(profile, now_local, occasion_started_at)


def check_predraw(
    profile: RuleProfile, *,
    now_local: datetime,
    occasion_started_at: datetime | None,
    game_running: bool,
    ball_check_passed: bool,
    all_balls_confirmed: bool,
) -> str | None:
    """May hot, bonanza or wild balls be drawn now, ahead of the next game?

    Under Missouri (1) a pre-draw does not start the occasion; the engine keeps
    `occasion_started_at` unset until the first call (see `occasion_start_trigger`).
    """
    if game_running:
        return "a pre-draw is made between games, not while a game is running"
    if profile.require_ball_check and not ball_check_passed:
        return _refuse(profile, "require_ball_check",
                       "the balls must be verified (a passed ball check) before any draw")
    if profile.predraw_requires_all_balls and not all_balls_confirmed:
        return _refuse(profile, "predraw_requires_all_balls",
                       "all 75 balls must be in the blower before hot, bonanza or wild "
                       "balls are drawn")
    return _check_duration(profile, now_local, occasion_started_at)


def check_cookie_jar(
    profile: RuleProfile, *,
    ball_check_passed: bool,
    cookie_jar_drawn: bool,
    game_running: bool,
    games_in_occasion: int,
) -> str | None:
    """May the cookie jar number be drawn now (Delaware 4.31.6, after 4.25)?"""
    if not profile.cookie_jar:
        return f"this hall's rule profile ({profile.name}) has no cookie jar"
    if cookie_jar_drawn:
        return _refuse(profile, "cookie_jar",
                       "the cookie jar number for this event has already been drawn")
    if game_running or games_in_occasion > 0:
        return _refuse(profile, "cookie_jar",
                       "the cookie jar number is drawn at the start of the event, before "
                       "the first game")
    if profile.require_ball_check and not ball_check_passed:
        return _refuse(profile, "require_ball_check",
                       "the balls must be verified before the cookie jar number is drawn")
    return None


def cookie_jar_won(cookie_number: int | None, check: CardCheck) -> bool:
    """Did this winning card achieve bingo when the cookie jar number was drawn?

    Delaware 4.31.6: the jar goes to a bingo achieved on the call of that number,
    not to a card that merely holds it.
    """
    return cookie_number is not None and check.winner and check.won_on_number == cookie_number


def check_break_open(profile: RuleProfile, *, count: int, **new_game: Any) -> str | None:
    """May a break-open game (Delaware 4.29) of `count` numbers start now?

    It is a game like any other for the game limits, so the `check_new_game`
    keywords are required too. The balls go back in the blower afterwards.
    """
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 75:
        return f"a break-open game draws a preset count of 1 to 75 numbers, not {count!r}"
    return check_new_game(profile, **new_game)


def check_ball_check(profile: RuleProfile, *, game_running: bool) -> str | None:
    """May a ball check start now? The balls are in play during a game."""
    if game_running:
        return "a ball check cannot run while a game is running"
    return None


def check_announced_prize(profile: RuleProfile, *, prize: str | int | None) -> str | None:
    """Is the game announced with a prize? `prize` is its text or value as announced."""
    if not profile.require_announced_prize:
        return None
    if prize is None or (isinstance(prize, str) and not prize.strip()):
        return _refuse(profile, "require_announced_prize",
                       "the prize must be announced with the game, before it starts")
    return None


def check_claim(profile: RuleProfile, *, now_local: datetime, game_started_at: datetime) -> str | None:
    """May a winner still be declared for a game that started at `game_started_at`?"""
    if profile.claims_same_day and now_local.date() != game_started_at.date():
        return _refuse(profile, "claims_same_day",
                       f"winners are determined on the day the game is played "
                       f"({game_started_at:%Y-%m-%d})")
    return None


def check_prize(
    profile: RuleProfile, *,
    prize_cents: int,
    prizes_in_occasion_cents: int,
    prizes_today_cents: int,
) -> str | None:
    """May a game be announced with this prize? Totals are of prizes announced before it.

    Cookie jar funds are not counted (Delaware 4.31.2); neither are Missouri
    pull-tab or progressive prizes (Missouri (6)): the engine leaves them out of the totals.
    """
    if isinstance(prize_cents, bool) or not isinstance(prize_cents, int) or prize_cents < 0:
        return f"a prize is a whole, non-negative number of cents, not {prize_cents!r}"
    limit = profile.max_prize_per_game_cents
    if limit is not None and prize_cents > limit:
        return _refuse(profile, "max_prize_per_game_cents",
                       f"a game's prize may be at most {_money(limit)}; {_money(prize_cents)} "
                       "was asked")
    limit = profile.max_prizes_per_occasion_cents
    if limit is not None and prizes_in_occasion_cents + prize_cents > limit:
        return _refuse(profile, "max_prizes_per_occasion_cents",
                       f"prizes in one occasion may total at most {_money(limit)}; "
                       f"{_money(prizes_in_occasion_cents)} already announced")
    limit = profile.max_prizes_per_day_cents
    if limit is not None and prizes_today_cents + prize_cents > limit:
        return _refuse(profile, "max_prizes_per_day_cents",
                       f"prizes in one day may total at most {_money(limit)}; "
                       f"{_money(prizes_today_cents)} already announced today")
    return None


def _money(cents: int) -> str:
    return f"${cents // 100:,}.{cents % 100:02d}"
