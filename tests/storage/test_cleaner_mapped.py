"""The rows the offset map's read keeps for the rewrite (storage/cleaner_mapped.py): a batch is decided from them
(kept whole, dropped, emptied, or rebuilt around its kept records from their places in the segment) without its
records being scanned or their keys hashed again, and the cleaned segments are still
byte for byte those of the record-by-record path (tombstones and their delete horizons, idempotent producers' last
batches kept empty, keyless records, batches the map only partly took). And the rows are refused where they could
mislead: offsets that do not increase, more rows than the room the map table leaves."""

from __future__ import annotations

import os
import random

import numpy as np

from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.storage import cleaner, cleaner_mapped, cleaner_skips
from pykraft.storage.cleaner_mapped import MappedRecords
from pykraft.storage.cleaner_skips import DroppedBatches
from pykraft.storage.cleaner_txns import Verdict
from pykraft.storage.compaction_rules import ProducerLast
from pykraft.storage.offset_map import ENTRY_BYTES, OffsetMap

from .cleaner_helpers import KEY, new_log
from .test_cleaner_fast_path import CONFIG, SEED, _builder_batch, _clean, _files, _write


def _batches(rng: random.Random, n: int, singles: bool = True) -> list[bytes | None]:
    """Batches of one key each (wholly superseded by a later one, or wholly kept), of mixed keys (rebuilt), with
    tombstones, keyless records and an idempotent producer."""
    found: list[bytes | None] = []
    for i in range(n):
        shape = rng.randrange(5) if singles else rng.randrange(2, 5)
        if shape < 2:
            key = b"one-%d" % rng.randrange(6)
            value = None if rng.random() < 0.3 else b"v" * rng.randrange(1, 300)
            records = [SimpleRecord(value, key) for _ in range(rng.randrange(1, 5))]
            found.append(encode_batch(records, base_offset=0, partition_leader_epoch=1, timestamp_ms=20_000 + i))
        elif shape == 2:  # the producer's batches of one key: its last one stays, emptied if superseded
            found.append(_builder_batch(rng, 0, rng.randrange(1, 4), 1, producer=7, sequence=i * 40))
        else:
            found.append(_builder_batch(rng, 0, rng.randrange(1, 20), 40, value_sizes=(0, 300)))
        if rng.random() < 0.1:
            found.append(None)
    return found


def test_batches_decided_from_the_map_rows_are_written_as_record_by_record(tmp_path, monkeypatch) -> None:
    answered: list[int] = []
    real = MappedRecords.decide

    def counted(self, *args, **kwargs):
        found = real(self, *args, **kwargs)
        answered.extend(0 if out is None else 1 if out is args[0][i][1].buffer else 2 if not count else 3
                        for i, (out, count) in found.items())
        return found

    monkeypatch.setattr(cleaner_mapped.MappedRecords, "decide", counted)
    real_skip = DroppedBatches.skip

    def skip(self, segment: int, position: int) -> tuple[int, int, int]:
        found = real_skip(self, segment, position)
        if found[0] > position:
            answered.append(4)
        return found

    monkeypatch.setattr(cleaner_skips.DroppedBatches, "skip", skip)
    monkeypatch.setattr(cleaner, "_SKIP_SHARE", 1 << 40)  # every run skipped, however short
    roots = {True: str(tmp_path / "fast"), False: str(tmp_path / "slow")}
    for root in roots.values():
        new_log(root, CONFIG).close()
    directories = {fast: os.path.join(root, f"{KEY[0]}-{KEY[1]}") for fast, root in roots.items()}
    rng = random.Random(11)
    end = 0
    for now in (30_000, 30_000, 34_999, 35_000, 40_000, 40_000, 46_000):  # horizons set, waited for, passed
        batches = _batches(rng, 40, singles=now < 40_000)  # then the last tombstones of some keys stay latest
        last = None
        for raw in batches:
            if raw is not None:
                end += int.from_bytes(raw[23:27], "big") + 1
                last = end - 1 if int.from_bytes(raw[43:51], "big") == 7 else last
        producers = {7: ProducerLast(last_data_offset=last, epoch=0)} if last is not None else {}
        results = {}
        for fast, root in roots.items():
            _write(root, batches)
            results[fast] = _clean(root, fast, now, 1 << 20, producers)
        assert results[True] == results[False]
        assert _files(directories[True]) == _files(directories[False])
    # kept whole, emptied, rebuilt from the rows' places in the rewrite's chunk, runs of dropped batches not read
    assert min(answered.count(1), answered.count(2), answered.count(3), answered.count(4)) > 0


def _rows(offsets: list[int], base: int) -> tuple[np.ndarray, ...]:
    omap = OffsetMap(1000 * ENTRY_BYTES, seed=SEED)
    n = len(offsets)
    high = np.arange(n, dtype=np.uint64) + np.uint64(1)
    return (np.array(offsets, dtype=np.int64), np.full(n, base, dtype=np.int64), high, high,
            np.zeros(n, dtype=bool)), omap


def test_rows_whose_offsets_do_not_increase_decide_nothing() -> None:
    raw = encode_batch([SimpleRecord(b"v", b"k%d" % i) for i in range(3)], base_offset=10, partition_leader_epoch=1,
                       timestamp_ms=1)
    batch = next(iter(iter_batches(raw, verify_crc=False)))
    verdicts = [Verdict(False, False, None)]
    for offsets, answered in (([10, 11, 12], True), ([10, 12, 11], False)):
        columns, omap = _rows(offsets, 10)
        omap.clear()
        omap.put_run(columns[2], columns[3], columns[0])
        rows = MappedRecords(100)
        rows.add(columns[0], columns[1], columns[4])
        rows.seal(omap)
        found = rows.decide([(0, batch)], [0], verdicts, producers={}, upper_bound=100, now_ms=0)
        assert (found == {0: (batch.buffer, 3)}) if answered else found == {}


def test_rows_past_the_limit_are_not_kept() -> None:
    rows = MappedRecords(5)
    first, _ = _rows([1, 2, 3], 1)
    second, _ = _rows([4, 5, 6], 4)
    third, _ = _rows([7], 7)
    rows.add(first[0], first[1], first[4])
    rows.add(second[0], second[1], second[4])  # would make 6 rows: refused, and nothing after it is kept either
    rows.add(third[0], third[1], third[4])
    assert rows.rows == 3


def test_runs_of_dropped_batches_touching_in_the_file_are_skipped_from_a_minimum_size() -> None:
    position = np.array([0, 100, 200, 300, 450, 500, 600], dtype=np.int64)
    size = np.array([100, 100, 100, 150, 50, 100, 100], dtype=np.int64)
    count = np.arange(1, 8, dtype=np.int64)
    dropped = np.array([True, True, False, True, True, False, True])
    runs = cleaner_skips._runs(position, size, count, dropped, 0)
    assert (runs.starts, runs.ends, runs.counts) == ([0, 300, 600], [200, 500, 700], [3, 9, 7])
    runs = cleaner_skips._runs(position, size, count, dropped, 200)
    assert (runs.starts, runs.ends) == ([0, 300], [200, 500])
    gap = position.copy()
    gap[1] = 150  # not touching the batch before it: a run of its own
    assert cleaner_skips._runs(gap, size, count, dropped, 0).starts == [0, 150, 300, 600]
