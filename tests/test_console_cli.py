"""`ballreader console` as a real process against the appliance's real MQTT side.

The appliance here is the real MqttLink, DrawEngine and command table on a real record and
a real mosquitto; only the camera and sensor are absent (calls are made by hand).
"""
from __future__ import annotations

import json
import select
import subprocess
import sys

import pytest
from mqtt_broker import Subscriber

from services.commands import execute
from services.config import MqttConfig
from services.console_cli import call_line
from services.contract import validate
from services.engine import DrawEngine
from services.mqtt_link import MqttLink
from services.record import Record


@pytest.fixture
def appliance(mosquitto, tmp_path):
    record = Record(tmp_path / "record.db")
    engine = DrawEngine(record)
    link = MqttLink(MqttConfig(url=mosquitto.url), "hall-1", record, engine.state,
                    lambda: {"active": engine.state()["faults"]}, lambda name, raw: execute(engine, name, raw))
    engine.on_change = lambda: (link.publish_state(), link.flush_calls())
    link.start()
    assert link.connected.wait(10)
    yield engine
    link.stop()
    record.close()


def console(broker, *args, timeout=20):
    return subprocess.run([sys.executable, "-m", "services.console_cli", *args, "--mqtt", broker.url,
                           "--device-id", "hall-1"], capture_output=True, text=True, timeout=timeout)


def test_request_prints_the_response_and_exits_by_its_status(mosquitto, appliance):
    assert console(mosquitto, "request", "new_occasion").returncode == 0
    ok = console(mosquitto, "request", "new_game", '{"pattern": "four_corners", "prize": "£25", '
                                                   '"all_balls_in_blower": true, "transaction": "t-1"}')
    assert ok.returncode == 0, ok.stderr
    response = json.loads(ok.stdout)
    validate("response", response)
    assert response == {"transaction": "t-1", "status": "ok", "result": {"game": 1}}

    called = console(mosquitto, "request", "manual_call", '{"ball": "B12"}')
    assert called.returncode == 0
    call = json.loads(called.stdout)["result"]
    assert (call["ball"], call["source"], call["event_type"]) == ("B12", "console", "called")

    again = console(mosquitto, "request", "manual_call", '{"ball": "B12"}')
    assert again.returncode == 1
    refused = json.loads(again.stdout)
    validate("response", refused)
    assert refused["status"] == "error" and "already called" in refused["error"]


def test_request_without_an_appliance_says_so_and_exits_2(mosquitto):
    result = console(mosquitto, "request", "status", "--timeout", "1")
    assert result.returncode == 2
    assert "no response" in result.stderr and result.stdout == ""


def test_request_with_bad_json_arguments_is_refused_before_sending(mosquitto):
    with Subscriber(mosquitto, "bingo/#") as everything:
        result = console(mosquitto, "request", "manual_call", "{ball: B12}")
        assert result.returncode == 1 and "not JSON" in result.stderr
        assert everything.drain() == []


def test_follow_prints_each_call_once_in_order(mosquitto, appliance):
    follow = subprocess.Popen([sys.executable, "-m", "services.console_cli", "follow", "--count", "3",
                               "--mqtt", mosquitto.url, "--device-id", "hall-1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # follow reports the appliance's availability once it is subscribed.
        assert select.select([follow.stderr], [], [], 15)[0], "follow printed nothing"
        assert "hall-1 is online" in follow.stderr.readline()
        appliance.new_occasion()
        appliance.new_game({"name": "any_line", "picture": [[1] * 5] + [[0] * 5] * 4}, all_balls_in_blower=True)
        first = appliance.manual_call(12)
        appliance.manual_call(70)
        appliance.void(first["seq"], reason="dropped")
        out, err = follow.communicate(timeout=20)
    finally:
        follow.kill()
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("seq 1  game 1  #1  B12  console 1.000")
    assert lines[1].startswith("seq 2  game 1  #2  O70  console 1.000")
    assert lines[2].startswith("seq 3  game 1  #1  VOID B12 (seq 1)")
    assert follow.returncode == 0


def test_call_line():
    call = {"seq": 41, "game": 3, "index": 3, "ball": "N33", "letter": "N", "number": 33, "confidence": 0.9981,
            "source": "camera", "ts": "2026-12-02T19:41:07Z", "event_type": "called"}
    assert call_line(call) == "seq 41  game 3  #3  N33  camera 0.998  2026-12-02T19:41:07Z"
