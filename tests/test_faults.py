"""Faults the appliance must survive, each with real processes (issue 7, item 4)."""
import json
import os
import signal
import socket
import sqlite3
import subprocess
import time

import pytest

from appliance_proc import log_of, start_appliance
from mqtt_broker import Subscriber, free_port, start_mosquitto, unique_calls
from services.record import Record
from tcp_proxy import CuttableProxy

T = "bingo/t1"


def calls_of(messages):
    return unique_calls(messages, f"{T}/call")


def drawn_of(messages):
    return [json.loads(m.payload)["ball"] for m in messages if m.topic == f"{T}/sim/drawn"]


def faults(sub, after=0):
    """Codes in the newest `fault` message received so far."""
    msgs = [m for m in sub.messages[after:] if m.topic == f"{T}/fault"]
    return {f["code"] for f in json.loads(msgs[-1].payload)["active"]} if msgs else None


def wait_fault(sub, code, present=True, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sub.drain(quiet_s=0.2)
        codes = faults(sub)
        if codes is not None and (code in codes) == present:
            return
    raise AssertionError(f"fault {code} {'not raised' if present else 'not cleared'}; last: {faults(sub)}")


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0, log_of(proc)


def test_broker_down_at_start(tmp_path):
    port = free_port()
    # Register a board's persistent session, then take the broker away before the appliance starts.
    broker = start_mosquitto(tmp_path, port=port, persistence=True)
    Subscriber(broker, f"{T}/#", client_id="board", clean_session=False).close()
    broker.stop()
    proc = start_appliance(tmp_path, broker, "--sim", "--balls", "4", "--seed", "3")
    time.sleep(4)  # balls are drawn and called with no broker at all
    broker.start()
    try:
        with Subscriber(broker, f"{T}/#", client_id="board", clean_session=False, resubscribe=False) as sub:
            assert proc.wait(timeout=120) == 0, log_of(proc)
            messages = sub.drain(quiet_s=1.0)
        calls = calls_of(messages)
        assert [c["seq"] for c in calls] == [1, 2, 3, 4]
        assert [c["ball"] for c in calls] == [c["ball"] for c in calls_of(messages)]
        assert Record(tmp_path / "record.db").verify() == []
    finally:
        broker.kill()


def test_network_cut_gives_offline_then_recovers(tmp_path, mosquitto):
    proxy = CuttableProxy(mosquitto.port)
    with Subscriber(mosquitto, f"{T}/#") as board:
        proc = start_appliance(tmp_path, proxy, "--sim", "--seed", "5", config={"mqtt": {"keepalive": 5}})
        try:
            board.wait_for(lambda m: m.topic == f"{T}/call", timeout=60)
            cut_at = time.monotonic()
            proxy.cut()
            board.wait_for(lambda m: m.topic == f"{T}/availability" and m.payload == b"offline",
                           timeout=30)  # the broker's Last Will, not a clean stop
            time.sleep(max(0.0, 30 - (time.monotonic() - cut_at)))  # the cut lasts 30 s
            proxy.restore()
            board.wait_for(lambda m: m.topic == f"{T}/availability" and m.payload == b"online",
                           timeout=30, after=len(board.messages))
            board.wait_for(lambda m: m.topic == f"{T}/call", timeout=60, after=len(board.messages))
            stop(proc)
            messages = board.drain(quiet_s=1.0)
        finally:
            proxy.close()
            if proc.poll() is None:
                proc.kill()
    record_calls = [e.data for e in Record(tmp_path / "record.db").events(("call",))]
    calls = calls_of(messages)
    assert [c["seq"] for c in calls] == [c["seq"] for c in record_calls]  # all delivered, in order
    assert [c["ball"] for c in calls] == drawn_of(messages)[:len(calls)]
    with Subscriber(mosquitto, f"{T}/state") as late_board:  # a board that comes back catches up
        state = json.loads(late_board.wait_for(timeout=5).payload)
    assert state["game"]["called"] == [c["ball"] for c in calls]


def watchdog_socket(tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = tmp_path / "notify.sock"
    sock.bind(str(path))
    sock.settimeout(0.1)
    return sock, path


def pings(sock, seconds):
    count, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            count += sock.recv(256).count(b"WATCHDOG=1")
        except socket.timeout:
            pass
    return count


def test_camera_stops_delivering(tmp_path, mosquitto, monkeypatch):
    sock, path = watchdog_socket(tmp_path)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    proc = start_appliance(tmp_path, mosquitto, "--sim", "--seed", "2",
                           config={"camera": {"frame_timeout_s": 1.0}, "sim": {"gap_s": 3}})
    try:
        with Subscriber(mosquitto, f"{T}/#") as sub:
            sub.wait_for(lambda m: m.topic == f"{T}/availability" and m.payload == b"online", timeout=30)
            assert pings(sock, 2) > 0  # frames are processed, so the watchdog is fed
            sub.client.publish(f"{T}/sim/control", json.dumps({"camera": "stall"}))
            wait_fault(sub, "camera")
            pings(sock, 1.5)  # let pings already in flight drain
            assert pings(sock, 3) == 0  # stuck camera: the watchdog starves, systemd would restart us
            sub.client.publish(f"{T}/sim/control", json.dumps({"camera": "resume"}))
            wait_fault(sub, "camera", present=False)
            assert pings(sock, 2) > 0
            log = log_of(proc)
        stop(proc)
    finally:
        sock.close()
        if proc.poll() is None:
            proc.kill()
    events = [e.kind for e in Record(tmp_path / "record.db").events(("fault_raised", "fault_cleared"))]
    assert "fault_raised" in events and "fault_cleared" in events, log


def test_sensor_stuck_gives_a_fault_and_no_phantom_balls(tmp_path, mosquitto):
    proc = start_appliance(tmp_path, mosquitto, "--sim", "--seed", "4",
                           config={"sensor": {"stuck_s": 2.0}, "sim": {"gap_s": 0.5}})
    try:
        with Subscriber(mosquitto, f"{T}/#") as sub:
            sub.wait_for(lambda m: m.topic == f"{T}/call", timeout=60)
            sub.client.publish(f"{T}/sim/control", json.dumps({"sensor": "stuck"}))
            wait_fault(sub, "sensor_stuck")
            during = len(calls_of(sub.drain()))
            time.sleep(4)
            assert len(calls_of(sub.drain())) == during  # nothing called while the sensor is stuck
            sub.client.publish(f"{T}/sim/control", json.dumps({"sensor": "release"}))
            wait_fault(sub, "sensor_stuck", present=False)
            sub.wait_for(lambda m: m.topic == f"{T}/call", timeout=60, after=len(sub.messages))
            messages = sub.drain()
        stop(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    calls, drawn = calls_of(messages), drawn_of(messages)
    assert [c["ball"] for c in calls] == drawn[:len(calls)]  # every call is a ball really drawn


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tiny filesystem needs root (CI runs as root)")
def test_disk_full(tmp_path, mosquitto):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(disk)], check=True)
    try:
        record = disk / "record.db"
        proc = start_appliance(tmp_path, mosquitto, "--sim", "--balls", "2", "--seed", "6", record=record,
                               config={"record": {"min_free_mb": 2}})
        assert proc.wait(timeout=120) == 0, log_of(proc)
        proc = start_appliance(tmp_path, mosquitto, "--sim", "--seed", "6", record=record,
                               config={"record": {"min_free_mb": 2}, "sim": {"gap_s": 30}})
        try:
            with Subscriber(mosquitto, f"{T}/#") as sub:
                sub.wait_for(lambda m: m.topic == f"{T}/availability" and m.payload == b"online", timeout=30)

                def ask(command, payload):
                    seen = len(sub.messages)
                    sub.client.publish(f"{T}/request/{command}", json.dumps(payload), qos=1)
                    msg = sub.wait_for(lambda m: m.topic == f"{T}/response/{command}", after=seen)
                    return json.loads(msg.payload)

                assert ask("end_game", {})["status"] == "ok"
                subprocess.run(["dd", "if=/dev/zero", f"of={disk}/filler", "bs=64k"], capture_output=True)
                answer = ask("new_game", {"all_balls_in_blower": True})
                assert answer["status"] == "error" and "disk" in answer["error"]
                (disk / "filler").unlink()
                subprocess.run(["dd", "if=/dev/zero", f"of={disk}/filler", "bs=1M", "count=5"],
                               capture_output=True)
                answer = ask("new_game", {"all_balls_in_blower": True})
                assert answer["status"] == "error" and "disk nearly full" in answer["error"]
                wait_fault(sub, "disk_full")
                (disk / "filler").unlink()
                assert ask("new_game", {"all_balls_in_blower": True})["status"] == "ok"
            stop(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert Record(record).verify() == []
    finally:
        subprocess.run(["umount", "-l", str(disk)])


def test_edited_record_locks_calls_until_cleared(tmp_path, mosquitto):
    proc = start_appliance(tmp_path, mosquitto, "--sim", "--balls", "2", "--seed", "8")
    assert proc.wait(timeout=120) == 0, log_of(proc)
    db = sqlite3.connect(tmp_path / "record.db")  # as an examiner would see someone do with sqlite3
    db.execute("UPDATE events SET data = replace(data, '\"index\":1', '\"index\":9') WHERE kind = 'call'")
    db.commit()
    db.close()
    for boot in range(3):
        proc = start_appliance(tmp_path, mosquitto, "--sim", "--seed", "8", config={"sim": {"gap_s": 0.5}})
        try:
            with Subscriber(mosquitto, f"{T}/#") as sub:
                if boot < 2:  # the fault survives a reboot
                    wait_fault(sub, "record_integrity")
                    time.sleep(4)
                    assert calls_of(sub.drain()) == []  # reads go on, but nothing is called
                if boot == 1:  # a technician looks at it and clears it
                    sub.client.publish(f"{T}/request/clear_fault",
                                       json.dumps({"code": "record_integrity", "by": "technician"}), qos=1)
                    answer = sub.wait_for(lambda m: m.topic == f"{T}/response/clear_fault")
                    assert json.loads(answer.payload)["status"] == "ok"
                    wait_fault(sub, "record_integrity", present=False)
                if boot == 2:  # cleared stays cleared across a reboot, and calls go on
                    sub.wait_for(lambda m: m.topic == f"{T}/call", timeout=60)
                    assert "record_integrity" not in faults(sub)
            stop(proc)
        finally:
            if proc.poll() is None:
                proc.kill()


def test_unsynchronised_clock_is_marked(tmp_path, mosquitto, monkeypatch):
    for synced, balls, seed in (("0", "2", "9"), ("1", "1", "10")):  # after boot, then once NTP has set it
        monkeypatch.setenv("BALLREADER_CLOCK_SYNCED", synced)
        proc = start_appliance(tmp_path, mosquitto, "--sim", "--balls", balls, "--seed", seed)
        assert proc.wait(timeout=120) == 0, log_of(proc)
    events = list(Record(tmp_path / "record.db").events())
    calls = [e for e in events if e.kind == "call"]
    assert [e.clock_ok for e in calls] == [False, False, True]
    assert [e.data["seq"] for e in calls] == [1, 2, 3]  # seq does not depend on the clock
