"""Is the system clock synchronised? A Raspberry Pi has no real-time clock: after a power cut
its time is wrong until NTP has set it, and records made before then are marked."""
from __future__ import annotations

import ctypes
import ctypes.util
import os

TIME_ERROR = 5  # adjtimex(2): clock not synchronised


class _Timex(ctypes.Structure):
    # Only `modes` (0 = read only) matters; the rest is room for the kernel's struct timex.
    _fields_ = [("modes", ctypes.c_uint), ("rest", ctypes.c_long * 64)]


def clock_synchronised() -> bool:
    """What the kernel says (adjtimex); BALLREADER_CLOCK_SYNCED=0/1 overrides it for tests."""
    forced = os.environ.get("BALLREADER_CLOCK_SYNCED")
    if forced in ("0", "1"):
        return forced == "1"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        state = libc.adjtimex(ctypes.byref(_Timex()))
    except (OSError, AttributeError):
        return False
    return state not in (-1, TIME_ERROR)
