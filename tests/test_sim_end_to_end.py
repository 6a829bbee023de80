"""The whole appliance, simulated at the hardware edge, on a real mosquitto."""
import json
import subprocess

from appliance_proc import log_of, start_appliance
from mqtt_broker import Subscriber, start_mosquitto, unique_calls

RUN_TIMEOUT_S = 240


def payloads(messages, name):
    return [json.loads(m.payload) for m in messages if m.topic == f"bingo/t1/{name}"]


def retained(broker, topic):
    with Subscriber(broker, topic) as sub:
        return sub.wait_for(lambda m: m.topic == topic, timeout=5).payload.decode()


def finish(proc):
    try:
        assert proc.wait(timeout=RUN_TIMEOUT_S) == 0, log_of(proc)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("appliance did not finish:\n" + log_of(proc))


def check_run(messages, broker, balls):
    drawn = [d["ball"] for d in payloads(messages, "sim/drawn")]
    calls = unique_calls(messages, "bingo/t1/call")
    assert len(drawn) == balls
    assert [c["ball"] for c in calls] == drawn  # every call is the true ball, in order
    seqs = [c["seq"] for c in calls]
    assert seqs == list(range(seqs[0], seqs[0] + balls))  # strictly increasing, no gap, no repeat
    assert [c["index"] for c in calls] == list(range(1, balls + 1))
    state = json.loads(retained(broker, "bingo/t1/state"))
    assert state["game"]["called"] == drawn and state["game"]["count"] == balls
    assert state["game"]["remaining"] == 75 - balls
    return calls


def test_twenty_balls_are_called_in_order(tmp_path, mosquitto):
    with Subscriber(mosquitto, "bingo/t1/#") as sub:
        proc = start_appliance(tmp_path, mosquitto, "--sim", "--balls", "20", "--seed", "7")
        online = sub.wait_for(lambda m: m.topic == "bingo/t1/availability", timeout=30)
        assert online.payload == b"online" and online.retain is False
        finish(proc)
        messages = sub.drain()
    calls = check_run(messages, mosquitto, 20)
    assert all(c["source"] in ("camera", "console") and c["event_type"] == "called" for c in calls)
    reads = payloads(messages, "read")
    assert all("needs_confirm" in r for r in reads) and len(reads) >= 20
    # online came after the retained state, and offline is what stays retained after the run
    topics = [m.topic for m in messages]
    assert topics.index("bingo/t1/state") < topics.index("bingo/t1/availability")
    assert retained(mosquitto, "bingo/t1/availability") == "offline"


def test_seq_continues_across_runs(tmp_path, mosquitto):
    record = tmp_path / "record.db"
    with Subscriber(mosquitto, "bingo/t1/call") as sub:
        for seed in (1, 2):
            finish(start_appliance(tmp_path, mosquitto, "--sim", "--balls", "3", "--seed", str(seed),
                                   record=record))
        calls = [json.loads(m.payload) for m in sub.drain()]
    assert [c["seq"] for c in calls] == [1, 2, 3, 4, 5, 6]
    assert len({c["ball"] for c in calls}) == 6  # the second run continues the same game


def test_calls_wait_on_disk_while_the_broker_is_away(tmp_path):
    broker = start_mosquitto(tmp_path, persistence=True)
    try:
        # A board with a persistent session: it gets what was published while it was away.
        with Subscriber(broker, "bingo/t1/#", client_id="board", clean_session=False,
                        resubscribe=False) as sub:
            proc = start_appliance(tmp_path, broker, "--sim", "--balls", "20", "--seed", "7")
            sub.wait_for(lambda m: m.topic == "bingo/t1/call" and json.loads(m.payload)["index"] == 8,
                         timeout=120)
            broker.stop()
            import time
            time.sleep(5)
            broker.start()
            finish(proc)
            messages = sub.drain(quiet_s=1.0)
        check_run(messages, broker, 20)
    finally:
        broker.kill()


def test_misspelt_config_key_stops_the_start(tmp_path, mosquitto):
    proc = start_appliance(tmp_path, mosquitto, "--sim", config={"sensor": {"debounce_msec": 30}})
    assert proc.wait(timeout=30) == 2
    lines = log_of(proc).strip().splitlines()
    assert len(lines) == 1 and "sensor.debounce_msec" in lines[0] and "unknown key" in lines[0]
