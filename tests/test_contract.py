"""The MQTT contract: schemas are valid, the documented examples keep them, bad payloads fail."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from services.contract import (
    COMMANDS, KINDS, SCHEMA_DIR, ContractError, decode, message_problems, problems, split_topic, validate,
)

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "mqtt.md"
EXAMPLE_RE = re.compile(r"<!-- example: (\S+) -->\s*```json\n(.*?)```", re.S)


def doc_examples() -> list[tuple[str, dict]]:
    return [(name, json.loads(body)) for name, body in EXAMPLE_RE.findall(DOC.read_text())]


def load_asyncapi() -> dict:
    # PyYAML is a test dependency (pyproject [test]); without it these two tests are skipped.
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((SCHEMA_DIR / "asyncapi.yaml").read_text())


def local_refs(node) -> list[str]:
    """Every $ref string anywhere in a parsed document."""
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in local_refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in local_refs(v)]
    return []


@pytest.mark.parametrize("path", sorted(SCHEMA_DIR.glob("*.schema.json")), ids=lambda p: p.name)
def test_every_schema_is_valid_json_schema_2020_12(path):
    schema = json.loads(path.read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("/" + path.name)
    Draft202012Validator.check_schema(schema)


def test_every_ref_between_schemas_points_at_something():
    schemas = {p.name: json.loads(p.read_text()) for p in SCHEMA_DIR.glob("*.schema.json")}
    for name, schema in schemas.items():
        for ref in local_refs(schema):
            target_file, _, pointer = ref.partition("#")
            target = schemas[target_file] if target_file else schema
            for part in filter(None, pointer.split("/")):
                target = target[part]  # KeyError names a broken ref
            assert isinstance(target, (dict, bool)), f"{name}: {ref}"


def test_asyncapi_document_ties_every_channel_to_a_schema_file():
    doc = load_asyncapi()
    assert doc["asyncapi"] == "3.0.0"
    messages = doc["components"]["messages"]
    referenced = set()
    for message in messages.values():
        ref = message["payload"]["schema"]["$ref"]
        assert (SCHEMA_DIR / ref).is_file(), ref
        referenced.add(Path(ref).name)
    # Every payload schema is in the document (common.schema.json only holds shared parts).
    assert referenced == set(KINDS.values())
    params = doc["components"]["parameters"]
    for name, channel in doc["channels"].items():
        for placeholder in re.findall(r"{(\w+)}", channel["address"]):
            assert channel["parameters"][placeholder]["$ref"] == f"#/components/parameters/{placeholder}"
            assert placeholder in params
        for msg in channel["messages"].values():
            assert msg["$ref"].removeprefix("#/components/messages/") in messages
    assert set(params["command"]["enum"]) == set(COMMANDS)
    for name, op in doc["operations"].items():
        assert op["action"] in ("send", "receive")
        assert op["channel"]["$ref"].removeprefix("#/channels/") in doc["channels"], name
    # A topic kind in contract.py is the channel address after <prefix>/<device_id>/.
    kinds = {re.sub(r"^{prefix}/{device_id}/", "", c["address"]).split("/{")[0] for c in doc["channels"].values()}
    assert kinds == set(KINDS)


def test_asyncapi_examples_keep_the_contract():
    doc = load_asyncapi()
    count = 0
    for name, message in doc["components"]["messages"].items():
        kind = message["name"]
        for example in message.get("examples", []):
            validate(kind, example["payload"])
            count += 1
    assert count >= 2


def test_every_example_in_the_docs_keeps_the_contract():
    examples = doc_examples()
    seen = set()
    for name, payload in examples:
        kind, _, command = name.partition("/")
        if kind in ("request", "response"):
            validate(kind, payload, command=command)
            seen.add(kind)
        else:
            validate(name, payload)
            seen.add(name)
    # Every JSON payload kind is shown at least once (availability is plain text).
    assert seen == set(KINDS) - {"availability"}
    assert len(examples) >= 12


def example(name: str, index: int = 0) -> dict:
    return copy.deepcopy([p for n, p in doc_examples() if n == name][index])


def broken(name: str, change) -> dict:
    payload = example(name)
    change(payload)
    return payload


BAD = [
    ("call", lambda p: p.pop("seq"), "'seq' is a required property"),
    ("call", lambda p: p.update(seq=0), "seq"),
    ("call", lambda p: p.update(ball="B16", letter="B", number=16), "letter 'B' does not agree with number 16"),
    ("call", lambda p: p.update(ball="B13"), "ball 'B13' does not agree with number 33"),
    ("call", lambda p: p.update(ball="X12"), "does not match"),
    ("call", lambda p: p.update(number=76), "76 is greater than the maximum"),
    ("call", lambda p: p.update(source="telepathy"), "is not one of"),
    ("call", lambda p: p.update(ts="2026-12-02 19:41:07"), "does not match"),
    ("call", lambda p: p.update(ts="2026-12-02T19:41:07+01:00"), "does not match"),  # not UTC
    ("call", lambda p: p.update(event_type="voided"), "'voids_seq' is a required property"),
    ("call", lambda p: p.update(voids_seq=3), "voids_seq"),  # only on a void
    ("call", lambda p: p.update(colour="blue"), "Additional properties"),
    ("call", lambda p: p.update(confidence=1.5), "greater than the maximum"),
    ("state", lambda p: p["game"].update(count=4), "game/count"),
    ("state", lambda p: p["game"].update(remaining=75), "game/remaining"),
    ("state", lambda p: p["game"].update(last_call="B12"), "game/last_call"),
    ("state", lambda p: p["game"]["called"].append("B12"), "non-unique"),
    ("state", lambda p: p["game"].update(status="paused"), "is not one of"),
    ("state", lambda p: p["game"]["pattern"]["picture"].pop(), "is too short"),
    ("state", lambda p: p["game"]["pattern"]["picture"][0].__setitem__(0, 2), "is not one of"),
    ("state", lambda p: p.update(device_id="Hall 1"), "does not match"),
    ("state", lambda p: p.pop("seq"), "'seq' is a required property"),
    ("read", lambda p: p.update(decision="commit"), "False was expected"),
    ("read", lambda p: p.update(needs_confirm=False), "True was expected"),
    ("read", lambda p: p.update(decision="maybe"), "is not one of"),
    ("fault", lambda p: p["active"][0].pop("affects_calls"), "'affects_calls' is a required property"),
    ("sim/drawn", lambda p: p.update(number=34), "ball 'N33' does not agree with number 34"),
    ("response/manual_call", lambda p: p.update(status="error"), "'error' is a required property"),
    ("response/manual_call", lambda p: p.update(status="maybe"), "is not one of"),
]


@pytest.mark.parametrize("kind, change, message", BAD, ids=[f"{k}-{m}" for k, _, m in BAD])
def test_a_broken_payload_is_refused_with_the_reason(kind, change, message):
    payload = broken(kind, change)
    kind, _, command = kind.partition("/") if kind.startswith("response") else (kind, "", "")
    with pytest.raises(ContractError) as err:
        validate(kind, payload, command=command or None)
    assert message in str(err.value)


@pytest.mark.parametrize("command, payload, message", [
    ("manual_call", {"ball": "B99"}, "ball"),
    ("manual_call", {}, "'ball' is a required property"),
    ("manual_call", {"ball": "B12", "colour": "blue"}, "Additional properties"),
    ("void", {"seq": "41"}, "'41' is not of type 'integer'"),
    ("new_game", {"pattern": {"name": "kite", "shape": ["XX"]}}, "pattern"),
    ("verify_card", {"serial": ""}, "serial"),
    ("status", {"transaction": ["a"]}, "transaction"),
    ("ball_check", {"action": "ball"}, "'ball' is a required property"),
    ("ball_check", {"action": "start", "ball": "B12"}, "is not of type 'null'"),
    ("verify_card", {"serial": "A-1", "numbers": list(range(1, 25))}, "valid under each of"),
    ("verify_card", {}, "is not valid under any"),
    ("predraw", {"kind": "lucky"}, "is not one of"),
])
def test_a_request_with_bad_arguments_is_refused(command, payload, message):
    with pytest.raises(ContractError) as err:
        validate("request", payload, command=command)
    assert message in str(err.value)


@pytest.mark.parametrize("command, payload", [
    ("ball_check", {"action": "ball", "ball": "B12"}),
    ("ball_check", {}),
    ("verify_card", {"numbers": list(range(1, 25))}),
    ("new_game", {"pattern": "any_line", "prize": "£10", "prize_cents": 1000, "count": 40,
                  "all_balls_in_blower": True}),
    ("split_prize", {"amount_cents": 2500, "winners": 3}),
])
def test_good_requests_keep_the_contract(command, payload):
    validate("request", payload, command=command)


@pytest.mark.parametrize("command, result, message", [
    ("new_game", {"game": 0}, "0 is less than the minimum"),
    ("new_game", None, "'result' is a required property"),
    ("manual_call", {"seq": 1}, "'ball' is a required property"),
    ("void", dict(example("call", 0)), "'voided' was expected"),
    ("status", {"game": None}, "'device_id' is a required property"),
    ("drawn", {"game": 1, "status": "running", "drawn": [], "remaining": ["B1", "B1"]}, "non-unique"),
    ("manual_call", {**example("call"), "number": 34}, "result/ball 'N33' does not agree with number 34"),
    ("status", {**example("state"), "seq": 41, "game": {**example("state")["game"], "count": 9}}, "result/game/count"),
])
def test_a_response_with_a_wrong_result_is_refused(command, result, message):
    response = {"transaction": "t", "status": "ok"}
    if result is not None:
        response["result"] = result
    with pytest.raises(ContractError) as err:
        validate("response", response, command=command)
    assert message in str(err.value)


def test_the_error_response_to_unreadable_json_keeps_the_contract():
    validate("response", {"transaction": None, "status": "error", "error": "not valid JSON: Expecting value"})
    validate("response", {"transaction": 7, "status": "ok", "result": {}})
    assert problems("response", {"transaction": "t", "status": "ok", "error": "no"})


def test_availability_is_plain_text():
    validate("availability", decode("availability", b"online"))
    validate("availability", "offline")
    with pytest.raises(ContractError):
        validate("availability", "Online")
    with pytest.raises(ContractError):
        validate("availability", {"state": "online"})


def test_unknown_kinds_and_commands_are_a_programming_error():
    with pytest.raises(KeyError):
        validate("calls", {})
    with pytest.raises(KeyError):
        validate("request", {}, command="self_destruct")


@pytest.mark.parametrize("topic, expected", [
    ("bingo/hall-1/call", ("bingo", "hall-1", "call", None)),
    ("bingo/hall-1/availability", ("bingo", "hall-1", "availability", None)),
    ("bingo/hall-1/request/new_game", ("bingo", "hall-1", "request", "new_game")),
    ("bingo/hall-1/response/status", ("bingo", "hall-1", "response", "status")),
    ("bingo/hall-1/sim/drawn", ("bingo", "hall-1", "sim/drawn", None)),
    ("site-a/bingo/hall-1/state", ("site-a/bingo", "hall-1", "state", None)),
])
def test_split_topic(topic, expected):
    assert split_topic(topic) == expected


def test_message_problems_takes_kind_and_command_from_the_topic():
    call = json.dumps(example("call")).encode()
    assert message_problems("bingo/hall-1/call", call) == []
    assert message_problems("bingo/hall-1/availability", b"online") == []
    assert message_problems("bingo/hall-1/state", call)  # a call is not a state
    assert "not JSON" in message_problems("bingo/hall-1/call", b"{oops")[0]
    assert message_problems("bingo/hall-1/response/manual_call", json.dumps(
        {"transaction": "t", "status": "ok", "result": {"game": 1}}).encode())  # not a call
    assert message_problems("bingo/hall-1/request/self_destruct", b"{}") == []
    assert "not a topic" in message_problems("bingo/hall-1/weather", b"{}")[0]
    state = json.dumps(example("state")).encode()
    assert message_problems("bingo/hall-1/state", state) == []
    assert message_problems("bingo/hall-2/state", state) == ["device_id: 'hall-1' but the topic is 'hall-2''s"]


def test_the_contract_knows_exactly_the_commands_the_appliance_answers():
    from services.commands import COMMANDS as TABLE

    assert set(COMMANDS) == set(TABLE)


def test_the_appliance_accepts_every_documented_request():
    from services.commands import COMMANDS as TABLE

    requests = [(name.partition("/")[2], payload) for name, payload in doc_examples() if name.startswith("request/")]
    assert len(requests) >= 6
    for command, payload in requests:
        TABLE[command].payload.model_validate(payload)  # raises on an argument the appliance refuses
