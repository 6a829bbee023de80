"""The one command table: MQTT `request/<command>` and the web pages both go through `execute`.

Each command has a pydantic payload model (unknown keys and wrong types are refused) and a
handler on the engine. `execute` never raises: it answers `status: ok` with a result, or
`status: error` with the reason, and on error nothing has changed (a refusal by a rule is
itself recorded, which is the only trace it leaves).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from services.cards import split_prize
from services.engine import PREDRAW_KINDS, DrawEngine, Refused, pattern_json
from services.record import RecordError
from vision.balls import parse_ball

log = logging.getLogger(__name__)

MAX_CSV_CHARS = 4_000_000  # about 40,000 card faces


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)
    transaction: str | int | None = None
    by: str = Field("console", min_length=1, max_length=64, description="Who asked (console name or user)")


class NoArgs(Payload):
    pass


def _ball(v: int | str | None) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool):
        raise ValueError("not a ball")
    return parse_ball(str(v))


class NewGame(Payload):
    pattern: str | dict[str, Any] = "any_line"
    prize: str = Field("", max_length=200)
    prize_cents: int | None = Field(None, ge=0, strict=True, description="The prize's value, for the limits")
    kind: str = Field("regular", max_length=40)
    count: int | None = Field(None, ge=1, le=75, strict=True, description="Break-open game: numbers drawn")
    all_balls_in_blower: bool = Field(False, strict=True)

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, v: str | dict[str, Any]) -> dict[str, Any]:
        return pattern_json(v)


class BallArg(Payload):
    ball: int | str

    @field_validator("ball")
    @classmethod
    def _ball(cls, v: int | str) -> int:
        return _ball(v)


class OptionalBall(Payload):
    ball: int | str | None = None

    @field_validator("ball")
    @classmethod
    def _ball(cls, v: int | str | None) -> int | None:
        return _ball(v)


class BallCheckArgs(OptionalBall):
    action: Literal["start", "finish", "status", "ball"] = "start"

    @model_validator(mode="after")
    def _ball_only_with_ball(self) -> BallCheckArgs:
        if (self.action == "ball") != (self.ball is not None):
            raise ValueError("action 'ball' takes a ball, the other actions none")
        return self


class Predraw(OptionalBall):
    kind: Literal["hot", "bonanza", "wild"]
    all_balls_in_blower: bool = Field(False, strict=True)


class Void(Payload):
    seq: int = Field(gt=0, strict=True)
    reason: str = Field("", max_length=200)


class VerifyCard(Payload):
    serial: str | None = Field(None, min_length=1, max_length=64)
    numbers: list[int] | None = Field(None, min_length=24, max_length=24)

    @model_validator(mode="after")
    def _one(self) -> VerifyCard:
        if (self.serial is None) == (self.numbers is None):
            raise ValueError("give serial, or numbers (24, column order) for a player-pick card")
        return self


class ImportCards(Payload):
    csv: str = Field(min_length=1, max_length=MAX_CSV_CHARS)
    replace: bool = Field(False, strict=True)


class SplitPrize(Payload):
    amount_cents: int = Field(ge=0, strict=True)
    winners: int = Field(ge=1, le=10_000, strict=True)


class ClearFault(Payload):
    code: str = Field(min_length=1, max_length=64, description="The fault's code, as in the fault topic")


@dataclass(frozen=True)
class Command:
    payload: type[Payload]
    handler: Callable[[DrawEngine, Any], Any]
    description: str


def _ball_check(e: DrawEngine, p: BallCheckArgs) -> dict[str, Any]:
    if p.action == "start":
        return e.ball_check_start(by=p.by)
    if p.action == "finish":
        return e.ball_check_finish(by=p.by)
    if p.action == "ball":
        return e.ball_check_ball(p.ball, by=p.by)
    return e.ball_check_status()


COMMANDS: dict[str, Command] = {
    "new_occasion": Command(NoArgs, lambda e, p: e.new_occasion(by=p.by), "Open a bingo occasion"),
    "ball_check": Command(BallCheckArgs, _ball_check,
                          "Ball check: start, finish, status, or enter a ball the reader could not read"),
    "cookie_jar": Command(OptionalBall, lambda e, p: e.cookie_jar(p.ball, by=p.by),
                          "Draw the cookie jar number (the ball, or the next reading)"),
    "predraw": Command(Predraw, lambda e, p: e.predraw(p.kind, p.ball, p.all_balls_in_blower, by=p.by),
                       f"Draw a {', '.join(PREDRAW_KINDS)} ball ahead of the next game"),
    "new_game": Command(NewGame, lambda e, p: e.new_game(p.pattern, p.prize, p.kind, p.all_balls_in_blower,
                                                         by=p.by, prize_cents=p.prize_cents, count=p.count),
                        "Announce and start a game with its pattern and prize"),
    "confirm": Command(BallArg, lambda e, p: e.confirm(p.ball, by=p.by),
                       "Confirm or correct the ball the reader was unsure of"),
    "manual_call": Command(BallArg, lambda e, p: e.manual_call(p.ball, by=p.by), "Call a ball by hand"),
    "void": Command(Void, lambda e, p: e.void(p.seq, p.reason, by=p.by), "Void a call by its seq"),
    "claim": Command(NoArgs, lambda e, p: e.claim(by=p.by), "A player calls bingo: pause calling"),
    "resume": Command(NoArgs, lambda e, p: e.resume(by=p.by), "No winner on the claim: calling goes on"),
    "import_cards": Command(ImportCards, lambda e, p: e.import_cards(p.csv, p.replace, by=p.by),
                            "Import the hall's card faces (CSV: serial and 24 numbers)"),
    "verify_card": Command(VerifyCard, lambda e, p: e.verify_card(p.serial, p.numbers, by=p.by),
                           "Is this card a winner, with which arrangement, from which call"),
    "winners": Command(NoArgs, lambda e, p: e.winners(), "Verified winners of the game and their shares"),
    "split_prize": Command(SplitPrize, lambda e, p: {"shares_cents": split_prize(p.amount_cents, p.winners)},
                           "Divide a prize as equally as possible to the cent"),
    "drawn": Command(NoArgs, lambda e, p: e.drawn(by=p.by), "Numbers drawn in order and those remaining"),
    "end_game": Command(NoArgs, lambda e, p: e.end_game(by=p.by), "Close the running game"),
    "end_occasion": Command(NoArgs, lambda e, p: e.end_occasion(by=p.by), "Close the occasion"),
    "occasion": Command(NoArgs, lambda e, p: e.occasion_info(),
                        "The open occasion: clock, ball check, cookie jar, pre-draws"),
    "status": Command(NoArgs, lambda e, p: e.state(), "The current state"),
    "clear_fault": Command(ClearFault, lambda e, p: e.acknowledge_fault(p.code, by=p.by),
                           "A technician clears a fault (a broken record's problems are acknowledged)"),
}


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    key = ".".join(str(p) for p in first["loc"]) or "payload"
    problem = "unknown field" if first["type"] == "extra_forbidden" else first["msg"].removeprefix("Value error, ")
    return f"{key}: {problem}"


def execute(engine: DrawEngine, name: str, raw: bytes | str | dict[str, Any] | None) -> dict[str, Any]:
    """Run one command; always returns a response object."""
    transaction = None
    try:
        if isinstance(raw, (bytes, str)):
            text = raw.decode() if isinstance(raw, bytes) else raw
            data = json.loads(text) if text.strip() else {}
        else:
            data = raw or {}
        if not isinstance(data, dict):
            raise ValueError("payload must be a JSON object")
        transaction = data.get("transaction")
        if not isinstance(transaction, (str, int, type(None))) or isinstance(transaction, bool):
            transaction = None
        command = COMMANDS.get(name)
        if command is None:
            raise ValueError(f"unknown command {name!r}; known: {', '.join(sorted(COMMANDS))}")
        payload = command.payload.model_validate(data)
        result = command.handler(engine, payload)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return {"transaction": transaction, "status": "error", "error": f"not valid JSON: {e}"}
    except ValidationError as e:
        return {"transaction": transaction, "status": "error", "error": _first_error(e)}
    except (Refused, ValueError, RecordError) as e:
        return {"transaction": transaction, "status": "error", "error": str(e)}
    except Exception as e:  # a bug must answer too: callers rely on execute never raising
        log.exception("command %s failed", name)
        return {"transaction": transaction, "status": "error", "error": f"internal error: {e!r}"}
    return {"transaction": transaction, "status": "ok", "result": result}
