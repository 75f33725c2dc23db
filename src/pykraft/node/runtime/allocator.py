"""glibc's allocator set up for a broker that moves megabyte frames (`tune_for_large_frames`).

Every 1 MB Produce or Fetch frame, and its records, is a fresh 1 MB allocation. With glibc's defaults such a
block is served by mmap until the first one is freed, and afterwards from the heap, whose top is given back to
the kernel (brk) whenever more than twice the last freed block's size is free there. A broker at ~40 MB/s made
thousands of brk calls per run and each new block was faulted in page by page: the followers took ~480 minor
page faults per MB produced, the leader ~190 (benchmarks/produce.py, counted from /proc/PID/stat), each one a
kernel entry and a zeroed page. With the thresholds fixed here freed blocks stay in the heap for the next frame:
~1 fault per MB on the followers, ~11 on the leader.

What it costs: up to `TRIM_THRESHOLD` bytes of freed memory stay in the process after a burst (as a JVM keeps its
heap); an idle broker never grew its heap, so its RSS is unchanged. Blocks over `MMAP_THRESHOLD` (a frame over
16 MiB, rare) are still mapped and returned at once. Nothing is done off glibc, or when the operator set glibc's
own MALLOC_TRIM_THRESHOLD_ / MALLOC_MMAP_THRESHOLD_ (theirs win).

`release_free_heap()` hands the free pages of the heap back once (glibc's `malloc_trim`): a broker calls it when its
data plane has opened, so that what starting up allocated and freed (replaying the metadata log, recovering the
partition logs) does not stay in its idle RSS under the high trim threshold (~0.8 MiB, benchmarks/idle_rss.py).
"""

from __future__ import annotations

import logging
import os
from typing import Any

_log = logging.getLogger("pykraft.node")

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 16 << 20
TRIM_THRESHOLD = 64 << 20


def _glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):  # not glibc
        return False


def _libc() -> Any:
    """glibc loaded through ctypes (imported only here: nodes pay its import once, when their data plane opens), or
    None off glibc."""
    if not _glibc():
        return None
    import ctypes

    return ctypes.CDLL(None)


def release_free_heap() -> bool:
    """glibc's `malloc_trim(0)`: free pages anywhere in the heap go back to the kernel; True when it ran."""
    try:
        libc = _libc()
        if libc is None:
            return False
        libc.malloc_trim(0)
    except (OSError, AttributeError) as exc:
        _log.info("free heap not released: %s", exc)
        return False
    return True


def tune_for_large_frames() -> bool:
    """Fix glibc's mmap and trim thresholds (see the module docstring); True when they were set."""
    if any(name in os.environ for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")):
        return False
    try:
        libc = _libc()
        if libc is None:
            return False
        # Setting either threshold also stops glibc's own adjustment of both, so both are set.
        done = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and libc.mallopt(_M_TRIM_THRESHOLD,
                                                                                   TRIM_THRESHOLD) == 1
    except (OSError, AttributeError) as exc:
        _log.info("allocator thresholds not set: %s", exc)
        return False
    return done
