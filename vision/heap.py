"""Keep freed memory in the process heap between frames.

Reading a frame allocates a few MB of short-lived arrays (the Hough
accumulator alone is 1 MB). glibc hands blocks over 128 KB back to the kernel
when they are freed, so every frame faulted about 900 fresh pages in again:
several milliseconds a frame on a 2-core VM. Raising the mmap and trim
thresholds keeps those blocks for reuse; the heap then holds at most a few MB
more than it did.
"""
from __future__ import annotations

import ctypes
import ctypes.util

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_done = False


def keep_freed_memory(block_bytes: int = 4 << 20, trim_bytes: int = 8 << 20) -> bool:
    """Serve blocks up to block_bytes from the heap and keep up to trim_bytes
    free at its top. True when set (glibc); elsewhere nothing changes."""
    global _done
    if _done:
        return True
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False          # not glibc (musl, macOS): its allocator's own defaults apply
    _done = bool(mallopt(_M_MMAP_THRESHOLD, block_bytes)) and bool(mallopt(_M_TRIM_THRESHOLD, trim_bytes))
    return _done
