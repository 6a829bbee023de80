"""The appliance on MQTT (paho-mqtt 2.x).

On every (re)connect: retained `state` and `fault` first, then `availability: online`, then
the calls still waiting in the record's outbox, in seq order. Each retained topic has one
message in flight at a time and sends its newest value once that one is acknowledged
(`LatestRetained`), so an older state held by paho over a reconnect never stays retained. A call is marked published only
when the broker acknowledges it (QoS 1 PUBACK), so a call made while the broker is away, or
before a power cut, goes out later with its original seq. `availability: offline` is the Last
Will and is also sent on a clean stop.
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import paho.mqtt.client as mqtt

from services.config import MqttConfig
from services.record import Record

log = logging.getLogger(__name__)


def dumps(payload: dict[str, Any]) -> str:
    return json.dumps(payload, separators=(",", ":"))


class LatestRetained:
    """A retained QoS 1 topic whose newest value is the one the broker keeps.

    paho holds unacknowledged QoS 1 messages over a reconnect and resends them after
    on_connect, and a message published while its window of 20 has room goes out ahead of
    older ones queued behind that window: handing paho every change could leave an older
    value retained. So one message is in flight at a time; changes meanwhile only mark the
    topic, and `send()` (called again on every acknowledgement poll) publishes the value of
    that moment. Nothing is handed over while the link is down: on_connect sends afresh.
    """

    def __init__(self, client: mqtt.Client, topic: str, value: Callable[[], str],
                 only_changes: bool = False) -> None:
        self.client, self.topic, self.value, self.only_changes = client, topic, value, only_changes
        self._lock = threading.Lock()
        self._in_flight: mqtt.MQTTMessageInfo | None = None
        self._due = False
        self._last: str | None = None  # the value last handed over

    def changed(self, force: bool = False) -> None:
        with self._lock:
            self._due = True
            if force:
                self._last = None
            self._send()

    def send(self) -> None:
        with self._lock:
            self._send()

    def settled(self) -> bool:
        """True when the broker has acknowledged the newest value handed over and no change waits."""
        with self._lock:
            return not self._due and (self._in_flight is None or self._in_flight.is_published())

    def _send(self) -> None:
        if not self._due or not self.client.is_connected():
            return
        if self._in_flight is not None and not self._in_flight.is_published():
            return
        self._due = False
        value = self.value()
        if self.only_changes and value == self._last:
            return
        self._last = value
        self._in_flight = self.client.publish(self.topic, value, qos=1, retain=True)


class MqttLink:
    def __init__(self, cfg: MqttConfig, device_id: str, record: Record,
                 state: Callable[[], dict[str, Any]],
                 faults: Callable[[], dict[str, Any]],
                 on_request: Callable[[str, bytes], dict[str, Any]]) -> None:
        self.cfg, self.device_id, self.record = cfg, device_id, record
        self._state, self._faults, self._on_request = state, faults, on_request
        self.base = f"{cfg.prefix}/{device_id}"
        self.connected = threading.Event()
        self.on_connected: list[Callable[[mqtt.Client], None]] = []  # e.g. Home Assistant discovery
        self.subscriptions: dict[str, Callable[[mqtt.MQTTMessage], None]] = {}
        self._flush_lock = threading.Lock()  # one flusher at a time keeps calls in seq order
        self._pending: list[tuple[int, mqtt.MQTTMessageInfo]] = []  # handed to paho, not yet acknowledged
        self._handed: set[int] = set()  # seqs given to paho in this process (paho resends its own)
        self._stopping = threading.Event()
        self._requests = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mqtt-request")

        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"ballreader-{device_id}",
                             protocol=mqtt.MQTTv311, clean_session=True)
        if cfg.username:
            client.username_pw_set(cfg.username, cfg.password())
        client.will_set(self.topic("availability"), "offline", qos=1, retain=True)
        client.reconnect_delay_set(min_delay=0.2, max_delay=2)
        client.max_queued_messages_set(0)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        self.client = client
        self._retained = [LatestRetained(client, self.topic("state"), lambda: dumps(self._state())),
                          LatestRetained(client, self.topic("fault"), lambda: dumps(self._faults()),
                                         only_changes=True)]

    def topic(self, name: str) -> str:
        return f"{self.base}/{name}"

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        # connect_async + loop_start: a broker that is down at start is retried, never fatal.
        self.client.connect_async(self.cfg.host, self.cfg.port, keepalive=self.cfg.keepalive)
        self.client.loop_start()
        threading.Thread(target=self._watch_acks, name="mqtt-acks", daemon=True).start()

    def stop(self, timeout: float = 5.0) -> None:
        """Clean stop: wait briefly for outstanding calls and the newest state, then say
        offline and disconnect."""
        self._requests.shutdown(wait=True, cancel_futures=False)
        self.wait_published(timeout)  # the broker may come back meanwhile; what is left stays on disk
        if self.connected.is_set():
            info = self.client.publish(self.topic("availability"), "offline", qos=1, retain=True)
            try:
                info.wait_for_publish(timeout)
            except (RuntimeError, ValueError):
                pass
        self.client.disconnect()
        self.client.loop_stop()
        self._stopping.set()

    def wait_published(self, timeout: float) -> bool:
        """True once every call in the record, and the newest retained state and fault list,
        have been acknowledged by the broker."""
        done = threading.Event()
        deadline = threading.Timer(timeout, done.set)
        deadline.start()
        try:
            while not done.is_set():
                if not self.record.unpublished() and all(r.settled() for r in self._retained):
                    return True
                done.wait(0.05)
            return False
        finally:
            deadline.cancel()

    # -- paho callbacks --------------------------------------------------------------------
    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            log.warning("MQTT connection refused: %s", reason_code)
            return
        log.info("MQTT connected to %s:%s", self.cfg.host, self.cfg.port)
        client.subscribe(self.topic("request/+"), qos=1)
        for topic in self.subscriptions:
            client.subscribe(topic, qos=1)
        self.publish_state(force=True)
        for hook in self.on_connected:
            hook(client)
        client.publish(self.topic("availability"), "online", qos=1, retain=True)
        self.connected.set()
        self.flush_calls()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self.connected.clear()
        log.warning("MQTT disconnected: %s", reason_code)

    def _watch_acks(self) -> None:
        """Mark calls published once the broker has acknowledged them, and send the next.

        Polled rather than done in paho's on_publish: that callback runs under paho's own
        lock, and taking ours there deadlocks against a thread that is publishing.
        """
        while not self._stopping.wait(0.02):
            for retained in self._retained:
                retained.send()
            with self._flush_lock:
                done = [(seq, info) for seq, info in self._pending if info.is_published()]
                self._pending = [p for p in self._pending if not p[1].is_published()]
            for seq, _ in done:
                self.record.mark_published(seq)
            if done or not self._pending:
                self.flush_calls()

    def _on_message(self, client, userdata, msg: mqtt.MQTTMessage) -> None:
        prefix = self.topic("request/")
        if msg.topic.startswith(prefix):
            command = msg.topic[len(prefix):]
            self._requests.submit(self._answer, command, msg.payload)
            return
        for topic, handler in self.subscriptions.items():
            if mqtt.topic_matches_sub(topic, msg.topic):
                handler(msg)

    def _answer(self, command: str, payload: bytes) -> None:
        try:
            response = self._on_request(command, payload)
        except Exception as e:  # a bug in a handler must answer, not kill the request thread
            log.exception("request %s failed", command)
            response = {"transaction": None, "status": "error", "error": f"internal error: {e}"}
        self.client.publish(self.topic(f"response/{command}"), dumps(response), qos=1)

    # -- publishing ------------------------------------------------------------------------
    def publish_state(self, force: bool = False) -> None:
        """Retained state; the retained fault list too, when it changed (or on connect)."""
        for retained in self._retained:
            retained.changed(force)

    def publish(self, name: str, payload: dict[str, Any], qos: int = 0, retain: bool = False) -> None:
        self.client.publish(self.topic(name), dumps(payload), qos=qos, retain=retain)

    def flush_calls(self) -> None:
        """Hand the next unpublished call to paho, once the one before it is acknowledged.

        One call in flight at a time: after a reconnect paho resends what it holds before
        anything new, so handing over more could let a later call overtake an earlier one.
        """
        if not self.connected.is_set():
            return
        with self._flush_lock:
            if self._pending:
                return
            for call in self.record.unpublished():
                seq = call["seq"]
                if seq in self._handed:
                    continue
                info = self.client.publish(self.topic("call"), dumps(call), qos=1)
                if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
                    log.warning("call %s not handed to MQTT: %s", seq, mqtt.error_string(info.rc))
                    return
                self._handed.add(seq)
                self._pending.append((seq, info))
                return
