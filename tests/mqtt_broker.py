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
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

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
        *(["persistence true", f"persistence_location {folder}/"] if persistence else []),
        extra_conf,
    ]
    conf.write_text("\n".join(lines) + "\n")
    return Broker(port=port, dir=folder, conf_path=conf, log_path=log)


@pytest.fixture
def mosquitto(tmp_path):
    """Fixture: an anonymous broker for one test. Use it with
    `from mqtt_broker import mosquitto  # noqa: F401` in a test module."""
    broker = start_mosquitto(tmp_path)
    yield broker
    broker.kill()
