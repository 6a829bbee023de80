"""MqttLink against a real mosquitto behind a link that can be cut: the retained `state` the
broker keeps is the newest one, whatever paho still held when the link went down."""
from __future__ import annotations

import json
import threading
import time

import pytest
from mqtt_broker import Subscriber
from tcp_proxy import CuttableProxy

from services.config import MqttConfig
from services.mqtt_link import MqttLink
from services.record import Record

T = "bingo/hall-1"


class Counter:
    """A state that changes on every change() call, like the engine's after each call."""

    def __init__(self) -> None:
        self.n = 0

    def change(self) -> None:
        self.n += 1

    def state(self) -> dict:
        return {"n": self.n}


@pytest.fixture
def cut_link(mosquitto, tmp_path):
    proxy = CuttableProxy(mosquitto.port)
    record = Record(tmp_path / "record.db")
    counter = Counter()
    link = MqttLink(MqttConfig(url=proxy.url), "hall-1", record, counter.state,
                    lambda: {"active": []}, lambda name, raw: {})
    link.start()
    assert link.connected.wait(10)
    yield proxy, link, counter
    link.stop(timeout=1)
    proxy.close()
    record.close()


def retained_state(broker) -> dict:
    with Subscriber(broker, f"{T}/state") as late_board:
        return json.loads(late_board.wait_for(timeout=5).payload)


def settle(broker, counter, timeout=10) -> dict:
    """The retained state once it says the counter's present value (or the last seen)."""
    deadline = time.monotonic() + timeout
    state = retained_state(broker)
    while state["n"] != counter.n and time.monotonic() < deadline:
        time.sleep(0.2)
        state = retained_state(broker)
    return state


def test_state_published_while_the_link_is_dead_is_not_overtaken_by_older_ones(mosquitto, cut_link):
    proxy, link, counter = cut_link
    proxy.cut()  # paho does not know yet: what it sends now goes into a dead socket
    for _ in range(45):  # more than paho's window of 20 unacknowledged messages
        counter.change()
        link.publish_state()
    link.connected.clear()  # as _on_disconnect would; restore() makes paho see the break at once
    proxy.restore()
    assert link.connected.wait(10)
    counter.change()  # the next call after the reconnect
    link.publish_state()
    time.sleep(1.0)  # paho resends what it held; whatever it sends last stays retained
    assert settle(mosquitto, counter)["n"] == counter.n == 46


def test_state_changed_while_offline_is_published_on_reconnect(mosquitto, cut_link):
    proxy, link, counter = cut_link
    proxy.cut()
    proxy.restore()  # the socket closes: paho sees the link down and starts reconnecting
    counter.change()
    link.publish_state()
    assert link.connected.wait(10)
    assert settle(mosquitto, counter)["n"] == counter.n == 1


def test_a_clean_stop_waits_for_the_newest_state(mosquitto, cut_link):
    proxy, link, counter = cut_link
    proxy.cut()
    for _ in range(2):  # the first goes into the dead link, the second waits for its acknowledgement
        counter.change()
        link.publish_state()
    threading.Timer(0.5, proxy.restore).start()  # the link comes back while the appliance stops
    link.stop(timeout=10)
    assert retained_state(mosquitto)["n"] == counter.n == 2
