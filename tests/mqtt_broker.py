"""A real mosquitto on a free loopback port, for tests.

    from mqtt_broker import start_mosquitto
    broker = start_mosquitto(tmp_path)          # anonymous, 127.0.0.1:<free port>
    ... connect to 127.0.0.1:broker.port ...
    broker.stop()     # clean stop (SIGTERM): persistence is saved, Last Wills fire
    broker.kill()     # SIGKILL: like pulling the plug
    broker.restart()  # same config, same port

Or the `mosquitto` fixture at the end of this file.

`extra_conf` is appended to the generated config (auth, persistence, bridges).
Each broker gets its own folder under tmp_path with its config and log.
"""
from __future__ import annotations

import itertools
import os
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
START_TIMEOUT_S = 10.0
_counter = itertools.count(1)


def free_port() -> int:
    """A loopback port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@dataclass
class Broker:
    port: int
    dir: Path
    conf_path: Path
    log_path: Path
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def start(self) -> None:
        if self.running:
            return
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.conf_path)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _listening(self.port):
            if self.process.poll() is not None:
                raise RuntimeError(f"mosquitto exited ({self.process.returncode}):\n{self.log()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"mosquitto did not listen on {self.port}:\n{self.log()}")
            time.sleep(0.02)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """Clean stop: mosquitto saves persistence and sends Last Wills."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """Abrupt end, as a power cut: nothing is saved."""
        self._end(signal.SIGKILL)

    def restart(self) -> None:
        self.stop()
        self.start()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def _end(self, sig: int) -> None:
        if not self.running:
            return
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_mosquitto(
    tmp_path: Path, port: int | None = None, extra_conf: str = "", persistence: bool = False
) -> Broker:
    """Write a config under tmp_path and start mosquitto on 127.0.0.1:port (free if None).

    `persistence=True` keeps retained messages and persistent sessions across
    `stop()`/`restart()` (saved on a clean stop; `kill()` loses what was not saved).

    Without `extra_conf` the listener allows anonymous clients. To require a password,
    pass e.g. "password_file /path\\nallow_anonymous false" (the later line wins).
    """
    # A free port can be taken between the probe and mosquitto's bind: try a few.
    attempts = 1 if port is not None else 5
    for attempt in range(attempts):
        chosen = port if port is not None else free_port()
        broker = _make(Path(tmp_path), chosen, extra_conf, persistence)
        try:
            broker.start()
            return broker
        except RuntimeError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def _make(tmp_path: Path, port: int, extra_conf: str, persistence: bool) -> Broker:
    folder = tmp_path / f"mosquitto-{next(_counter)}-{port}"
    folder.mkdir(parents=True, exist_ok=True)
    conf = folder / "mosquitto.conf"
    log = folder / "mosquitto.log"
    lines = [
        f"listener {port} 127.0.0.1",
        "allow_anonymous true",
        "log_dest stdout",
        "log_type error",
        "log_type warning",
        "log_type notice",
        "log_type information",
        "connection_messages true",
        # Tests run as root: stay root rather than dropping to a 'mosquitto' user
        # that cannot write the test's folder.
        *(["user root"] if os.geteuid() == 0 else []),
        # Always in the broker's folder, so an extra_conf saying "persistence true" never
        # writes mosquitto.db into the current directory.
        f"persistence_location {folder}/",
        *(["persistence true"] if persistence else []),
        extra_conf,
    ]
    conf.write_text("\n".join(lines) + "\n")
    return Broker(port=port, dir=folder, conf_path=conf, log_path=log)


@pytest.fixture
def mosquitto(tmp_path):
    """Fixture: an anonymous broker for one test (tests/conftest.py loads it for every test)."""
    broker = start_mosquitto(tmp_path)
    yield broker
    broker.kill()


class Subscriber:
    """A paho client that records every message on its topics, for assertions.

        with Subscriber(broker, "bingo/#") as sub:
            msg = sub.wait_for(lambda m: m.topic.endswith("/state"))
    """

    def __init__(self, broker: Broker, *topics: str, qos: int = 1, client_id: str = "",
                 clean_session: bool = True, username: str | None = None, password: str | None = None,
                 resubscribe: bool = True, tls_ca: str | None = None):
        # resubscribe=False subscribes on the first connect only: after a reconnect the
        # messages then come only from a persistent session the broker really kept.
        self._resubscribe = resubscribe
        self.messages: list = []
        self._queue: queue.Queue = queue.Queue()
        self._subscribed = threading.Event()
        self._topics = topics
        self._qos = qos
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                                  clean_session=clean_session if client_id else True)
        if username:
            self.client.username_pw_set(username, password)
        if tls_ca:
            self.client.tls_set(ca_certs=str(tls_ca))
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda *a: self._subscribed.set()
        self.client.on_message = lambda c, u, m: self._queue.put(m)
        self.client.reconnect_delay_set(min_delay=0.1, max_delay=1)
        self.client.connect("127.0.0.1", broker.port, keepalive=10)
        self.client.loop_start()
        if not self._subscribed.wait(START_TIMEOUT_S):
            self.close()
            raise RuntimeError(f"could not subscribe to {topics} on port {broker.port}")

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if not reason_code.is_failure and (self._resubscribe or not self._subscribed.is_set()):
            client.subscribe([(t, self._qos) for t in self._topics])

    def wait_for(self, match=lambda m: True, timeout: float = 10.0, after: int = 0):
        """The first message for which match(msg) is true, among those received from
        index `after` on (already received or arriving)."""
        for m in self.messages[after:]:
            if match(m):
                return m
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no matching message in {timeout}s; got {[m.topic for m in self.messages]}")
            try:
                m = self._queue.get(timeout=left)
            except queue.Empty:
                continue
            self.messages.append(m)
            if match(m):
                return m

    def drain(self, quiet_s: float = 0.3) -> list:
        """Everything received, after no new message came for `quiet_s` seconds."""
        while True:
            try:
                self.messages.append(self._queue.get(timeout=quiet_s))
            except queue.Empty:
                return self.messages

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def __enter__(self) -> "Subscriber":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def unique_calls(messages, topic: str) -> list[dict]:
    """The call messages on `topic`, each seq once.

    QoS 1 may deliver a message twice (the broker got it, its acknowledgement was lost with the
    connection): consumers drop repeats by seq. A repeat must be the very same call.
    """
    import json

    seen: dict[int, bytes] = {}
    calls = []
    for m in messages:
        if m.topic != topic:
            continue
        call = json.loads(m.payload)
        if call["seq"] in seen:
            assert seen[call["seq"]] == m.payload, f"seq {call['seq']} used for two different calls"
            continue
        seen[call["seq"]] = m.payload
        calls.append(call)
    return calls
