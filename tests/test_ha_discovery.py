"""Home Assistant discovery on a real mosquitto: retained config, resend on HA restart, removal."""
from __future__ import annotations

import json
import threading

import paho.mqtt.client as mqtt
import pytest
from mqtt_broker import Subscriber

from services.ha_discovery import (
    NEW_GAME_REQUEST, STATUS_TOPIC, HomeAssistantDiscovery, discovery_message, removal_message,
)

CONFIG_TOPIC = "homeassistant/device/bingo_hall_1/config"


class Appliance:
    """Stands in for the MQTT link: a real paho client calling the hooks the link calls."""

    def __init__(self, broker, discovery: HomeAssistantDiscovery):
        self.discovery = discovery
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="ballreader-hall-1")
        self.client.on_connect = self._on_connect
        self.client.on_message = lambda c, u, msg: discovery.on_status(msg)
        self.online = threading.Event()
        self._online_mid = None
        self.client.on_publish = self._on_publish
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()
        # Wait until the broker holds what was published on connect: a subscriber that
        # comes after must get the retained copies, not live ones (the race CI once lost).
        assert self.online.wait(10)

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        client.subscribe(STATUS_TOPIC, qos=1)
        self.discovery.publish(client)
        # Published last on the same connection: once the broker acks it, it has the rest.
        self._online_mid = client.publish("bingo/hall-1/availability", "online", qos=1, retain=True).mid

    def _on_publish(self, client, userdata, mid, reason_code, properties):
        if mid == self._online_mid:
            self.online.set()

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


def test_retained_config_has_the_device_and_its_five_entities(mosquitto):
    app = Appliance(mosquitto, HomeAssistantDiscovery("bingo", "hall-1", "1.2.3"))
    try:
        # A Home Assistant that connects later still finds it: it is retained.
        with Subscriber(mosquitto, "homeassistant/#") as ha:
            msg = ha.wait_for(lambda m: m.topic == CONFIG_TOPIC)
    finally:
        app.close()
    assert msg.retain
    config = json.loads(msg.payload)
    assert config["dev"]["ids"] == ["bingo_hall_1"]
    assert config["dev"]["sw"] == config["o"]["sw"] == "1.2.3"
    assert config["o"]["name"] == "ballreader"
    assert config["availability_topic"] == "bingo/hall-1/availability"
    assert (config["payload_available"], config["payload_not_available"]) == ("online", "offline")
    cmps = config["cmps"]
    assert {c["p"] for c in cmps.values()} == {"sensor", "event", "button"}
    assert set(cmps) == {"last_call", "called_count", "call", "game_status", "new_game"}
    unique_ids = [c["unique_id"] for c in cmps.values()]
    assert len(set(unique_ids)) == len(unique_ids)
    # No component overrides the shared availability.
    assert not any("availability_topic" in c or "availability" in c for c in cmps.values())
    assert cmps["call"]["state_topic"] == "bingo/hall-1/call"
    assert cmps["call"]["event_types"] == ["called", "voided"]
    assert cmps["new_game"]["command_topic"] == "bingo/hall-1/request/new_game"
    assert json.loads(cmps["new_game"]["payload_press"]) == NEW_GAME_REQUEST
    for key in ("last_call", "called_count", "game_status"):
        assert "state_topic" not in cmps[key]  # they read the shared state topic
    assert config["state_topic"] == "bingo/hall-1/state"


def test_sent_again_when_home_assistant_comes_online(mosquitto):
    app = Appliance(mosquitto, HomeAssistantDiscovery("bingo", "hall-1", "1.2.3"))
    try:
        with Subscriber(mosquitto, CONFIG_TOPIC) as ha:
            ha.wait_for()
            seen = len(ha.messages)
            ha.client.publish(STATUS_TOPIC, "offline", qos=1)
            ha.client.publish(STATUS_TOPIC, "online", qos=1)
            again = ha.wait_for(after=seen)
            # The resend is a live message, not the retained copy a new subscriber gets.
            assert not again.retain
            assert json.loads(again.payload)["dev"]["ids"] == ["bingo_hall_1"]
            # Only "online" triggers it: exactly one more message arrived.
            assert len(ha.drain()) == seen + 1
    finally:
        app.close()


def test_disabled_removes_the_retained_config(mosquitto):
    first = Appliance(mosquitto, HomeAssistantDiscovery("bingo", "hall-1", "1.2.3"))
    with Subscriber(mosquitto, CONFIG_TOPIC) as ha:
        ha.wait_for(lambda m: m.payload)
    first.close()
    second = Appliance(mosquitto, HomeAssistantDiscovery("bingo", "hall-1", "1.2.3", enabled=False))
    try:
        with Subscriber(mosquitto, "bingo/hall-1/availability") as sub:
            sub.wait_for(lambda m: m.payload == b"online")
        # After the removal nothing is retained on the config topic any more.
        with Subscriber(mosquitto, CONFIG_TOPIC, "bingo/hall-1/availability") as late:
            got = late.drain()
        assert [m.topic for m in got] == ["bingo/hall-1/availability"]
    finally:
        second.close()
    assert removal_message("bingo", "hall-1") == (CONFIG_TOPIC, b"")


STATE_RUNNING = {
    "device_id": "hall-1", "occasion": {"id": 1, "started_at": "2026-12-02T19:00:00Z"},
    "game": {"number": 3, "status": "running", "pattern": {"name": "four_corners", "picture": [[1, 0, 0, 0, 1]] + [[0] * 5] * 3 + [[1, 0, 0, 0, 1]]},
             "prize": "£25", "kind": "regular", "called": ["B12", "O70"], "last_call": "O70", "count": 2,
             "remaining": 73, "cookie_jar": None},
    "awaiting_confirm": None, "faults": [], "seq": 2, "ts": "2026-12-02T19:05:00Z",
}
STATE_EMPTY = {**STATE_RUNNING, "game": None}


@pytest.mark.parametrize("state, expected", [
    (STATE_RUNNING, {"last_call": "O70", "called_count": "2", "game_status": "running"}),
    (STATE_EMPTY, {"last_call": "none", "called_count": "0", "game_status": "none"}),
])
def test_value_templates_read_the_state_payload(state, expected):
    # Home Assistant renders these with Jinja2; an error here is an entity stuck "unknown".
    jinja2 = pytest.importorskip("jinja2")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    _, config = discovery_message("bingo", "hall-1", "1.2.3")
    for key, want in expected.items():
        template = config["cmps"][key]["value_template"]
        assert env.from_string(template).render(value_json=state) == want
    options = config["cmps"]["game_status"]["options"]
    assert expected["game_status"] in options
    attrs = env.from_string(config["cmps"]["game_status"]["json_attributes_template"]).render(value_json=state)
    assert json.loads(attrs) == ({"number": 3, "pattern": "four_corners", "prize": "£25"} if state["game"] else {})


def test_attached_to_the_real_mqtt_link(mosquitto, tmp_path):
    from services.config import MqttConfig
    from services.engine import DrawEngine
    from services.mqtt_link import MqttLink
    from services.record import Record

    record = Record(tmp_path / "record.db")
    engine = DrawEngine(record)
    link = MqttLink(MqttConfig(url=mosquitto.url), "hall-1", record, engine.state,
                    lambda: {"active": []}, lambda name, raw: {"transaction": None, "status": "error", "error": "-"})
    HomeAssistantDiscovery("bingo", "hall-1", "1.2.3").attach(link)
    with Subscriber(mosquitto, CONFIG_TOPIC, "bingo/hall-1/availability") as ha:
        link.start()
        try:
            ha.wait_for(lambda m: m.topic.endswith("/availability") and m.payload == b"online")
            topics = [m.topic for m in ha.messages]
            # The device is described before it says it is online.
            assert topics.index(CONFIG_TOPIC) < topics.index("bingo/hall-1/availability")
            seen = len(ha.messages)
            ha.client.publish(STATUS_TOPIC, "online", qos=1)
            assert ha.wait_for(lambda m: m.topic == CONFIG_TOPIC, after=seen).payload
        finally:
            link.stop()
            record.close()
