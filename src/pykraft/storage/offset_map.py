"""The cleaner's key -> latest offset map over the dirty section of a log, in bounded memory (Kafka's `OffsetMap`,
`SkimpyOffsetMap`), and the throttle of the cleaner's I/O (Kafka's `Throttler`). No files; time passed in.

As Kafka's: an open-addressing table in one flat buffer of `log.cleaner.dedupe.buffer.size / log.cleaner.threads`
bytes, a slot of 24 bytes per key (its 16-byte hash, key_hash.py, and its offset), `slots` = the buffer / 24, filled
up to `log.cleaner.io.buffer.load.factor` (0.9) of them (`max_entries`). Two keys with the same hash are the same
key (a 2^-128 chance per pair with key_hash.py's hash). When the map is full, Kafka's behaviour: the pass stops
mapping at the first keyed record it cannot take, cleans up to the last offset it mapped, and the next pass goes on
from there.

The table is a numpy array (slot = high hash word, low hash word, offset + 1; 0 marks an empty slot) and is worked
on a run of keys at a time (`put_run`, `lookup`): probing is vectorised, so a chunk's records cost numpy steps, not
Python steps. The probe sequence is double hashing for `_HASHED_PROBES` steps, then linear (which reaches every
slot). A pass that cannot map more keys than the offsets of its dirty range (`clear(expected_keys)`) uses a
smaller table than the buffer allows: it starts at `_FIRST_TABLE` slots at most and doubles when 3/4 full, up to
4 slots an expected key (`table_bytes`; the cleaner uses the rest of the buffer for its windows and the rows it
keeps, cleaner.py): zeroed pages are only touched where used, and a pass over few keys probes a table that fits
the caches; `slots`, `max_entries` and the utilization stay Kafka's, from the whole buffer.
Where numpy does not import, `new_offset_map` gives a `PlainOffsetMap` (a dict) and the cleaner goes record by
record.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from .key_hash import HAVE_NUMPY, KeyHasher, np  # np: loaded at first use (records/lazy_numpy.py)

ENTRY_BYTES = 24  # Kafka's: the hash (16 bytes) and the offset (8 bytes)
_HASHED_PROBES = 16
_SHIFT = 32  # a uint64 where it shifts uint64 arrays (np.uint64 here would load numpy: key_hash.py)
_MIN_TABLE = 16
_FIRST_TABLE = 1 << 16  # slots (1.5 MiB) a pass over few keys starts with


def new_offset_map(memory_bytes: int, load_factor: float = 0.9) -> OffsetMap | PlainOffsetMap:
    """The cleaner's map: the numpy table, or a dict where numpy does not import (the record-by-record path)."""
    return OffsetMap(memory_bytes, load_factor) if HAVE_NUMPY else PlainOffsetMap(memory_bytes, load_factor)


def _max_entries(slots: int, load_factor: float) -> int:
    # A full table could never end a probe for an absent key: one slot always stays empty (a load factor of
    # 1 or more would fill it; Kafka's table then loops forever on a new key).
    found = min(int(slots * load_factor), slots - 1)
    if not slots * load_factor > 1 or found < 1:  # Kafka's check: no progress possible
        raise ValueError("offset map is too small to fit in even a single message, so log cleaning will never "
                         "make progress. You can increase log.cleaner.dedupe.buffer.size or decrease "
                         "log.cleaner.threads")
    return found


class OffsetMap:
    def __init__(self, memory_bytes: int, load_factor: float = 0.9, *, seed: bytes | None = None) -> None:
        self.memory_bytes = memory_bytes
        self.slots = memory_bytes // ENTRY_BYTES
        self.max_entries = _max_entries(self.slots, load_factor)
        self.hasher = KeyHasher(seed)
        self._buffer: np.ndarray | None = None  # allocated by the first clear (or use)
        self._table: np.ndarray | None = None  # the part of the buffer this pass works in
        self._reserved = self.slots  # the slots it may grow to in this pass
        self.size = 0
        self.latest_offset = -1

    def clear(self, expected_keys: int | None = None) -> None:
        """Empty the map for a pass that maps at most `expected_keys` keys (None: any number)."""
        limit = self.max_entries if expected_keys is None else min(self.max_entries, max(expected_keys, 1))
        bounded = limit < self.max_entries
        # Start small and grow as keys come (`_grow`): a pass over many offsets of few keys (the usual log to
        # compact) then probes a table that fits the processor's caches.
        self._use(min(self.slots, max(2 * limit, _MIN_TABLE), _FIRST_TABLE) if bounded else self.slots)
        self._reserved = min(self.slots, max(4 * limit, _MIN_TABLE)) if bounded else self.slots
        self.size = 0
        self.latest_offset = -1

    def _use(self, size: int) -> None:
        """Work in the first `size` slots of the buffer, emptied. The buffer is allocated once (zeroed pages the
        system hands out as they are first touched) and kept from pass to pass, as Kafka keeps its own."""
        if self._buffer is None:
            self._buffer = np.zeros((self.slots, 3), dtype=np.uint64)
        self._table = self._buffer[:size]
        self._table.fill(0)

    @property
    def full(self) -> bool:
        return self.size >= self.max_entries

    @property
    def utilization(self) -> float:
        return self.size / self.slots

    @property
    def table_bytes(self) -> int:
        """The most of the buffer this pass's table may take as it grows (the whole buffer before a clear)."""
        return self.memory_bytes if self._table is None else self._reserved * ENTRY_BYTES

    def mapped_offsets(self) -> np.ndarray:
        """The latest offset of every key mapped (int64, in slot order)."""
        if self._table is None:
            return np.zeros(0, dtype=np.int64)
        stored = self._table[:, 2]
        return stored[stored != 0].astype(np.int64) - 1

    def _ready(self) -> np.ndarray:
        if self._table is None:
            self.clear()
        assert self._table is not None
        return self._table

    # ---- runs of keys ----------------------------------------------------------------------------------------
    def put_run(self, high: np.ndarray, low: np.ndarray, offsets: np.ndarray) -> int:
        """Map the keys of a run of records (their hashes and offsets, in log order: increasing, and above those
        mapped before): later records of a key replace earlier ones. Returns how many records were mapped: all
        of them, or fewer when the map filled up first (Kafka's check before each keyed record: the record at the
        returned index found the map full)."""
        n = len(high)
        room = self.max_entries - self.size
        if n == 0 or room <= 0:
            return 0
        where, found = self._probe(high, low)  # every record: most keys of a run are mapped already
        new = np.flatnonzero(~found)
        if len(new):
            order, first, ends = _groups(high[new], low[new])  # the run's new keys, sorted: few, once keys repeat
            if len(first) >= room:  # the run's new keys may fill the map
                new_firsts = np.sort(new[order[first]])
                if new_firsts[room - 1] + 1 < n:
                    mapped = int(new_firsts[room - 1]) + 1  # the map is full from the next record on
                    return self.put_run(high[:mapped], low[:mapped], offsets[:mapped])
        table = self._ready()
        stored = offsets.astype(np.uint64) + np.uint64(1)
        if len(new) < n:  # a key mapped before: its latest offset is the largest (log order)
            np.maximum.at(table[:, 2], where[found], stored[found])
        if len(new):
            keys, last = new[order[first]], new[order[ends]]
            if 4 * (self.size + len(keys)) > 3 * len(table) and len(table) < self.slots:
                self._grow(len(keys))  # a table kept at most 3/4 full
                where[keys], _ = self._probe(high[keys], low[keys])
            self._insert(high[keys], low[keys], stored[last], where[keys])
        self.latest_offset = max(self.latest_offset, int(offsets.max()))
        return n

    def _store(self, high: np.ndarray, low: np.ndarray, offsets: np.ndarray) -> None:
        """Map each key of the run to its last offset in the run, however full the map is (offsets in any order:
        `put`)."""
        order, first, ends = _groups(high, low)
        where, found = self._probe(high[order[first]], low[order[first]])
        table = self._ready()
        stored = offsets[order[ends]].astype(np.uint64) + np.uint64(1)
        table[where[found], 2] = stored[found]
        new = ~found
        if new.any():
            keys = order[first[new]]
            if 4 * (self.size + len(keys)) > 3 * len(table) and len(table) < self.slots:
                self._grow(len(keys))  # a table kept at most 3/4 full
                where[new], _ = self._probe(high[keys], low[keys])
            self._insert(high[keys], low[keys], stored[new], where[new])
        self.latest_offset = max(self.latest_offset, int(offsets.max()))

    def lookup(self, high: np.ndarray, low: np.ndarray) -> np.ndarray:
        """The latest offset mapped for each key hash, -1 where none (int64)."""
        if len(high) == 0 or self._table is None:
            return np.full(len(high), -1, dtype=np.int64)
        where, found = self._probe(high, low)
        return np.where(found, self._table[where, 2].astype(np.int64) - 1, -1)

    def _probe(self, high: np.ndarray, low: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each hash: the slot holding it, or the first empty slot of its probe sequence; and whether found.
        Slots come from the hash words by multiply-shift (a table has fewer than 2^32 slots)."""
        table = self._ready()
        size = len(table)
        position = (((high >> np.uint64(_SHIFT)) * np.uint64(size)) >> np.uint64(_SHIFT)).astype(np.int64)
        rows = table.take(position, axis=0)  # take: a few times faster than table[position]
        empty = rows[:, 2] == 0
        match = (rows[:, 0] == high) & (rows[:, 1] == low)
        match &= ~empty
        done = empty | match
        if done.all():  # the usual case: the first slot holds the key or nothing
            return position, match
        where, found = position, match
        pending = np.flatnonzero(~done)
        high, low, position = high[pending], low[pending], position[pending]
        step = (((low >> np.uint64(_SHIFT)) * np.uint64(size - 1)) >> np.uint64(_SHIFT)).astype(np.int64) + 1
        attempt = 0
        while True:
            attempt += 1
            position += step if attempt < _HASHED_PROBES else 1
            position %= size
            rows = table.take(position, axis=0)
            empty = rows[:, 2] == 0
            match = (rows[:, 0] == high) & (rows[:, 1] == low)
            match &= ~empty
            done = empty | match
            where[pending[done]] = position[done]
            found[pending[match]] = True
            if done.all():
                return where, found
            going = ~done
            pending, high, low, position, step = pending[going], high[going], low[going], position[going], step[going]

    def _insert(self, high: np.ndarray, low: np.ndarray, stored: np.ndarray, where: np.ndarray) -> None:
        """Put keys known to be absent (distinct hashes) into the empty slots `where` found for them; two keys
        aiming at one slot: the first takes it, the other probes on."""
        table = self._ready()
        while len(high):
            slots, first = _first_per_slot(where)
            table[slots, 0] = high[first]
            table[slots, 1] = low[first]
            table[slots, 2] = stored[first]
            self.size += len(slots)
            if len(slots) == len(high):
                return
            rest = np.ones(len(high), dtype=bool)
            rest[first] = False
            high, low, stored = high[rest], low[rest], stored[rest]
            where, _ = self._probe(high, low)

    def _grow(self, more: int) -> None:
        old = self._ready()
        used = old[old[:, 2] != 0].copy()
        self._use(min(self.slots, max(2 * len(old), 4 * (self.size + more))))
        self.size = 0
        if len(used):
            where, _ = self._probe(used[:, 0], used[:, 1])
            self._insert(used[:, 0], used[:, 1], used[:, 2], where)

    # ---- one key at a time (tests, the record-by-record path) ------------------------------------------------
    def put(self, key: bytes, offset: int) -> None:
        """Map `key` to `offset`, whether or not the map is full (the caller checks `full` first)."""
        high, low = self.hasher.hash_key(key)
        self._store(np.array([high], dtype=np.uint64), np.array([low], dtype=np.uint64),
                    np.array([offset], dtype=np.int64))

    def put_records(self, base_offset: int, records: Sequence, start: int) -> bool:
        """Map the keyed records (`KeyedRecord`s of one batch at `base_offset`) at offsets >= `start`. Returns True
        when the map filled up first: the records from there on are not mapped (Kafka's cleaner then cleans up to
        the last mapped offset)."""
        hashes, offsets = [], []
        for record in records:
            key, offset = record[2], base_offset + record[0]
            if key is not None and offset >= start:
                hashes.append(self.hasher.hash_key(key))
                offsets.append(offset)
        if not offsets:
            return False
        pairs = np.array(hashes, dtype=np.uint64)
        return self.put_run(pairs[:, 0], pairs[:, 1], np.array(offsets, dtype=np.int64)) < len(offsets)

    def get(self, key: bytes) -> int:
        """The latest offset mapped for `key`, -1 when none."""
        high, low = self.hasher.hash_key(key)
        return int(self.lookup(np.array([high], dtype=np.uint64), np.array([low], dtype=np.uint64))[0])

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)


def _groups(high: np.ndarray, low: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The run's records grouped by hash: (an order that sorts them by hash, stable; where each group starts and
    ends in that order). order[first] is each key's first record in the run, order[ends] its last."""
    n = len(high)
    order = np.argsort(high, kind="stable")
    sorted_high, sorted_low = high[order], low[order]
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(sorted_high[1:], sorted_high[:-1], out=starts[1:])
    other_low = sorted_low[1:] != sorted_low[:-1]
    if (other_low & ~starts[1:]).any():  # two keys whose hashes share the high word: sort by both words
        order = np.lexsort((low, high))
        sorted_high, sorted_low = high[order], low[order]
        np.not_equal(sorted_high[1:], sorted_high[:-1], out=starts[1:])
        other_low = sorted_low[1:] != sorted_low[:-1]
    starts[1:] |= other_low
    first = np.flatnonzero(starts)
    ends = np.empty_like(first)
    ends[:-1] = first[1:] - 1
    ends[-1] = n - 1
    return order, first, ends


def _first_per_slot(where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct slots of `where` and the first index aiming at each (np.unique's answer, without its cost
    when no two aim at the same slot)."""
    order = np.argsort(where, kind="stable")
    ordered = where[order]
    distinct = np.empty(len(where), dtype=bool)
    distinct[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=distinct[1:])
    return ordered[distinct], order[distinct]


class PlainOffsetMap:
    """The offset map without numpy (a platform with no wheel of it): the same keys (key_hash.py's hash, one key
    at a time), the same `max_entries` and the same rule when it fills, in a dict (slower, and more memory a key
    than the buffer's 24 bytes: only where numpy is missing)."""

    def __init__(self, memory_bytes: int, load_factor: float = 0.9, *, seed: bytes | None = None) -> None:
        self.memory_bytes = memory_bytes
        self.slots = memory_bytes // ENTRY_BYTES
        self.max_entries = _max_entries(self.slots, load_factor)
        self.hasher = KeyHasher(seed)
        self._latest: dict[tuple[int, int], int] = {}
        self.latest_offset = -1

    def clear(self, expected_keys: int | None = None) -> None:
        self._latest = {}
        self.latest_offset = -1

    @property
    def size(self) -> int:
        return len(self._latest)

    @property
    def full(self) -> bool:
        return self.size >= self.max_entries

    @property
    def utilization(self) -> float:
        return self.size / self.slots

    def put(self, key: bytes, offset: int) -> None:
        self._latest[self.hasher.hash_key(key)] = offset
        self.latest_offset = max(self.latest_offset, offset)

    def put_records(self, base_offset: int, records: Sequence, start: int) -> bool:
        """As OffsetMap.put_records: True when the map was full at a keyed record (Kafka's check before each)."""
        latest = self._latest
        for record in records:
            key, offset = record[2], base_offset + record[0]
            if key is not None and offset >= start:
                if len(latest) >= self.max_entries:
                    return True
                latest[self.hasher.hash_key(key)] = offset
                self.latest_offset = max(self.latest_offset, offset)
        return False

    def get(self, key: bytes) -> int:
        return self._latest.get(self.hasher.hash_key(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)


class RateLimiter(Protocol):
    """What a pass needs of a throttle: its rate, and the pause (seconds) after reading `amount` bytes at
    `now_ns`."""

    rate_per_s: float

    def observe(self, amount: float, now_ns: int) -> float: ...


class Throttler:
    """Kafka's `Throttler` (check interval 300 ms), shared by the cleaner threads: after each observation, if at
    least a check interval passed since the period began and the observed rate is above `rate_per_s`, the caller
    sleeps the time that brings it back to the rate. `observe` returns that time (seconds) instead of sleeping.
    (node/hosts/cleaner_child.py keeps the same state in memory shared by the cleaner processes.)"""

    CHECK_INTERVAL_NS = 300_000_000

    def __init__(self, rate_per_s: float, now_ns: int) -> None:
        self.rate_per_s = rate_per_s
        self._period_start = now_ns
        self._observed = 0.0
        self._lock = threading.Lock()

    def observe(self, amount: float, now_ns: int) -> float:
        with self._lock:
            self._period_start, self._observed, sleep_s = throttle_step(
                self._period_start, self._observed, amount, now_ns, self.rate_per_s)
            return sleep_s


def throttle_step(period_start: int, observed: float, amount: float, now_ns: int,
                  rate_per_s: float) -> tuple[int, float, float]:
    """One observation of Kafka's throttler: (the period's new start, the bytes observed in it, the seconds to
    sleep). The period ends once it lasted a check interval; it restarts after the sleep."""
    observed += amount
    elapsed = now_ns - period_start
    if elapsed <= Throttler.CHECK_INTERVAL_NS or observed <= 0:
        return period_start, observed, 0.0
    sleep_s = 0.0
    if observed * 1e9 / elapsed > rate_per_s:
        sleep_s = max(0.0, observed / rate_per_s - elapsed / 1e9)
    return now_ns + int(sleep_s * 1e9), 0.0, sleep_s
