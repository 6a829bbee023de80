"""The one command table: MQTT `request/<command>` and the web pages both go through `execute`.

Each command has a pydantic payload model (unknown keys and wrong types are refused) and a
handler on the engine. `execute` never raises: it answers `status: ok` with a result, or
`status: error` with the reason, and on error nothing has changed.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from services.engine import DrawEngine, Refused
from vision.balls import parse_ball


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    transaction: str | int | None = None
    by: str = Field("console", max_length=64, description="Who asked (console name or user)")


class NoArgs(Payload):
    pass


class NewGame(Payload):
    pattern: str | dict[str, Any] = "any_line"
    prize: str = Field("", max_length=200)
    kind: str = Field("regular", max_length=40)
    all_balls_in_blower: bool = False


class BallArg(Payload):
    ball: int | str

    @field_validator("ball")
    @classmethod
    def _ball(cls, v: int | str) -> int:
        return parse_ball(str(v))


class Void(Payload):
    seq: int = Field(gt=0)
    reason: str = Field("", max_length=200)


def _pattern(spec: str | dict[str, Any]) -> dict[str, Any]:
    from services.patterns import pattern_from_spec

    return pattern_from_spec(spec).to_json()


@dataclass(frozen=True)
class Command:
    payload: type[Payload]
    handler: Callable[[DrawEngine, Any], Any]
    description: str


COMMANDS: dict[str, Command] = {
    "new_occasion": Command(NoArgs, lambda e, p: e.new_occasion(by=p.by), "Open a bingo occasion"),
    "new_game": Command(NewGame, lambda e, p: e.new_game(_pattern(p.pattern), p.prize, p.kind,
                                                         p.all_balls_in_blower, by=p.by),
                        "Announce and start a game with its pattern and prize"),
    "confirm": Command(BallArg, lambda e, p: e.confirm(p.ball, by=p.by),
                       "Confirm or correct the ball the reader was unsure of"),
    "manual_call": Command(BallArg, lambda e, p: e.manual_call(p.ball, by=p.by), "Call a ball by hand"),
    "void": Command(Void, lambda e, p: e.void(p.seq, p.reason, by=p.by), "Void a call by its seq"),
    "drawn": Command(NoArgs, lambda e, p: e.drawn(), "Numbers drawn in order and those remaining"),
    "end_game": Command(NoArgs, lambda e, p: e.end_game(by=p.by), "Close the running game"),
    "end_occasion": Command(NoArgs, lambda e, p: e.end_occasion(by=p.by), "Close the occasion"),
    "status": Command(NoArgs, lambda e, p: e.state(), "The current state"),
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
        command = COMMANDS.get(name)
        if command is None:
            raise ValueError(f"unknown command {name!r}; known: {', '.join(sorted(COMMANDS))}")
        payload = command.payload.model_validate(data)
        result = command.handler(engine, payload)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return {"transaction": transaction, "status": "error", "error": f"not valid JSON: {e}"}
    except ValidationError as e:
        return {"transaction": transaction, "status": "error", "error": _first_error(e)}
    except (Refused, ValueError) as e:
        return {"transaction": transaction, "status": "error", "error": str(e)}
    return {"transaction": transaction, "status": "ok", "result": result}
