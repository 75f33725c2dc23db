"""The batches of a pass's rewrite that are dropped whole, known from the map's read, so that the rewrite never
reads them (the cleaner's fast path; Kafka's cleaner reads and decodes every batch twice).

While mapping, the cleaner notes each data batch it scanned: its segment, its place and size in the file, its
offsets, record count, producer and whether it is transactional (`note`). Once the map is complete
(`seal`, with the rows cleaner_mapped.MappedRecords kept), a batch is known to be dropped whole when every one
of its records was mapped (none keyless, none below the dirty section), none of them is its key's latest, it
is not transactional (the transaction seam has nothing to learn from it: cleaner_txns.py only follows
transactional batches and markers, and the aborted transactions it reaches by offset are reached by the next
batch it is shown), and Kafka's `checkBatchRetention` would not keep it empty (an active producer's last batch,
the round's last offset). Exactly the batches for which `MappedRecords.decide` answers None and the
record-by-record path writes nothing: tests/storage/test_cleaner_mapped.py and test_cleaner_fast_path*.py clean
the same logs both ways.

The rewrite asks, at each place it is about to read in a segment, whether a run of such batches starts there
(`skip`: where the run ends, its bytes and records, counted as processed), and otherwise where the next run
starts (`next_run`), so that a read stops before it. Memory: 57 bytes a batch noted (cleaner.py counts it
against the rows' room).
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from collections.abc import Mapping, Sequence

from .compaction_rules import ProducerLast
from .key_hash import np  # loaded at first use (records/lazy_numpy.py); imported only where numpy exists

BATCH_BYTES = 56  # position, size, base and last offsets, count, producer id, transactional: 8 bytes each


@functools.cache
def _header_type() -> np.dtype:
    """A record batch's header (records/batch.py), big-endian, 61 bytes (made at first use: numpy loads late)."""
    return np.dtype([("base_offset", ">i8"), ("length", ">i4"), ("partition_leader_epoch", ">i4"), ("magic", "i1"),
                     ("crc", ">u4"), ("attributes", ">i2"), ("last_offset_delta", ">i4"), ("base_timestamp", ">i8"),
                     ("max_timestamp", ">i8"), ("producer_id", ">i8"), ("producer_epoch", ">i2"),
                     ("base_sequence", ">i4"), ("record_count", ">i4")])


class _Runs:
    """One segment's runs of batches dropped whole: Python lists (a bisect per question costs less than numpy
    calls on scalars)."""

    def __init__(self, starts: list[int], ends: list[int], sizes: list[int], counts: list[int]) -> None:
        self.starts, self.ends, self.sizes, self.counts = starts, ends, sizes, counts


class DroppedBatches:
    def __init__(self) -> None:
        self._noted: dict[int, list[tuple[np.ndarray, ...]]] = {}  # segment base offset -> per chunk, its fields
        self._runs: dict[int, _Runs] = {}
        self.batches = 0

    def note(self, segment: int, chunk_position: int, chunk: memoryview, positions: Sequence[int]) -> None:
        """The data batches at `positions` (log order) of a chunk read at `chunk_position`: their header fields,
        read from the chunk all at once."""
        if not positions:
            return
        at = np.array(positions, dtype=np.int64)
        header_type = _header_type()
        rows = np.frombuffer(chunk, dtype=np.uint8)[at[:, None] + np.arange(header_type.itemsize)]
        header = rows.view(header_type).ravel()
        base = header["base_offset"].astype(np.int64)
        self._noted.setdefault(segment, []).append((
            at + chunk_position, header["length"].astype(np.int64) + 12, base,
            base + header["last_offset_delta"], header["record_count"].astype(np.int64),
            header["producer_id"].astype(np.int64), (header["attributes"] & 0x10).astype(np.int64)))
        self.batches += len(at)

    def seal(self, offsets: np.ndarray, bases: np.ndarray, stay_rows: np.ndarray, *,
             producers: Mapping[int, ProducerLast], upper_bound: int, min_run_bytes: int = 0) -> None:
        """Find the runs of batches dropped whole, from the map's rows (their offsets and base offsets, log order,
        and which of them stay), of `min_run_bytes` at least: a shorter run costs less read with its neighbours
        (and decided by MappedRecords.decide) than a read and a chunk's numpy steps of its own."""
        noted, self._noted = self._noted, {}
        for segment, fields in noted.items():
            position, size, base, last, count, producer, transactional = (np.concatenate(column)
                                                                         for column in zip(*fields))
            if not len(offsets) or not len(position):
                continue
            lo = np.searchsorted(offsets, base, side="left")
            hi = np.searchsorted(offsets, last, side="right")
            top = len(offsets) - 1
            dropped = (hi - lo == count) & (count > 0) & (transactional == 0) & (last + 1 != upper_bound)
            dropped &= (bases[np.minimum(lo, top)] == base) & (bases[np.minimum(hi - 1, top)] == base)
            dropped &= np.searchsorted(stay_rows, lo) == np.searchsorted(stay_rows, hi)
            if producers:
                active = np.flatnonzero(dropped & np.isin(producer, np.array(list(producers), dtype=np.int64)))
                for k in active.tolist():
                    if producers[int(producer[k])].last_data_offset == int(last[k]):
                        dropped[k] = False  # the producer's last batch: kept empty
            self._runs[segment] = _runs(position, size, count, dropped, min_run_bytes)

    def skip(self, segment: int, position: int) -> tuple[int, int, int]:
        """(where the run of dropped batches starting at `position` ends, its bytes, its records), or
        (`position`, 0, 0) when none starts there."""
        runs = self._runs.get(segment)
        if runs is None:
            return position, 0, 0
        k = bisect_left(runs.starts, position)
        if k == len(runs.starts) or runs.starts[k] != position:
            return position, 0, 0
        return runs.ends[k], runs.sizes[k], runs.counts[k]

    def next_run(self, segment: int, position: int) -> int | None:
        """Where the next run of dropped batches after `position` starts (None: no more in the segment)."""
        runs = self._runs.get(segment)
        if runs is None:
            return None
        k = bisect_left(runs.starts, position + 1)
        return runs.starts[k] if k < len(runs.starts) else None


def _runs(position: np.ndarray, size: np.ndarray, count: np.ndarray, dropped: np.ndarray, min_bytes: int) -> _Runs:
    """Group consecutive dropped batches that touch in the file into runs; those of `min_bytes` at least."""
    follows = np.zeros(len(position), dtype=bool)
    follows[1:] = dropped[:-1] & (position[1:] == position[:-1] + size[:-1])
    first = np.flatnonzero(dropped & ~follows)  # each run's first batch
    member = np.flatnonzero(dropped)
    run_of = np.searchsorted(first, member, side="right") - 1
    sizes = np.bincount(run_of, weights=size[member], minlength=len(first)).astype(np.int64)
    counts = np.bincount(run_of, weights=count[member], minlength=len(first)).astype(np.int64)
    long = sizes >= min_bytes
    starts, sizes, counts = position[first][long], sizes[long], counts[long]
    return _Runs(starts.tolist(), (starts + sizes).tolist(), sizes.tolist(), counts.tolist())
