"""The MQTT contract: check a payload against its JSON Schema (services/schemas/).

    from services.contract import validate, ContractError
    validate("call", {"seq": 1, ...})            # raises ContractError if it breaks the contract
    validate("request", {...}, command="void")   # also checks that command's arguments
    validate("response", {...}, command="void")  # also checks that command's result

Beyond the schemas, a few cross-field rules that JSON Schema cannot say well are
checked here: a ball's letter and number agree, the state's counts add up, and a state's
device_id is the one in its topic.
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource

from vision.balls import ALL_NUMBERS, ball_name, letter_for

SCHEMA_DIR = Path(__file__).parent / "schemas"
BASE = "https://ballreader.example/schemas/"
# Topic kind -> schema file. A kind is the topic after <prefix>/<device_id>/,
# with request/<command> and response/<command> folded to "request"/"response".
KINDS = {
    "availability": "availability.schema.json",
    "state": "state.schema.json",
    "call": "call.schema.json",
    "read": "read.schema.json",
    "request": "request.schema.json",
    "response": "response.schema.json",
    "fault": "fault.schema.json",
    "sim/drawn": "sim_drawn.schema.json",
}
# The commands are those whose arguments the request schema defines.
COMMANDS = tuple(json.loads((SCHEMA_DIR / "request.schema.json").read_text())["$defs"])
# Responses whose result is another payload of the contract, for the cross-field rules.
RESULT_KIND = {"status": "state", "confirm": "call", "manual_call": "call", "void": "call"}


class ContractError(ValueError):
    """A payload that breaks the contract; `problems` lists every reason."""

    def __init__(self, kind: str, problems: list[str]):
        self.kind = kind
        self.problems = problems
        super().__init__(f"{kind}: " + "; ".join(problems))


@cache
def _registry() -> Registry:
    resources = []
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


@cache
def _validator(kind: str, command: str | None = None) -> Draft202012Validator:
    schema: dict[str, Any] = {"$ref": BASE + KINDS[kind]}
    if command is not None:
        schema = {"allOf": [schema, {"$ref": f"{BASE}{KINDS[kind]}#/$defs/{command}"}]}
    return Draft202012Validator(schema, registry=_registry())


def problems(topic_kind: str, payload: Any, command: str | None = None) -> list[str]:
    """Every way `payload` breaks the contract for `topic_kind`; empty when it keeps it."""
    if topic_kind not in KINDS:
        raise KeyError(f"unknown topic kind {topic_kind!r}; known: {', '.join(KINDS)}")
    if command is not None and (topic_kind not in ("request", "response") or command not in COMMANDS):
        raise KeyError(f"no schema for {topic_kind}/{command}")
    found = [_describe(best_match([e])) for e in _validator(topic_kind, command).iter_errors(payload)]
    if not found:
        found = _cross_checks(topic_kind, payload)
    if not found and topic_kind == "response" and command in RESULT_KIND and "result" in payload:
        found = [f"result/{p}" for p in _cross_checks(RESULT_KIND[command], payload["result"])]
    return found


def _describe(error) -> str:
    where = "/".join(map(str, error.absolute_path)) or "(payload)"
    message = error.message if len(error.message) < 200 else error.message[:200] + "..."
    return f"{where}: {message}"


def validate(topic_kind: str, payload: Any, command: str | None = None) -> None:
    """Raise ContractError unless `payload` keeps the contract for `topic_kind`.

    `payload` is the decoded message: a dict for JSON topics, the text for availability.
    """
    found = problems(topic_kind, payload, command)
    if found:
        raise ContractError(topic_kind if command is None else f"{topic_kind}/{command}", found)


def message_problems(topic: str, raw: bytes) -> list[str]:
    """Problems of one MQTT message as received: its topic tells the kind (and command)."""
    _, device_id, kind, command = split_topic(topic)
    if kind not in KINDS:
        return [f"{topic}: not a topic of the contract"]
    try:
        payload = decode(kind, raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return [f"{topic}: not {'text' if kind == 'availability' else 'JSON'}: {e}"]
    # An unknown command is still a request (the appliance answers it with an error).
    found = problems(kind, payload, command if command in COMMANDS else None)
    if kind == "state" and isinstance(payload, dict) and payload.get("device_id", device_id) != device_id:
        found.append(f"device_id: {payload['device_id']!r} but the topic is {device_id!r}'s")
    return found


def decode(topic_kind: str, raw: bytes) -> Any:
    """Message bytes as `validate` wants them: text for availability, JSON otherwise."""
    text = raw.decode("utf-8")
    return text if topic_kind == "availability" else json.loads(text)


def split_topic(topic: str) -> tuple[str, str, str, str | None]:
    """Topic -> (prefix, device_id, kind, command or None).

    'bingo/hall-1/call' -> ('bingo', 'hall-1', 'call', None)
    'bingo/hall-1/request/void' -> ('bingo', 'hall-1', 'request', 'void')
    'bingo/hall-1/sim/drawn' -> ('bingo', 'hall-1', 'sim/drawn', None)
    """
    parts = topic.split("/")
    if len(parts) >= 4 and parts[-2] in ("request", "response", "sim"):
        prefix, device_id = "/".join(parts[:-3]), parts[-3]
        if parts[-2] == "sim":
            return prefix, device_id, "sim/" + parts[-1], None
        return prefix, device_id, parts[-2], parts[-1]
    if len(parts) < 3:
        raise ValueError(f"not a ballreader topic: {topic!r}")
    return "/".join(parts[:-2]), parts[-2], parts[-1], None


def _cross_checks(kind: str, p: Any) -> list[str]:
    out: list[str] = []
    if kind in ("call", "read", "sim/drawn") and p.get("ball") is not None:
        out += _ball_agrees(p)
    if kind == "state" and p.get("game") is not None:
        g = p["game"]
        if g["count"] != len(g["called"]):
            out.append(f"game/count: {g['count']} but {len(g['called'])} balls in called")
        if g["remaining"] != len(ALL_NUMBERS) - len(g["called"]):
            out.append(f"game/remaining: {g['remaining']} but {len(g['called'])} of 75 called")
        last = g["called"][-1] if g["called"] else None
        if g["last_call"] != last:
            out.append(f"game/last_call: {g['last_call']!r} but the last of called is {last!r}")
    return out


def _ball_agrees(p: dict) -> list[str]:
    number = p.get("number")
    out = []
    if number is not None and p["ball"] != ball_name(number):
        out.append(f"ball {p['ball']!r} does not agree with number {number}")
    if "letter" in p and number is not None and p["letter"] != letter_for(number):
        out.append(f"letter {p['letter']!r} does not agree with number {number}")
    return out
