"""The draw engine: occasions, games and calls under a hall's rule profile, rebuilt from the record.

Every change is an event appended to the record first and then applied to the in-memory
state by the same `_apply` that replays the record at start, so the state after a restart
(or a power cut) is exactly the state before it. A request that is not allowed now raises
`Refused` with the reason; the refusal is recorded and nothing else changes.

The engine asks the pure checks in `services.rules` before it acts, with the hall's local
time from an injectable clock (so the time-of-day rules are testable), and keeps the hall's
card faces for winner checks (`services.cards`).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from services import rules
from services.ball_check import Sighting, tally
from services.cards import Card, card_grid, check_card, parse_cards_csv, split_prize
from services.patterns import BUILTIN_PATTERNS, pattern_from_spec
from services.record import Event, Record
from services.selftest import RECORD_FAULT
from vision.balls import ALL_NUMBERS, ball_name, letter_for

PREDRAW_KINDS = ("hot", "bonanza", "wild")
RUNNING = ("running", "claims")  # a game in either is not over


class Refused(Exception):
    """A request that is not allowed now; the message says why."""


@dataclass
class Game:
    number: int
    pattern: dict[str, Any]
    prize: str
    kind: str
    prize_cents: int | None = None
    count: int | None = None  # break-open games: how many numbers are drawn
    status: str = "announced"  # announced -> running <-> claims -> closed
    started_at: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)  # every call event, voided ones too
    voided: set[int] = field(default_factory=set)  # seq of voided calls
    claim_at: int | None = None  # index of the latest call when the open claim was made
    winners: dict[str, dict[str, Any]] = field(default_factory=dict)  # card key -> verification
    predraws: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None  # winners and shares, set when the game ends

    def live_calls(self) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["seq"] not in self.voided]

    def called_numbers(self) -> list[int]:
        return [c["number"] for c in self.live_calls()]


@dataclass
class BallCheck:
    number: int
    started_at: str
    by: str
    sightings: list[Sighting] = field(default_factory=list)
    finished: dict[str, Any] | None = None  # the recorded result once finished


@dataclass
class Occasion:
    id: int
    started_at: str  # when it was opened
    games: int = 0  # games started
    announced: int = 0  # games announced: games are numbered from 1 in each occasion
    event_started_at: str | None = None  # the clock of the occasion's time limit
    ball_check: BallCheck | None = None  # the running or last check
    ball_check_passed: bool = False
    cookie_jar: dict[str, Any] | None = None
    armed: dict[str, Any] | None = None  # a special draw waiting for the next reading
    predraws: list[dict[str, Any]] = field(default_factory=list)  # drawn for the next game
    prizes_cents: int = 0


@dataclass
class Outcome:
    """What became of one fused reading."""
    decision: str  # called | confirm | represent | duplicate | refused
    call: dict[str, Any] | None = None
    reason: str | None = None


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_ts(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def _last_index(calls: list[dict[str, Any]]) -> int:
    """The game index of the latest live call, 0 before the first."""
    return calls[-1]["index"] if calls else 0


def pattern_json(spec: Any) -> dict[str, Any]:
    """The announced pattern: from a spec, a pattern's to_json, or {"name": <built-in>}."""
    if isinstance(spec, dict) and "spec" in spec:
        spec = spec["spec"]
    elif isinstance(spec, dict) and spec.get("name") in BUILTIN_PATTERNS and not {"shape", "lines"} & set(spec):
        spec = spec["name"]  # a built-in given as its json (name, picture, ...)
    return pattern_from_spec(spec).to_json()


class DrawEngine:
    def __init__(self, record: Record, on_change: Callable[[], None] | None = None,
                 on_call: Callable[[dict[str, Any]], None] | None = None, *,
                 profile: rules.RuleProfile | None = None, timezone_name: str | None = None,
                 now: Callable[[], datetime] | None = None, device_id: str = "ballreader") -> None:
        self.record = record
        self.on_change = on_change or (lambda: None)
        self.on_call = on_call or (lambda call: None)  # every call and void, as published
        self.profile = profile or rules.load_profile("none")
        try:
            self.tz = ZoneInfo(timezone_name) if timezone_name else None
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {timezone_name!r} (e.g. America/New_York)") from None
        self.now = now or (lambda: datetime.now(timezone.utc))
        self.device_id = device_id
        self._lock = threading.RLock()
        self.occasion: Occasion | None = None
        self.game: Game | None = None
        self.last_occasion_id = 0
        self.last_ball_check = 0
        self.last_seq = 0
        self.attempts = 0
        self.awaiting_confirm: dict[str, Any] | None = None
        self.faults: dict[str, dict[str, Any]] = {}
        self.cards: dict[str, Card] = {}
        self._prizes_by_day: dict[str, int] = {}  # local date -> prize cents announced
        for event in record.events():
            self._apply(event)

    @classmethod
    def from_config(cls, record: Record, cfg, **kwargs: Any) -> DrawEngine:
        """The engine for an appliance config: its rule profile, time zone and device id.

        A bad profile, override or time zone raises ConfigError naming it (the start stops).
        """
        from services.config import ConfigError

        try:
            profile = rules.load_profile(cfg.rules.profile, cfg.rules.overrides)
            return cls(record, profile=profile, timezone_name=cfg.rules.timezone, device_id=cfg.device_id,
                       **kwargs)
        except ValueError as e:
            raise ConfigError(f"rules: {e}") from None

    # -- time ------------------------------------------------------------------------------
    def _local(self, moment: datetime | str) -> datetime:
        if isinstance(moment, str):
            moment = _parse_ts(moment)
        return moment.astimezone(self.tz) if self.tz else moment.astimezone()

    def _now_local(self) -> datetime:
        return self._local(self.now())

    def _event_start_local(self) -> datetime | None:
        start = self.occasion.event_started_at if self.occasion else None
        return self._local(start) if start else None

    # -- the event log ---------------------------------------------------------------------
    def _emit(self, kind: str, data: dict[str, Any], frame_jpeg: bytes | None = None) -> Event:
        event = self.record.append(kind, data, frame_jpeg, ts=_iso(self.now()))
        self._apply(event)
        if kind in ("call", "void"):
            self.on_call(event.data)
        return event

    def _apply(self, e: Event) -> None:
        d = e.data
        occ, game = self.occasion, self.game
        match e.kind:
            case "occasion_started":
                self.occasion = Occasion(d["occasion"], e.ts)
                self.last_occasion_id = d["occasion"]
                if rules.occasion_start_trigger(self.profile) == "opened":
                    self.occasion.event_started_at = e.ts
            case "occasion_ended":
                self.occasion = None
            case "ball_check_started":
                occ.ball_check = BallCheck(d["check"], e.ts, d.get("by", ""))
                self.last_ball_check = d["check"]
            case "ball_check_ball":
                occ.ball_check.sightings.append(Sighting(d["number"], d["source"], d.get("guess")))
            case "ball_check_finished":
                occ.ball_check.finished = {**d, "ts": e.ts}
                occ.ball_check_passed = d["passed"]
                if d["passed"] and occ.event_started_at is None and \
                        rules.occasion_start_trigger(self.profile) == "ball_check":
                    occ.event_started_at = e.ts
            case "draw_armed":
                occ.armed = d
            case "cookie_jar_drawn":
                occ.cookie_jar = {**d, "ts": e.ts}
                occ.armed = None
            case "predraw":
                occ.predraws.append({**d, "ts": e.ts})
                occ.armed = None
            case "cards_imported":
                if d.get("replace"):
                    self.cards = {}
                for serial, numbers in d["cards"]:
                    self.cards[serial] = Card(serial, tuple(numbers))
            case "game_announced":
                self.game = Game(d["game"], d["pattern"], d.get("prize", ""), d.get("kind", "regular"),
                                 d.get("prize_cents"), d.get("count"))
                if occ:
                    occ.announced = d["game"]
                if d.get("prize_cents") is not None:
                    if occ:
                        occ.prizes_cents += d["prize_cents"]
                    day = self._local(e.ts).date().isoformat()
                    self._prizes_by_day[day] = self._prizes_by_day.get(day, 0) + d["prize_cents"]
            case "game_started":
                game.status, game.started_at = "running", e.ts
                if occ:
                    occ.games += 1
                    game.predraws, occ.predraws = occ.predraws, []
            case "claim":
                game.status, game.claim_at = "claims", d["at_index"]
            case "claim_resumed":
                game.status, game.claim_at = "running", None
            case "card_verified":
                if d["winner"] and not d["late"] and game and game.number == d["game"] \
                        and game.status in RUNNING:
                    game.winners[d["card"]] = d
            case "game_ended":
                game.status, game.result = "closed", d
                self.awaiting_confirm = None
            case "call":
                game.calls.append(d)
                self.last_seq = d["seq"]
                self.awaiting_confirm = None
                if occ and occ.event_started_at is None:
                    occ.event_started_at = e.ts  # Missouri (1): the first call starts the occasion
            case "void":
                game.voided.add(d["voids_seq"])
                self.last_seq = d["seq"]
            case "read":
                self.attempts = d["attempt"]
                if d["decision"] == "confirm" and "for" not in d:  # not a ball check or special draw
                    self.awaiting_confirm = {"attempt": d["attempt"], "ball": d["ball"], "number": d["number"],
                                             "confidence": d["confidence"], "read_event": e.id}
            case "fault_raised":
                self.faults[d["code"]] = {**d, "since": e.ts}
            case "fault_cleared":
                self.faults.pop(d["code"], None)

    def _refuse(self, command: str, reason: str, by: str | None = None) -> None:
        data = {"command": command, "reason": reason}
        if by:
            data["by"] = by
        self.record.append("refused", data, ts=_iso(self.now()))
        raise Refused(reason)

    def _check(self, command: str, reason: str | None, by: str | None = None) -> None:
        """Refuse when a rule check gave a reason."""
        if reason:
            self._refuse(command, reason, by)

    def _changed(self) -> None:
        self.on_change()

    def _game_running(self) -> bool:
        return bool(self.game and self.game.status in RUNNING)

    def _open_occasion(self, command: str, by: str) -> Occasion:
        if not self.occasion:
            self._refuse(command, "no occasion is open: start one with new_occasion", by)
        return self.occasion

    # -- occasions -------------------------------------------------------------------------
    def new_occasion(self, by: str = "console") -> dict[str, Any]:
        with self._lock:
            if self.occasion:
                self._refuse("new_occasion", f"occasion {self.occasion.id} is still open: end it first", by)
            self._emit("occasion_started", {"occasion": self.last_occasion_id + 1, "by": by,
                                            "profile": self.profile.name})
        self._changed()
        return {"occasion": self.occasion.id}

    def end_occasion(self, by: str = "console") -> dict[str, Any]:
        with self._lock:
            occ = self._open_occasion("end_occasion", by)
            if self._game_running():
                self._refuse("end_occasion", f"game {self.game.number} is still running: end it first", by)
            self._emit("occasion_ended", {"occasion": occ.id, "games": occ.games, "by": by})
        self._changed()
        return {"occasion": occ.id}

    def occasion_info(self) -> dict[str, Any]:
        """The open occasion: its clock, ball check, cookie jar and pre-draws."""
        with self._lock:
            occ = self.occasion
            if not occ:
                raise Refused("no occasion is open")
            return {"occasion": occ.id, "opened_at": occ.started_at, "event_started_at": occ.event_started_at,
                    "profile": self.profile.name, "games": occ.games, "prizes_cents": occ.prizes_cents,
                    "ball_check": self._check_progress() if occ.ball_check else None,
                    "ball_check_passed": occ.ball_check_passed,
                    "cookie_jar": occ.cookie_jar["ball"] if occ.cookie_jar else None,
                    "armed": occ.armed["kind"] if occ.armed else None,
                    "predraws": [{k: p[k] for k in ("kind", "ball", "for_game")} for p in occ.predraws]}

    # -- the ball check --------------------------------------------------------------------
    def ball_check_start(self, by: str = "console") -> dict[str, Any]:
        with self._lock:
            occ = self._open_occasion("ball_check", by)
            self._check("ball_check", rules.check_ball_check(self.profile, game_running=self._game_running()), by)
            if occ.ball_check and occ.ball_check.finished is None:
                self._refuse("ball_check", f"ball check {occ.ball_check.number} is already running", by)
            self._emit("ball_check_started", {"occasion": occ.id, "check": self.last_ball_check + 1, "by": by})
        self._changed()
        return self._check_progress()

    def ball_check_ball(self, number: int, by: str = "console") -> dict[str, Any]:
        """A ball entered at the console during the check (one the reader could not read)."""
        with self._lock:
            check = self._running_check("ball_check", by)
            self._emit("ball_check_ball", {"check": check.number, "number": number, "ball": ball_name(number),
                                           "source": "console", "by": by})
        self._changed()
        return self._check_progress()

    def ball_check_finish(self, by: str = "console") -> dict[str, Any]:
        with self._lock:
            check = self._running_check("ball_check", by)
            result = tally(check.sightings).to_json()
            self._emit("ball_check_finished", {"check": check.number, **result, "by": by})
        self._changed()
        return self._check_progress()

    def ball_check_status(self) -> dict[str, Any]:
        with self._lock:
            if not self.occasion or not self.occasion.ball_check:
                raise Refused("no ball check in this occasion yet")
            return self._check_progress()

    def _running_check(self, command: str, by: str) -> BallCheck:
        occ = self._open_occasion(command, by)
        if not occ.ball_check or occ.ball_check.finished is not None:
            self._refuse(command, "no ball check is running: start one", by)
        return occ.ball_check

    def _check_progress(self) -> dict[str, Any]:
        check = self.occasion.ball_check
        return {"check": check.number, "running": check.finished is None, "started_at": check.started_at,
                "started_by": check.by, "finished_at": (check.finished or {}).get("ts"),
                "finished_by": (check.finished or {}).get("by"), **tally(check.sightings).to_json()}

    def _check_reading(self, number: int | None, confidence: float, decision: str,
                       frame_jpeg: bytes | None) -> Outcome:
        """A reading while the ball check runs: counted into the check, never called."""
        check = self.occasion.ball_check
        if decision == "represent":
            return Outcome("represent", reason="ball check: present the ball again")
        seen = number if decision == "commit" else None
        self._emit("ball_check_ball", {"check": check.number, "number": seen,
                                       "ball": ball_name(seen) if seen else None, "source": "camera",
                                       "guess": None if seen else number, "confidence": round(confidence, 4)},
                   frame_jpeg)
        progress = tally(check.sightings)
        if seen is None:
            return Outcome("refused", reason="ball check: unreadable; enter it at the console")
        return Outcome("refused", reason=f"ball check: {ball_name(seen)} seen ({len(progress.seen)} of 75)")

    # -- special draws: cookie jar (Delaware 4.31.6) and pre-draws (Missouri (1)) ------------
    def cookie_jar(self, number: int | None = None, by: str = "console") -> dict[str, Any]:
        """Draw the cookie jar number: `number` as drawn, or None to take the next reading."""
        with self._lock:
            occ = self._open_occasion("cookie_jar", by)
            self._check("cookie_jar", rules.check_cookie_jar(
                self.profile, ball_check_passed=occ.ball_check_passed, cookie_jar_drawn=occ.cookie_jar is not None,
                game_running=self._game_running(), games_in_occasion=occ.games), by)
            self._special_draw("cookie_jar", number, "console", 1.0, None, by)
        self._changed()
        return self._draw_answer("cookie_jar")

    def predraw(self, kind: str, number: int | None = None, all_balls_in_blower: bool = False,
                by: str = "console") -> dict[str, Any]:
        """A hot, bonanza or wild ball drawn ahead of the next game; it does not start the occasion."""
        with self._lock:
            if kind not in PREDRAW_KINDS:
                raise ValueError(f"a pre-draw is one of {', '.join(PREDRAW_KINDS)}, not {kind!r}")
            occ = self._open_occasion("predraw", by)
            self._check("predraw", rules.check_predraw(
                self.profile, now_local=self._now_local(), occasion_started_at=self._event_start_local(),
                game_running=self._game_running(), ball_check_passed=occ.ball_check_passed,
                all_balls_confirmed=all_balls_in_blower), by)
            self._special_draw(kind, number, "console", 1.0, None, by)
        self._changed()
        return self._draw_answer(kind)

    def _special_draw(self, kind: str, number: int | None, source: str, confidence: float,
                      frame_jpeg: bytes | None, by: str) -> None:
        occ = self.occasion
        if number is None:
            self._emit("draw_armed", {"kind": kind, "by": by})
            return
        data = {"occasion": occ.id, "kind": kind, "ball": ball_name(number), "number": number, "source": source,
                "confidence": round(confidence, 4), "by": by}
        if kind == "cookie_jar":
            self._emit("cookie_jar_drawn", data, frame_jpeg)
        else:
            self._emit("predraw", {**data, "for_game": occ.announced + 1}, frame_jpeg)

    def _draw_answer(self, kind: str) -> dict[str, Any]:
        occ = self.occasion
        if occ.armed:
            return {"kind": kind, "armed": True, "ball": None}
        drawn = occ.cookie_jar if kind == "cookie_jar" else occ.predraws[-1]
        return {"kind": kind, "armed": False, "ball": drawn["ball"]}

    # -- games -----------------------------------------------------------------------------
    def new_game(self, pattern: Any, prize: str = "", kind: str = "regular",
                 all_balls_in_blower: bool = False, by: str = "console", prize_cents: int | None = None,
                 count: int | None = None) -> dict[str, Any]:
        """Announce a game (pattern, prize, kind) and start it. A break-open game draws `count` numbers."""
        with self._lock:
            occ = self._open_occasion("new_game", by)
            pattern = pattern_json(pattern)
            now = self._now_local()
            facts = dict(now_local=now, occasion_started_at=self._event_start_local(), games_in_occasion=occ.games,
                         ball_check_passed=occ.ball_check_passed, game_running=self._game_running(),
                         all_balls_confirmed=all_balls_in_blower, cookie_jar_drawn=occ.cookie_jar is not None)
            if kind == "break_open":
                self._check("new_game", rules.check_break_open(self.profile, count=count, **facts), by)
            else:
                if count is not None:
                    raise ValueError("count is only for a break-open game (kind break_open)")
                self._check("new_game", rules.check_new_game(self.profile, **facts), by)
            if not all_balls_in_blower:
                self._refuse("new_game", "confirm that all 75 balls are in the blower (all_balls_in_blower)", by)
            self._check("new_game", rules.check_announced_prize(self.profile, prize=prize), by)
            self._check_prize(prize_cents, now, by)
            self._blocking_fault("new_game", by)
            number = occ.announced + 1
            self._emit("game_announced", {"game": number, "occasion": occ.id, "pattern": pattern, "prize": prize,
                                          "prize_cents": prize_cents, "kind": kind, "count": count, "by": by})
            self._emit("game_started", {"game": number, "all_balls_in_blower": True, "by": by})
        self._changed()
        return {"game": number}

    def _check_prize(self, prize_cents: int | None, now_local: datetime, by: str) -> None:
        p = self.profile
        limited = any(v is not None for v in (p.max_prize_per_game_cents, p.max_prizes_per_occasion_cents,
                                              p.max_prizes_per_day_cents))
        if prize_cents is None:
            if limited:
                self._refuse("new_game", f"{rules.source(p, 'max_prize_per_game_cents')}: the prize's value "
                                         "(prize_cents) is needed to check the prize limits", by)
            return
        today = self._prizes_by_day.get(now_local.date().isoformat(), 0)
        self._check("new_game", rules.check_prize(p, prize_cents=prize_cents,
                                                  prizes_in_occasion_cents=self.occasion.prizes_cents,
                                                  prizes_today_cents=today), by)

    def end_game(self, by: str = "console") -> dict[str, Any]:
        """Close the game; the verified winners share the prize (Delaware 4.6, 4.11)."""
        with self._lock:
            game = self._running_game("end_game", by)
            winners = sorted(game.winners)
            shares = (split_prize(game.prize_cents, len(winners))
                      if winners and game.prize_cents is not None else [])
            self._emit("game_ended", {"game": game.number, "calls": len(game.live_calls()), "winners": winners,
                                      "shares_cents": shares, "by": by})
        self._changed()
        return {"game": game.number}

    def winners(self) -> dict[str, Any]:
        """The verified winners of the current (or last) game and their shares of the prize."""
        with self._lock:
            game = self._current_game()
            winners = sorted(game.winners)
            if game.result:
                shares = game.result["shares_cents"]
            else:
                shares = split_prize(game.prize_cents, len(winners)) if winners and game.prize_cents else []
            return {"game": game.number, "status": game.status, "prize": game.prize, "prize_cents": game.prize_cents,
                    "winners": [{"card": w, "won_at_index": game.winners[w]["won_at_index"],
                                 "arrangement": game.winners[w]["arrangement_name"],
                                 "share_cents": shares[i] if shares else None} for i, w in enumerate(winners)]}

    def _running_game(self, command: str, by: str | None = None) -> Game:
        if not self._game_running():
            self._refuse(command, "no game is running", by)
        return self.game

    def _current_game(self) -> Game:
        if not self.game:
            raise Refused("no game has been played")
        return self.game

    def _blocking_fault(self, command: str, by: str | None = None) -> None:
        blocking = [f for f in self.faults.values() if f.get("affects_calls")]
        if blocking:
            self._refuse(command, f"fault {blocking[0]['code']}: {blocking[0]['message']}", by)

    # -- calls -----------------------------------------------------------------------------
    def _call(self, number: int, confidence: float, source: str, frame_jpeg: bytes | None,
              command: str, by: str | None = None) -> dict[str, Any]:
        game = self._running_game(command, by)
        if game.status == "claims":
            self._refuse(command, f"calling is paused while a claim is checked in game {game.number}", by)
        self._blocking_fault(command, by)
        self._check(command, rules.check_call(
            self.profile, now_local=self._now_local(), occasion_started_at=self._event_start_local(),
            game_running=True, number=number, called_in_game=game.called_numbers()), by)
        if game.count is not None and len(game.live_calls()) >= game.count:
            self._refuse(command, f"Delaware 4.29: break-open game {game.number} draws {game.count} numbers; "
                                  "all have been drawn", by)
        if by is not None:
            # A call by a person: who it was goes in the record (the call itself goes to boards).
            self._emit("console_call", {"command": command, "ball": ball_name(number), "by": by})
        call = {"seq": self.last_seq + 1, "game": game.number, "index": len(game.calls) + 1,
                "ball": ball_name(number), "letter": letter_for(number), "number": number,
                "confidence": round(float(confidence), 4), "source": source, "ts": _iso(self.now()),
                "event_type": "called"}
        self._emit("call", call, frame_jpeg)
        return call

    def on_reading(self, number: int | None, confidence: float, decision: str, frames: int,
                   reason: str | None = None, frame_jpeg: bytes | None = None) -> Outcome:
        """A fused camera reading: decision is commit, confirm or represent.

        During a ball check the reading is counted into the check; when a special draw is
        armed it becomes that draw; otherwise a commit is called in the running game.
        """
        with self._lock:
            attempt = self.attempts + 1
            ball = ball_name(number) if number else None
            read = {"attempt": attempt, "ball": ball, "number": number, "confidence": round(confidence, 4),
                    "decision": decision, "reason": reason, "frames": frames}
            occ = self.occasion
            if occ and occ.ball_check and occ.ball_check.finished is None:
                self._emit("read", {**read, "for": "ball_check"})
                outcome = self._check_reading(number, confidence, decision, frame_jpeg)
            elif occ and occ.armed and decision != "represent":
                outcome = self._armed_reading(read, number, confidence, frame_jpeg)
            else:
                outcome = self._game_reading(read, number, confidence, frame_jpeg)
        self._changed()
        return outcome

    def _armed_reading(self, read: dict[str, Any], number: int | None, confidence: float,
                       frame_jpeg: bytes | None) -> Outcome:
        kind = self.occasion.armed["kind"]
        if read["decision"] != "commit":
            read.update(decision="refused", reason=f"{kind} draw: unsure reading; enter the ball at the console")
            self._emit("read", {**read, "for": kind}, frame_jpeg)
            return Outcome("refused", reason=read["reason"])
        self._emit("read", {**read, "for": kind})
        self._special_draw(kind, number, "camera", confidence, frame_jpeg, self.occasion.armed.get("by", ""))
        return Outcome("refused", reason=f"{kind} draw: {ball_name(number)}")

    def _game_reading(self, read: dict[str, Any], number: int | None, confidence: float,
                      frame_jpeg: bytes | None) -> Outcome:
        game = self.game if self._game_running() else None
        decision = read["decision"]
        if decision == "commit" and game is None:
            read.update(decision="refused", reason="no game is running")
        elif decision == "commit" and number in game.called_numbers():
            # A number already called means a misread or a ball not returned: raise it, never publish.
            read.update(decision="duplicate", reason=f"{read['ball']} was already called in game {game.number}")
        self._emit("read", read, frame_jpeg if read["decision"] == "confirm" else None)
        if read["decision"] == "duplicate":
            self._emit_fault("duplicate_read", f"{read['ball']} read again in game {game.number}: a misread "
                                               "or a ball not returned to the blower", affects_calls=False)
        if read["decision"] != "commit":
            return Outcome(read["decision"], reason=read["reason"])
        try:
            call = self._call(number, confidence, "camera", frame_jpeg, "read")
        except Refused as e:
            return Outcome("refused", reason=str(e))
        if "duplicate_read" in self.faults:
            self._emit("fault_cleared", {"code": "duplicate_read", "by": "system"})
        return Outcome("called", call)

    def confirm(self, number: int, by: str = "console") -> dict[str, Any]:
        """A person confirms (or corrects) the ball the reader was unsure of."""
        with self._lock:
            if not self.awaiting_confirm:
                self._refuse("confirm", "no reading is waiting for confirmation", by)
            pending = self.awaiting_confirm
            frame = self.record.frame(pending["read_event"])
            call = self._call(number, 1.0, "console", frame, "confirm", by)
        self._changed()
        return call

    def manual_call(self, number: int, by: str = "console") -> dict[str, Any]:
        with self._lock:
            call = self._call(number, 1.0, "console", None, "manual_call", by)
        self._changed()
        return call

    def void(self, seq: int, reason: str = "", by: str = "console") -> dict[str, Any]:
        """A correction is a new event; the voided call stays in the record."""
        with self._lock:
            game = self._running_game("void", by)
            target = next((c for c in game.calls if c["seq"] == seq), None)
            if target is None:
                self._refuse("void", f"no call with seq {seq} in game {game.number}", by)
            if seq in game.voided:
                self._refuse("void", f"call {seq} ({target['ball']}) is already voided", by)
            void = {**target, "seq": self.last_seq + 1, "event_type": "voided", "voids_seq": seq,
                    "ts": _iso(self.now()), "reason": reason, "by": by}
            self._emit("void", void)
        self._changed()
        return void

    # -- claims and winners ----------------------------------------------------------------
    def claim(self, by: str = "console") -> dict[str, Any]:
        """A player calls bingo: calling pauses until the claim is checked."""
        with self._lock:
            game = self._running_game("claim", by)
            if game.status == "claims":
                self._refuse("claim", f"a claim is already being checked in game {game.number}", by)
            self._check("claim", rules.check_claim(self.profile, now_local=self._now_local(),
                                                   game_started_at=self._local(game.started_at)), by)
            self._emit("claim", {"game": game.number, "at_index": _last_index(game.live_calls()), "by": by})
        self._changed()
        return {"game": game.number, "at_index": game.claim_at}

    def resume(self, by: str = "console") -> dict[str, Any]:
        """No (more) winners on this claim: calling goes on."""
        with self._lock:
            game = self._running_game("resume", by)
            if game.status != "claims":
                self._refuse("resume", "no claim is being checked", by)
            self._emit("claim_resumed", {"game": game.number, "by": by})
        self._changed()
        return {"game": game.number}

    def import_cards(self, csv_text: str, replace: bool = False, by: str = "console") -> dict[str, Any]:
        """The hall's card faces (CSV: serial and 24 numbers), kept in the record."""
        with self._lock:
            cards = parse_cards_csv(csv_text)
            if not replace:
                again = [c.serial for c in cards if c.serial in self.cards]
                if again:
                    self._refuse("import_cards", f"card {again[0]} is already imported "
                                                 f"({len(again)} serial(s) again); use replace to load a new set", by)
            self._emit("cards_imported", {"count": len(cards), "replace": replace, "by": by,
                                          "cards": [[c.serial, list(c.numbers)] for c in cards]})
        self._changed()
        return {"imported": len(cards), "cards": len(self.cards)}

    def verify_card(self, serial: str | None = None, numbers: list[int] | None = None,
                    by: str = "console") -> dict[str, Any]:
        """Is this card a winner in the current game, with which arrangement, from which call?"""
        with self._lock:
            if (serial is None) == (numbers is None):
                raise ValueError("give a card serial, or the 24 numbers of a player-pick card, not both")
            game = self._current_game()
            if serial is not None:
                card = self.cards.get(serial)
                if card is None:
                    self._refuse("verify_card", f"no card with serial {serial!r} has been imported", by)
                key = serial
            else:
                card = Card("typed", tuple(numbers))  # raises ValueError on a void face (DE 4.30.1.2)
                # One face wins once: typed numbers of an imported card are that card.
                key = next((s for s, c in self.cards.items() if c.numbers == card.numbers),
                           "typed:" + "-".join(map(str, numbers)))
            if game.status != "closed":
                self._check("verify_card", rules.check_claim(self.profile, now_local=self._now_local(),
                                                             game_started_at=self._local(game.started_at)), by)
            live = game.live_calls()
            check = check_card(card, [c["number"] for c in live],
                               pattern_from_spec(pattern_json(game.pattern)["spec"]))
            # Indexes are the calls' own `index` in the game (as boards show them), voided calls skipped.
            won = live[check.won_at_index - 1] if check.winner and check.won_at_index else None
            at_index = game.claim_at if game.claim_at is not None else _last_index(live)
            late = won is not None and won["index"] < at_index
            cookie = self.occasion.cookie_jar["number"] if self.occasion and self.occasion.cookie_jar else None
            result = {"game": game.number, "card": key, "serial": serial, "grid": card_grid(card),
                      **check.to_json(), "won_at_index": won["index"] if won else None,
                      "won_on_ball": won["ball"] if won else None, "won_on_seq": won["seq"] if won else None,
                      "claim_at_index": at_index, "late": late, "cookie_jar_won": rules.cookie_jar_won(cookie, check)}
            self._emit("card_verified", {**{k: v for k, v in result.items() if k != "grid"}, "by": by})
        self._changed()
        return result

    # -- faults ----------------------------------------------------------------------------
    def _emit_fault(self, code: str, message: str, affects_calls: bool) -> bool:
        if code in self.faults and self.faults[code]["message"] == message:
            return False
        self._emit("fault_raised", {"code": code, "message": message, "affects_calls": affects_calls})
        return True

    def raise_fault(self, code: str, message: str, affects_calls: bool = True) -> None:
        with self._lock:
            changed = self._emit_fault(code, message, affects_calls)
        if changed:
            self._changed()

    def clear_fault(self, code: str, by: str = "system") -> None:
        with self._lock:
            if code not in self.faults:
                return
            self._emit("fault_cleared", {"code": code, "by": by})
        self._changed()

    def acknowledge_fault(self, code: str, by: str) -> dict[str, Any]:
        """A technician clears a fault. A broken record stays broken, so the problems seen now
        are acknowledged in the clear event; the boot self-test raises only new ones."""
        with self._lock:
            if code not in self.faults:
                self._refuse("clear_fault", f"no active fault {code!r}", by=by)
            data: dict[str, Any] = {"code": code, "by": by}
            if code == RECORD_FAULT:
                data["acknowledged"] = self.record.verify()
            self._emit("fault_cleared", data)
        self._changed()
        return {"cleared": code}

    # -- what boards and players see -------------------------------------------------------
    def drawn(self, by: str = "console") -> dict[str, Any]:
        """The verification list (DE 4.16): numbers drawn in order, and those still in the blower."""
        with self._lock:
            game = self.game
            if not game:
                self._refuse("drawn", "no game has been played", by)
            calls = game.live_calls()
            called = {c["number"] for c in calls}
            answer = {"game": game.number, "status": game.status,
                      "drawn": [{"index": c["index"], "ball": c["ball"], "ts": c["ts"],
                                 "confidence": c["confidence"], "source": c["source"], "seq": c["seq"]}
                                for c in calls],
                      "remaining": [ball_name(n) for n in ALL_NUMBERS if n not in called]}
            # The verification itself is an event a regulator may ask about (DE 4.16).
            self.record.append("verification", {"game": game.number, "drawn": len(calls), "by": by},
                               ts=_iso(self.now()))
            return answer

    def state(self) -> dict[str, Any]:
        with self._lock:
            game = None
            if self.game:
                calls = self.game.live_calls()
                cookie = self.occasion.cookie_jar if self.occasion else None
                game = {"number": self.game.number, "status": self.game.status, "pattern": self.game.pattern,
                        "prize": self.game.prize, "kind": self.game.kind,
                        "called": [c["ball"] for c in calls], "last_call": calls[-1]["ball"] if calls else None,
                        "count": len(calls), "remaining": 75 - len(calls),
                        "cookie_jar": cookie["ball"] if cookie else None}
            confirm = None
            if self.awaiting_confirm:
                confirm = {k: self.awaiting_confirm[k] for k in ("attempt", "ball", "number", "confidence")}
            return {"device_id": self.device_id,
                    "occasion": {"id": self.occasion.id, "started_at": self.occasion.started_at}
                    if self.occasion else None,
                    "game": game, "awaiting_confirm": confirm,
                    "faults": [{k: f[k] for k in ("code", "message", "since", "affects_calls")}
                               for f in self.faults.values()],
                    "seq": self.last_seq, "record": dict(zip(("event", "hash"), self.record.head())),
                    "ts": _iso(self.now())}
