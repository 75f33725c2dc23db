"""The cleaner's key -> latest offset map over the dirty section of a log, in bounded memory (Kafka's `OffsetMap`,
`SkimpyOffsetMap`), and the throttle of the cleaner's I/O (Kafka's `Throttler`). Pure: no files, time passed in.

Kafka's map is an open-addressing table in a byte buffer of `log.cleaner.dedupe.buffer.size / log.cleaner.threads`
bytes, one slot of 24 bytes per key (its MD5 hash and the offset), filled to `log.cleaner.io.buffer.load.factor`
(0.9). Here the table is a dict, whose entry costs more: a key of up to 16 bytes is kept as it is, a longer one by
its 16-byte BLAKE2b digest (like Kafka's hash, a collision is out of reach), and an entry (the dict's share after a
resize, the key and the offset objects) was measured at up to `ENTRY_BYTES`, so the same buffer holds fewer keys
than in Kafka and the map's memory stays within it (benchmarks/compaction.py measures it). When the map is full,
Kafka's behaviour: the pass stops mapping, cleans up to the last offset it mapped, and the next pass goes on from
there.
"""

from __future__ import annotations

import hashlib
import threading

ENTRY_BYTES = 176  # measured peak per entry (tracemalloc, 16-byte keys, offsets above 2^30, just after a resize)
_SHORT_KEY = 16


def map_key(key: bytes) -> bytes:
    """What the map stores for a record key: the key itself up to 16 bytes, else its 16-byte digest."""
    return key if len(key) <= _SHORT_KEY else hashlib.blake2b(key, digest_size=16).digest()


class OffsetMap:
    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        self.memory_bytes = memory_bytes
        self.slots = memory_bytes // ENTRY_BYTES
        self.max_entries = int(self.slots * load_factor)
        if self.max_entries < 1:  # Kafka's check: the cleaner could never make progress
            raise ValueError("offset map is too small to fit in even a single message, so log cleaning will never "
                             "make progress. You can increase log.cleaner.dedupe.buffer.size or decrease "
                             "log.cleaner.threads")
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def clear(self) -> None:
        self._offsets = {}
        self.latest_offset = -1

    @property
    def size(self) -> int:
        return len(self._offsets)

    @property
    def full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    @property
    def utilization(self) -> float:
        return len(self._offsets) / self.slots

    def put(self, key: bytes, offset: int) -> None:
        """Map `key` to `offset` (later offsets of a key replace earlier ones). The caller checks `full` first."""
        self._offsets[key if len(key) <= _SHORT_KEY else map_key(key)] = offset
        if offset > self.latest_offset:
            self.latest_offset = offset

    def put_records(self, base_offset: int, records: list, start: int) -> bool:
        """Map the keyed records (`KeyedRecord`s of one batch at `base_offset`) at offsets >= `start`. Returns True
        when the map filled up first: the records from there on are not mapped (Kafka's cleaner then cleans up to
        the last mapped offset)."""
        offsets, limit, latest = self._offsets, self.max_entries, self.latest_offset
        try:
            for record in records:
                key = record[2]
                if key is None:
                    continue
                offset = base_offset + record[0]
                if offset < start:
                    continue
                if len(offsets) >= limit:
                    return True
                offsets[key if len(key) <= _SHORT_KEY else map_key(key)] = offset
                if offset > latest:
                    latest = offset
            return False
        finally:
            self.latest_offset = latest

    def get(self, key: bytes) -> int:
        """The latest offset mapped for `key`, -1 when none."""
        return self._offsets.get(key if len(key) <= _SHORT_KEY else map_key(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)


class Throttler:
    """Kafka's `Throttler` (check interval 300 ms), shared by the cleaner threads: after each observation, if at
    least a check interval passed since the period began and the observed rate is above `rate_per_s`, the caller
    sleeps the time that brings it back to the rate. `observe` returns that time (seconds) instead of sleeping."""

    CHECK_INTERVAL_NS = 300_000_000

    def __init__(self, rate_per_s: float, now_ns: int) -> None:
        self.rate_per_s = rate_per_s
        self._period_start = now_ns
        self._observed = 0.0
        self._lock = threading.Lock()

    def observe(self, amount: float, now_ns: int) -> float:
        with self._lock:
            self._observed += amount
            elapsed = now_ns - self._period_start
            if elapsed <= self.CHECK_INTERVAL_NS or self._observed <= 0:
                return 0.0
            sleep_s = 0.0
            if self._observed * 1e9 / elapsed > self.rate_per_s:
                sleep_s = max(0.0, self._observed / self.rate_per_s - elapsed / 1e9)
            self._period_start = now_ns + int(sleep_s * 1e9)
            self._observed = 0.0
            return sleep_s
