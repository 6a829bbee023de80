"""Tell systemd how the appliance is doing (the sd_notify protocol), with no dependency.

systemd passes the address of a unix datagram socket in $NOTIFY_SOCKET; each message
is one datagram of "KEY=value" lines. An address starting with '@' is in the abstract
namespace (the '@' stands for a leading NUL byte). Outside systemd the variable is not
set and every call here is a harmless no-op that returns False, so the same code runs
on a laptop, in tests and on the Pi.
"""

from __future__ import annotations

import os
import socket

__all__ = [
    "notify",
    "ready",
    "watchdog",
    "status",
    "stopping",
    "extend_timeout",
    "watchdog_interval",
]


def _address(raw: str) -> str | None:
    if raw.startswith("@"):
        return "\0" + raw[1:]
    if raw.startswith("/"):
        return raw
    # vsock ("vsock:...") and anything else: not used on the Pi.
    return None


def notify(msg: str) -> bool:
    """Send one notification; True when it was handed to the socket.

    Never raises and never waits: a service must not die or stall because its
    supervisor went away or is slow to read (a full queue drops the message).
    """
    raw = os.environ.get("NOTIFY_SOCKET")
    if not raw:
        return False
    address = _address(raw)
    if address is None:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.setblocking(False)
            sock.connect(address)
            sock.sendall(msg.encode("utf-8"))
    except OSError:
        return False
    return True


def ready() -> bool:
    """Start-up (self-test included) is done: systemd marks the unit active."""
    return notify("READY=1")


def watchdog() -> bool:
    """Prove that frames are being processed. Call it from the work loop, not a timer."""
    return notify("WATCHDOG=1")


def status(text: str) -> bool:
    """One line shown by `systemctl status`; newlines would start a new key, so drop them."""
    return notify("STATUS=" + " ".join(text.splitlines()))


def stopping() -> bool:
    """A clean stop has begun (so systemd does not count it as a hang)."""
    return notify("STOPPING=1")


def extend_timeout(seconds: float) -> bool:
    """Ask for more start-up (or stop) time, e.g. while a slow camera opens."""
    return notify(f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}")


def watchdog_interval() -> float | None:
    """The watchdog period in seconds, or None when no watchdog applies to this process.

    systemd sets WATCHDOG_USEC, and WATCHDOG_PID to the process it means; a child that
    inherited the environment must not think the watchdog is its own. Ping at about
    half this interval.
    """
    usec = os.environ.get("WATCHDOG_USEC")
    if not usec:
        return None
    pid = os.environ.get("WATCHDOG_PID")
    if pid:
        try:
            if int(pid) != os.getpid():
                return None
        except ValueError:
            return None
    try:
        value = int(usec)
    except ValueError:
        return None
    if value <= 0:
        return None
    return value / 1_000_000
