"""A real pseudo-terminal pair standing in for a serial cable, for the serial tests."""
from __future__ import annotations

import os
import select


def read_exactly(fd: int, n: int, timeout: float = 5.0) -> bytes:
    """n bytes from fd, or fewer if nothing more comes for `timeout` seconds."""
    data = b""
    while len(data) < n:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            break
        data += os.read(fd, n - len(data))
    return data
