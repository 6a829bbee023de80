"""Real messages from a simulated run (`ballreader run --sim`) checked against the contract.

Every message the appliance publishes during the run, and every response to requests sent
while it runs, must keep its JSON Schema (services/schemas/) and the cross-field rules.
"""
from __future__ import annotations

import json
from collections import defaultdict

from appliance_proc import log_of, start_appliance
from mqtt_broker import Subscriber

from services.contract import decode, message_problems, split_topic

BALLS = 6
DEVICE = "t1"


def test_every_message_of_a_simulated_run_keeps_the_contract(mosquitto, tmp_path):
    base = f"bingo/{DEVICE}"
    with Subscriber(mosquitto, f"{base}/#", "homeassistant/#") as sub:
        run = start_appliance(tmp_path, mosquitto, "--sim", "--balls", str(BALLS), "--seed", "7",
                              device_id=DEVICE)
        try:
            sub.wait_for(lambda m: m.topic == f"{base}/availability" and m.payload == b"online", timeout=60)
            sub.wait_for(lambda m: m.topic == f"{base}/call", timeout=60)
            # Requests while a game runs, as a console would send them; one is not even JSON.
            requests = {"status": b'{"transaction": "live-1"}', "drawn": b'{"transaction": "live-2"}',
                        "manual_call": b'{"transaction": "live-3", "ball": "B99"}', "void": b"not json"}
            for command, payload in requests.items():
                sub.client.publish(f"{base}/request/{command}", payload, qos=1)
            sub.wait_for(lambda m: m.topic == f"{base}/availability" and m.payload == b"offline", timeout=120)
            run.wait(timeout=30)
        finally:
            run.kill()
            run.wait()
        messages = sub.drain()
    assert run.returncode == 0, log_of(run)

    by_kind = defaultdict(list)
    broken = []
    discovery = [m for m in messages if m.topic.startswith("homeassistant/")]
    messages = [m for m in messages if not m.topic.startswith("homeassistant/")]
    for msg in messages:
        _, device, kind, command = split_topic(msg.topic)
        assert device == DEVICE
        if kind == "request":
            continue
        found = message_problems(msg.topic, msg.payload)
        if found:
            broken.append(f"{msg.topic}: {found} in {msg.payload[:300]!r}")
        by_kind[kind].append((command, decode(kind, msg.payload), msg.retain))
    assert not broken, "\n".join(broken)

    # Every kind of message was seen, so every schema was really exercised.
    assert {"availability", "state", "call", "read", "fault", "sim/drawn", "response"} <= set(by_kind)
    assert [p for _, p, _ in by_kind["availability"]][-1] == "offline"
    calls = [p for _, p, _ in by_kind["call"]]
    drawn = [p for _, p, _ in by_kind["sim/drawn"]]
    assert [c["ball"] for c in calls] == [d["ball"] for d in drawn]
    assert len(calls) == BALLS
    seqs = [c["seq"] for c in calls]
    assert seqs == sorted(set(seqs))
    last_state = [p for _, p, _ in by_kind["state"]][-1]
    assert last_state["device_id"] == DEVICE
    assert last_state["game"]["called"] == [c["ball"] for c in calls]
    assert last_state["seq"] == seqs[-1]
    assert len(by_kind["read"]) >= BALLS

    responses = {command: payload for command, payload, _ in by_kind["response"]}
    assert set(responses) == set(requests)
    assert responses["status"]["status"] == "ok" and responses["status"]["transaction"] == "live-1"
    assert responses["drawn"]["status"] == "ok"
    assert responses["manual_call"]["status"] == "error" and responses["manual_call"]["transaction"] == "live-3"
    assert responses["void"] == {"transaction": None, "status": "error", "error": responses["void"]["error"]}

    # Home Assistant discovery went out, for this device, sharing its availability topic.
    assert [m.topic for m in discovery] == [f"homeassistant/device/bingo_{DEVICE}/config"]
    config = json.loads(discovery[0].payload)
    assert config["availability_topic"] == f"{base}/availability"
    assert config["state_topic"] == f"{base}/state"
    assert config["cmps"]["call"]["state_topic"] == f"{base}/call"
