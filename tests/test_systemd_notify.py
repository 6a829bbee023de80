"""sd_notify over a real unix datagram socket, as systemd would listen for it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from services import systemd_notify

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def listener(tmp_path, monkeypatch):
    """A bound datagram socket standing in for systemd's notify socket."""
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(10)  # only a guard against a hang; the test asserts content, not speed
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    yield sock
    sock.close()


def receive(sock: socket.socket) -> str:
    return sock.recv(4096).decode("utf-8")


def test_ready_and_watchdog_arrive_in_order(listener):
    assert systemd_notify.ready() is True
    assert systemd_notify.watchdog() is True
    assert receive(listener) == "READY=1"
    assert receive(listener) == "WATCHDOG=1"


def test_status_is_one_line(listener):
    assert systemd_notify.status("camera open\nreading") is True
    assert receive(listener) == "STATUS=camera open reading"


def test_stopping_and_extend_timeout(listener):
    systemd_notify.stopping()
    systemd_notify.extend_timeout(2.5)
    assert receive(listener) == "STOPPING=1"
    assert receive(listener) == "EXTEND_TIMEOUT_USEC=2500000"


def test_abstract_namespace_socket(monkeypatch):
    name = f"ballreader-test-{uuid.uuid4().hex}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(10)
    try:
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert systemd_notify.ready() is True
        assert receive(sock) == "READY=1"
    finally:
        sock.close()


def test_no_op_outside_systemd(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert systemd_notify.ready() is False
    assert systemd_notify.watchdog() is False


def test_gone_socket_is_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "nobody-listens.sock"))
    assert systemd_notify.watchdog() is False


def test_full_queue_drops_instead_of_blocking(listener):
    """Nobody reads the socket: the frame loop must not stall on the watchdog ping.
    In a child process, so that a blocking send would end in a timeout, not a hang."""
    code = ("from services import systemd_notify as n\n"
            "sent = 0\n"
            "while n.watchdog():\n"
            "    sent += 1\n"
            "    assert sent < 1_000_000, 'queue never filled'\n"
            "print(sent)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=dict(os.environ),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 0
    assert receive(listener) == "WATCHDOG=1"


def test_unsupported_address_is_ignored(monkeypatch):
    monkeypatch.setenv("NOTIFY_SOCKET", "vsock:2:1234")
    assert systemd_notify.ready() is False


def test_child_process_notifies_like_the_service(listener):
    """The service's main process is a separate python, as under systemd."""
    code = "from services import systemd_notify as n; n.status('self-test'); n.ready()"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, env=dict(os.environ), check=True)
    assert receive(listener) == "STATUS=self-test"
    assert receive(listener) == "READY=1"


def test_watchdog_interval(monkeypatch):
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    assert systemd_notify.watchdog_interval() is None
    monkeypatch.setenv("WATCHDOG_USEC", "30000000")
    assert systemd_notify.watchdog_interval() == 30.0
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert systemd_notify.watchdog_interval() == 30.0
    monkeypatch.setenv("WATCHDOG_USEC", "0")
    assert systemd_notify.watchdog_interval() is None
    monkeypatch.setenv("WATCHDOG_USEC", "junk")
    assert systemd_notify.watchdog_interval() is None


def test_watchdog_meant_for_another_process():
    """A child that inherited WATCHDOG_* from the service must not ping for it."""
    code = "from services import systemd_notify as n; print(n.watchdog_interval())"
    env = dict(os.environ, WATCHDOG_USEC="20000000", WATCHDOG_PID="1")
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    assert out == "None"
    # The same variables, with WATCHDOG_PID naming the process itself ($$ survives exec).
    own = subprocess.run(
        ["sh", "-c", f'WATCHDOG_PID=$$ exec "{sys.executable}" -c "{code}"'],
        cwd=REPO, env=dict(os.environ, WATCHDOG_USEC="20000000"),
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    assert own == "20.0"
