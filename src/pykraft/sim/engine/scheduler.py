"""The simulator's clock and event queue: one heap ordered by (time, sequence), per-node clocks with skew and
forward jumps, and per-purpose random streams derived from the seed.

Nothing here reads the wall clock or depends on asyncio: a run is a pure function of its seed. Ties in time are
broken by the insertion sequence, so two events at the same millisecond always run in the order they were
scheduled.
"""

from __future__ import annotations

import hashlib
import heapq
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def stream(seed: int, purpose: str) -> random.Random:
    """An independent random stream for one purpose. Uses a stable digest: Python's `hash` of a str is salted
    per process, which would make runs differ between processes (and between sweep workers)."""
    digest = hashlib.blake2b(f"{seed}/{purpose}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


@dataclass(frozen=True, slots=True)
class TraceLine:
    """One executed event: global time, the node it concerns (or None), a short kind and a detail string."""

    time_ms: int
    node: int | None
    kind: str
    detail: str

    def format(self) -> str:
        where = "-" if self.node is None else str(self.node)
        return f"{self.time_ms:>8} n{where:<3} {self.kind:<14} {self.detail}"


class NodeClock:
    """A node's view of time: global time plus a skew. Skew is constant except for forward jumps (a monotonic
    clock never goes back, and the core's timers are all relative to its own clock)."""

    __slots__ = ("skew_ms",)

    def __init__(self, skew_ms: int = 0) -> None:
        self.skew_ms = skew_ms

    def local(self, global_ms: int) -> int:
        return global_ms + self.skew_ms

    def to_global(self, local_ms: int) -> int:
        return local_ms - self.skew_ms

    def jump(self, forward_ms: int) -> None:
        assert forward_ms >= 0, "monotonic clocks only jump forward"
        self.skew_ms += forward_ms


class Scheduler:
    """The event heap. An event is a callback with arguments; the callback returns a trace tuple
    (node, kind, detail) or None when the event turned out to be a no-op (a stale timer), which is not traced."""

    def __init__(self, trace_size: int | None = 200) -> None:
        self.now_ms = 0
        self._heap: list[tuple[int, int, Callable[..., Any], tuple[Any, ...]]] = []
        self._sequence = 0
        self.events = 0
        # The last `trace_size` events (None keeps everything, for the determinism test).
        self.trace: deque[TraceLine] = deque(maxlen=trace_size)

    def at(self, time_ms: int, callback: Callable[..., Any], *args: Any) -> None:
        assert time_ms >= self.now_ms, f"event scheduled in the past ({time_ms} < {self.now_ms})"
        self._sequence += 1
        heapq.heappush(self._heap, (time_ms, self._sequence, callback, args))

    def after(self, delay_ms: int, callback: Callable[..., Any], *args: Any) -> None:
        self.at(self.now_ms + max(0, delay_ms), callback, *args)

    def next_time(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def step(self) -> bool:
        """Run the earliest event. Returns False when it was a no-op (not traced) or the heap is empty."""
        if not self._heap:
            return False
        time_ms, _, callback, args = heapq.heappop(self._heap)
        self.now_ms = time_ms
        traced = callback(*args)
        if traced is None:
            return False
        self.events += 1
        node, kind, detail = traced
        self.trace.append(TraceLine(time_ms, node, kind, detail))
        return True

    def pending(self) -> int:
        return len(self._heap)
