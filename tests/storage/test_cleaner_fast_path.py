"""The cleaner's fast path (chunks of record columns, cleaner_chunks.py) against its record-by-record path
(`Cleaner(fast=False)`, a `KeyedRecord` per record): the same log cleaned both ways, pass after pass, leaves the
same segment files byte for byte (log, indexes, checkpoint) and the same stats, whatever the records: sizes that
vary or not, tombstones and their delete horizons, keyless records, long keys, records of 8 KiB and more, every
codec, idempotent producers' batches, log-append-time batches, transaction markers, offset gaps left by earlier
passes, a dedupe buffer that fills. And the record scan against `record_keys` on mangled batches: where the walk
refuses a batch the scan refuses it, where it accepts one the scan finds the same records."""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from pykraft.records import Compression, SimpleRecord, encode_batch, iter_batches
from pykraft.records.crc import crc32c
from pykraft.records.rebuild import record_keys
from pykraft.records.record_scan import every_record_keyed, scan_records
from pykraft.storage.cleaner import Cleaner
from pykraft.storage.cleaner_chunks import scan_chunk
from pykraft.storage.cleaner_manager import CleanableLog, CleanerManager, CompactionSettings, clean_once
from pykraft.storage.compaction_rules import ProducerLast
from pykraft.storage.files import CLEANER_CHECKPOINT
from pykraft.storage.file_log import LogConfig
from pykraft.storage.offset_map import ENTRY_BYTES, OffsetMap, Throttler

from .cleaner_helpers import KEY, new_log, reopen

CONFIG = LogConfig(segment_bytes=16 * 1024, index_interval_bytes=512, allow_offset_gaps=True)
SETTINGS = CompactionSettings(min_cleanable_ratio=0.0, segment_bytes=16 * 1024, delete_retention_ms=5000)
SEED = b"differential"


def _append(log, raw: bytes | bytearray) -> None:
    raw = bytearray(raw)
    raw[0:8] = log.end_offset().to_bytes(8, "big")
    raw[12:16] = (1).to_bytes(4, "big")  # the leader epoch (not covered by the CRC)
    log.append_as_follower(bytes(raw), 1)


def _commit_marker(stamp: int) -> bytes:
    """A transaction's COMMIT marker of producer 7 (a control batch, transactional): the cleaner keeps it."""
    raw = bytearray(encode_batch([SimpleRecord(b"\x00\x00\x00\x00\x00\x00", b"\x00\x00\x00\x01")], base_offset=0,
                                 partition_leader_epoch=1, timestamp_ms=stamp, control=True))
    raw[21:23] = (0x30).to_bytes(2, "big")  # control | transactional
    raw[43:51] = (7).to_bytes(8, "big")
    raw[51:53] = (0).to_bytes(2, "big")
    raw[17:21] = crc32c(memoryview(raw)[21:]).to_bytes(4, "big")
    return bytes(raw)


def _builder_batch(rng: random.Random, codec: int, count: int, keys: int, *, producer: int = -1, sequence: int = -1,
                   log_append_time: bool = False, value_sizes: tuple[int, int] = (0, 60)) -> bytes:
    """kafka-python's builder: timestamps that move within the batch, headers now and then, every codec."""
    builder = DefaultRecordBatchBuilder(2, codec, 1 if log_append_time else 0, producer, 0 if producer >= 0 else -1,
                                        sequence, 1 << 22)
    stamp = 10_000 + rng.randrange(1000)
    for i in range(count):
        key = None if rng.random() < 0.03 else b"k%d" % rng.randrange(keys)
        value = None if key is not None and rng.random() < 0.1 else rng.randbytes(rng.randrange(*value_sizes))
        headers = [("h", b"x")] if rng.random() < 0.05 else []
        stamp += rng.choice((0, 0, 1, 70))
        builder.append(i, stamp, key, value, headers)
    return bytes(builder.build())


def _varied_batches(rng: random.Random, count: int) -> list[bytes | None]:
    """Many shapes of batches, keys overwritten many times (None: roll a segment there)."""
    found: list[bytes | None] = []
    for n in range(count):
        shape = rng.randrange(10)
        if shape == 0:
            found.append(_builder_batch(rng, rng.choice(list(Compression)), rng.randrange(1, 40), 50))
        elif shape == 1:
            found.append(_builder_batch(rng, 0, rng.randrange(1, 30), 50, producer=7, sequence=n * 40))
        elif shape == 2:
            found.append(_builder_batch(rng, 0, rng.randrange(1, 20), 50, log_append_time=True))
        elif shape == 3:  # fixed-size records in big batches: the framing is guessed, deltas past 64
            size = rng.randrange(5, 200)
            records = [SimpleRecord(b"v" * size, b"key-%04d" % rng.randrange(60)) for _ in range(rng.randrange(60, 140))]
            found.append(encode_batch(records, base_offset=0, partition_leader_epoch=1, timestamp_ms=20_000 + n))
        elif shape == 4:  # large records (3-byte lengths) and long keys (hashed through their digest)
            records = [SimpleRecord(rng.randbytes(rng.choice((10, 9000))), b"L" * rng.choice((4, 300, 700)) +
                                    b"%d" % rng.randrange(3)) for _ in range(rng.randrange(1, 4))]
            found.append(encode_batch(records, base_offset=0, partition_leader_epoch=1, timestamp_ms=20_000 + n))
        elif shape == 5:
            found.append(_commit_marker(20_000 + n))
        else:
            found.append(_builder_batch(rng, 0, rng.randrange(1, 12), 50, value_sizes=(0, 400)))
        if rng.random() < 0.1:
            found.append(None)
    return found


def _write(root: str, batches: list[bytes | None]) -> None:
    log, _ = reopen(root, CONFIG)
    for raw in batches:
        if raw is None:
            log.roll()
        else:
            _append(log, raw)
    log.roll()
    log.close()


def _files(directory: str) -> dict[str, bytes]:
    return {name: open(os.path.join(directory, name), "rb").read() for name in sorted(os.listdir(directory))
            if name.endswith((".log", ".index", ".timeindex"))}


def _clean(root: str, fast: bool, now_ms: int, buffer: int, producers) -> tuple | None:
    log, _ = reopen(root, CONFIG)
    log.update_high_watermark(log.end_offset())  # committed (a broker keeps it in replication-offset-checkpoint)
    try:
        cleaner = Cleaner(OffsetMap(buffer, seed=SEED), 2048, Throttler(float("inf"), time.monotonic_ns()), fast=fast)
        offered = CleanableLog(KEY, root, log, SETTINGS, producers)
        result = clean_once(CleanerManager([root]), cleaner, [offered], now_ms)
        if result is None:
            return None
        task, end, stats = result
        return end, (stats.bytes_read, stats.bytes_written, stats.messages_read, stats.messages_written,
                     stats.invalid_messages, stats.map_bytes_read, stats.map_messages_read)
    finally:
        log.close()


@pytest.mark.parametrize("seed, buffer", [(1, 1 << 20), (2, 1 << 20), (3, 40 * ENTRY_BYTES), (4, 200 * ENTRY_BYTES)])
def test_the_fast_path_writes_the_bytes_of_the_record_by_record_path(tmp_path, monkeypatch, seed: int,
                                                                     buffer: int) -> None:
    from pykraft.storage import cleaner

    scans: list[bool] = []

    def counted(*args, **kwargs):
        found = scan_chunk(*args, **kwargs)
        scans.append(found is not None)
        return found

    monkeypatch.setattr(cleaner, "scan_chunk", counted)
    roots = {True: str(tmp_path / "fast"), False: str(tmp_path / "slow")}
    for root in roots.values():
        new_log(root, CONFIG).close()
    rng = random.Random(seed)
    producers = {7: ProducerLast(last_data_offset=None, epoch=0)}
    directories = {fast: os.path.join(root, f"{KEY[0]}-{KEY[1]}") for fast, root in roots.items()}
    passes = appended = 0
    for now in (30_000, 30_000, 34_999, 35_000, 40_000, 40_000, 40_000):  # horizons set, waited for, passed
        batches = _varied_batches(rng, 25)
        appended += sum(len(raw) for raw in batches if raw is not None)
        results = {}
        for fast, root in roots.items():
            _write(root, batches)
            results[fast] = _clean(root, fast, now, buffer, producers)
        assert results[True] == results[False]
        assert _files(directories[True]) == _files(directories[False])
        passes += results[True] is not None
    assert passes == 7
    assert sum(scans) > 0.9 * len(scans)  # the chunks went the fast way (a few hold a malformed-looking batch)
    kept = sum(len(data) for name, data in _files(directories[True]).items() if name.endswith(".log"))
    assert kept < appended / 3 or buffer < 1 << 20  # a small map cleans a little of the log a pass
    checkpoints = [open(os.path.join(root, CLEANER_CHECKPOINT)).read() for root in roots.values()]
    assert checkpoints[0] == checkpoints[1]


def test_a_pass_with_a_filling_map_maps_the_same_records_either_way(tmp_path) -> None:
    """Kafka's rule when the dedupe buffer fills: stop at the first keyed record it cannot take, clean up to the
    last mapped offset. The fast path maps a chunk at once and must stop at that same record."""
    ends = {}
    for fast in (True, False):
        root = str(tmp_path / str(fast))
        log = new_log(root, CONFIG)
        rng = random.Random(5)
        for _ in range(40):
            records = [SimpleRecord(b"v", b"key-%03d" % rng.randrange(300)) for _ in range(25)]
            _append(log, encode_batch(records, base_offset=0, partition_leader_epoch=1, timestamp_ms=1))
        log.roll()
        log.update_high_watermark(log.end_offset())
        log.close()
        ends[fast] = [_clean(root, fast, 10_000, 100 * ENTRY_BYTES, {}) for _ in range(4)]
    assert ends[True] == ends[False]
    assert [end for end, _ in ends[True]][:2] == sorted(end for end, _ in ends[True])[:2]
    assert ends[True][0][0] < 1000  # the map (90 keys) filled during the first pass


# ---- the scan against record_keys ------------------------------------------------------------------------------


def _scan_one(raw: bytes):
    batch = next(iter_batches(raw, verify_crc=False))
    return scan_records(raw + bytes(8), [(61, batch.size_in_bytes, batch.record_count)]), batch


def _walked(raw: bytes):
    batch = next(iter_batches(raw, verify_crc=False))
    try:
        return record_keys(bytes(batch.buffer[61:]), batch.record_count)
    except Exception:  # any refusal
        return None


def _same(columns, walked, raw: bytes) -> None:
    rows = np.arange(len(walked))
    assert columns.offset_delta.tolist() == [r.offset_delta for r in walked]
    assert columns.timestamp_deltas(rows).tolist() == [r.timestamp_delta for r in walked]
    assert (columns.tail - 61).tolist() == [r.tail for r in walked]
    assert (columns.end - 61).tolist() == [r.end for r in walked]
    assert columns.null_value.tolist() == [r.null_value for r in walked]
    keys = [None if n < 0 else raw[s:s + n] for s, n in zip(columns.key_start.tolist(), columns.key_length.tolist())]
    assert keys == [None if r.key is None else bytes(r.key) for r in walked]


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10**6), flips=st.lists(st.tuples(st.integers(61, 4000), st.integers(0, 255)),
                                                    max_size=3))
def test_the_scan_refuses_what_the_walk_refuses_and_agrees_on_the_rest(seed: int, flips) -> None:
    rng = random.Random(seed)
    if rng.random() < 0.5:
        size = rng.randrange(1, 100)
        raw = bytearray(encode_batch([SimpleRecord(b"v" * size, b"k%d" % i) for i in range(rng.randrange(1, 90))],
                                     base_offset=0, partition_leader_epoch=1, timestamp_ms=5))
    else:
        raw = bytearray(_builder_batch(rng, 0, rng.randrange(1, 90), 20))
    for position, value in flips:
        if position < len(raw):
            raw[position] = value
    columns, batch = _scan_one(bytes(raw))
    walked = _walked(bytes(raw))
    keyed = every_record_keyed(bytes(raw[61:]), batch.record_count)  # a compacted topic's produce check
    if walked is None:
        assert columns is None and keyed is None
    elif columns is not None:
        _same(columns, walked, bytes(raw) + bytes(8))
        assert keyed == all(r.key is not None for r in walked)
