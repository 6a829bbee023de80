"""Bridging the appliance's mosquitto to a central broker, with the example configs.

Two real mosquittos: the appliance's (anonymous, local) bridging to a central one with
passwords and the example ACL. The bridge config, central config and ACL are the files in
docs/examples/bridge/, with only addresses and paths changed for the test.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from mqtt_broker import Subscriber, start_mosquitto

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples" / "bridge"
USERS = {"appliance-hall-1": "change-me", "board": "board-secret", "console": "console-secret",
         "homeassistant": "ha-secret"}
CALLS = 20
CUT_S = 10


def start_central(tmp_path: Path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    for i, (user, password) in enumerate(USERS.items()):
        subprocess.run(["mosquitto_passwd", "-b", *(["-c"] if i == 0 else []), str(tmp_path / "passwd"),
                        user, password], check=True, capture_output=True)
    (tmp_path / "central.acl").write_text((EXAMPLES / "central.acl").read_text())
    conf = (EXAMPLES / "central.conf").read_text().replace("/etc/mosquitto/", f"{tmp_path}/")
    # The helper writes the listener (a free port) and the persistence folder.
    conf = "\n".join(line for line in conf.splitlines()
                     if not line.startswith(("listener ", "persistence_location ")))
    return start_mosquitto(tmp_path, extra_conf=conf, persistence=True)


def start_appliance_broker(tmp_path: Path, central_port: int):
    bridge = (EXAMPLES / "appliance-bridge.conf").read_text()
    bridge = bridge.replace("central.example.net:1883", f"127.0.0.1:{central_port}")
    # Retry every second rather than backing off to 10 s: keeps the test short.
    bridge += "\nrestart_timeout 1\n"
    return start_mosquitto(tmp_path, extra_conf=bridge)


def connect(broker, client_id: str, **kw) -> mqtt.Client:
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, **kw)
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    return client


def publish_call(client: mqtt.Client, seq: int) -> None:
    payload = {"seq": seq, "game": 1, "index": seq, "ball": f"B{seq}" if seq <= 15 else f"I{seq}",
               "event_type": "called"}
    client.publish("bingo/hall-1/call", json.dumps(payload), qos=1).wait_for_publish(5)


def seq_of(msg) -> int:
    return json.loads(msg.payload)["seq"]


def test_board_on_central_gets_every_call_in_order_across_a_10s_cut(tmp_path):
    central = start_central(tmp_path / "central")
    local = start_appliance_broker(tmp_path / "local", central.port)
    appliance = connect(local, "ballreader-hall-1")
    try:
        # The board logs in on the central broker with a persistent session (fixed client id,
        # clean_session False), as docs/mqtt.md tells boards to. It subscribes once only, so
        # after the cut it gets calls only if the central broker kept its session.
        board = Subscriber(central, "bingo/hall-1/call", client_id="board-bar", clean_session=False,
                           username="board", password=USERS["board"], resubscribe=False)
        bridge_up = Subscriber(central, "bingo/hall-1/bridge", username="console", password=USERS["console"])
        bridge_up.wait_for(lambda m: m.payload == b"1")
        bridge_up.close()

        for seq in range(1, CALLS // 2 + 1):
            publish_call(appliance, seq)
        board.wait_for(lambda m: seq_of(m) == CALLS // 2)

        # Cut: the central broker goes away (a clean stop, so it keeps its sessions on disk).
        central.stop()
        cut_at = time.monotonic()
        for seq in range(CALLS // 2 + 1, CALLS * 3 // 4 + 1):
            publish_call(appliance, seq)  # the local broker takes them and queues them for the bridge
        appliance.publish("bingo/hall-1/state", json.dumps({"seq": CALLS * 3 // 4}), qos=1,
                          retain=True).wait_for_publish(5)
        time.sleep(max(0.0, CUT_S - (time.monotonic() - cut_at)))
        central.start()

        for seq in range(CALLS * 3 // 4 + 1, CALLS + 1):
            publish_call(appliance, seq)
        board.wait_for(lambda m: seq_of(m) == CALLS, timeout=30)
        got = [seq_of(m) for m in board.drain()]
        board.close()

        # QoS 1 may repeat a call; dropping repeats by seq (as boards do) must leave 1..20 in order.
        first_seen = []
        for seq in got:
            if seq not in first_seen:
                first_seen.append(seq)
        assert first_seen == list(range(1, CALLS + 1)), got

        # The retained state published during the cut reached the central broker too.
        with Subscriber(central, "bingo/hall-1/state", username="board", password=USERS["board"]) as late:
            state = late.wait_for()
        assert state.retain and json.loads(state.payload) == {"seq": CALLS * 3 // 4}
    finally:
        appliance.disconnect()
        appliance.loop_stop()
        local.kill()
        central.kill()


def publish_v5(broker, user: str, topic: str) -> int:
    """Publish QoS 1 as `user` with MQTT 5 and return the PUBACK reason code."""
    acks = []
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    client.username_pw_set(user, USERS[user])
    client.on_publish = lambda c, u, mid, reason_code, props: acks.append(reason_code.value)
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    try:
        client.publish(topic, b"{}", qos=1).wait_for_publish(5)
        deadline = time.monotonic() + 5
        while not acks and time.monotonic() < deadline:
            time.sleep(0.01)
        return acks[0]
    finally:
        client.disconnect()
        client.loop_stop()


NOT_AUTHORIZED = 135
ACCEPTED = (0, 16)  # 16: accepted, no subscriber matched


@pytest.mark.parametrize("user, topic, allowed", [
    ("board", "bingo/hall-1/request/new_game", False),
    ("board", "bingo/hall-1/call", False),
    ("console", "bingo/hall-1/request/new_game", True),
    ("console", "bingo/hall-1/call", False),
    ("appliance-hall-1", "bingo/hall-1/call", True),
    ("appliance-hall-1", "bingo/hall-2/call", False),
    ("appliance-hall-1", "bingo/hall-1/request/void", False),
    ("appliance-hall-1", "homeassistant/device/bingo_hall_1/config", True),
    ("board", "homeassistant/device/bingo_hall_1/config", False),
    ("homeassistant", "bingo/hall-1/request/new_game", True),
    ("homeassistant", "bingo/hall-1/request/void", False),
    ("homeassistant", "homeassistant/status", True),
])
def test_acl_boards_only_read_and_only_consoles_send_requests(tmp_path, user, topic, allowed):
    central = start_central(tmp_path)
    try:
        code = publish_v5(central, user, topic)
    finally:
        central.kill()
    assert (code in ACCEPTED) if allowed else (code == NOT_AUTHORIZED), code


def test_central_refuses_anonymous_and_wrong_passwords(tmp_path):
    central = start_central(tmp_path)
    results = {}
    try:
        for name, creds in {"anonymous": None, "wrong": ("board", "guess"), "right": ("board", "board-secret")}.items():
            client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
            if creds:
                client.username_pw_set(*creds)
            client.on_connect = lambda c, u, f, rc, p, name=name: results.setdefault(name, rc.is_failure)
            client.connect("127.0.0.1", central.port)
            client.loop_start()
            deadline = time.monotonic() + 5
            while name not in results and time.monotonic() < deadline:
                time.sleep(0.01)
            client.disconnect()
            client.loop_stop()
    finally:
        central.kill()
    assert results == {"anonymous": True, "wrong": True, "right": False}


def make_certificates(folder: Path) -> dict[str, Path]:
    """A throw-away CA and a server certificate for 127.0.0.1, made with the openssl tool."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make test certificates")
    folder.mkdir(parents=True, exist_ok=True)
    files = {name: folder / name for name in ("ca.crt", "ca.key", "server.key", "server.csr", "server.crt")}
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")

    def run(*args):
        subprocess.run([openssl, *map(str, args)], check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=ballreader test CA",
        "-keyout", files["ca.key"], "-out", files["ca.crt"])
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", files["server.key"], "-out", files["server.csr"])
    run("x509", "-req", "-in", files["server.csr"], "-CA", files["ca.crt"], "-CAkey", files["ca.key"],
        "-CAcreateserial", "-days", "1", "-extfile", folder / "san.ext", "-out", files["server.crt"])
    return files


def test_the_tls_bridge_example_carries_calls_to_a_tls_central_broker(tmp_path):
    certs = make_certificates(tmp_path / "certs")
    # The central broker's TLS lines are the commented ones in central.conf, switched on for
    # the helper's listener.
    central_example = (EXAMPLES / "central.conf").read_text()
    tls_lines = [line.lstrip("#") for line in central_example.splitlines()
                 if line.startswith(("#certfile", "#keyfile", "#cafile", "#require_certificate"))]
    assert len(tls_lines) == 4
    tls_conf = "\n".join(tls_lines).replace("/etc/mosquitto/certs/central.crt", str(certs["server.crt"])) \
        .replace("/etc/mosquitto/certs/central.key", str(certs["server.key"])) \
        .replace("/etc/mosquitto/ca_certificates/central-ca.crt", str(certs["ca.crt"]))
    central_dir = tmp_path / "central"
    central_dir.mkdir()
    for i, (user, password) in enumerate(USERS.items()):
        subprocess.run(["mosquitto_passwd", "-b", *(["-c"] if i == 0 else []), str(central_dir / "passwd"),
                        user, password], check=True, capture_output=True)
    auth = f"allow_anonymous false\npassword_file {central_dir}/passwd\n"
    central = start_mosquitto(central_dir, extra_conf=tls_conf + "\n" + auth)
    bridge = (EXAMPLES / "appliance-bridge-tls.conf").read_text() \
        .replace("central.example.net:8883", f"127.0.0.1:{central.port}") \
        .replace("/etc/mosquitto/ca_certificates/central-ca.crt", str(certs["ca.crt"]))
    local = start_mosquitto(tmp_path / "local", extra_conf=bridge + "\nrestart_timeout 1\n")
    appliance = connect(local, "ballreader-hall-1")
    try:
        with Subscriber(central, "bingo/hall-1/call", "bingo/hall-1/bridge", username="board",
                        password=USERS["board"], tls_ca=certs["ca.crt"]) as board:
            board.wait_for(lambda m: m.topic.endswith("/bridge") and m.payload == b"1")
            publish_call(appliance, 1)
            assert seq_of(board.wait_for(lambda m: m.topic.endswith("/call"))) == 1
    finally:
        appliance.disconnect()
        appliance.loop_stop()
        local.kill()
        central.kill()


def test_home_assistant_on_central_gets_the_discovery_and_its_status_reaches_the_appliance(tmp_path):
    from services.ha_discovery import HomeAssistantDiscovery

    central = start_central(tmp_path / "central")
    local = start_appliance_broker(tmp_path / "local", central.port)
    discovery = HomeAssistantDiscovery("bingo", "hall-1", "1.0")
    try:
        with Subscriber(central, "bingo/hall-1/bridge", username="console", password=USERS["console"]) as up:
            up.wait_for(lambda m: m.payload == b"1")
        with Subscriber(local, "homeassistant/status") as appliance:
            discovery.publish(appliance.client)
            with Subscriber(central, "homeassistant/device/#", username="homeassistant",
                            password=USERS["homeassistant"]) as ha:
                config = json.loads(ha.wait_for().payload)
                assert config["dev"]["ids"] == ["bingo_hall_1"]
                ha.client.publish("homeassistant/status", "online", qos=1)
                assert appliance.wait_for().payload == b"online"
    finally:
        local.kill()
        central.kill()
