"""Many batches rebuilt at once (records/rebuild_many.py, the cleaner's fast path) against `rebuild_batch`, one at a
time, record by record: the same bytes for random batches and kept subsets, with timestamps that move both ways
(deltas of one to ten varint bytes), offset deltas past 64 and 8192 (longer varints), records of 8 KiB and more
(a three-byte length), headers, null keys and values, log-append-time batches and delete horizons."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings, strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder

from pykraft.records import iter_batches
from pykraft.records.rebuild import rebuild_batch, record_keys, records_section
from pykraft.records.rebuild_many import rebuild_many

from .test_rebuild import relabel


def _batch(rng: random.Random, count: int, log_append_time: bool) -> bytes:
    builder = KpBuilder(2, 0, 0, rng.choice([-1, 42]), 0, rng.choice([-1, 7]), 1 << 26)
    base = rng.randrange(0, 1 << 41)
    for i in range(count):
        key = None if rng.random() < 0.1 else b"k%d" % rng.randrange(50)
        value = None if rng.random() < 0.1 else b"v" * rng.choice([0, 5, 200, 9000])
        stamp = base + rng.choice([0, 1, -3, 1 << 20, -(1 << 35), 1 << 40])
        headers = [("h", b"x" * rng.randrange(3))] if rng.random() < 0.2 else []
        builder.append(i, max(stamp, 0), key, value, headers)
    raw = bytearray(builder.build())
    raw[0:8] = rng.randrange(0, 1 << 40).to_bytes(8, "big")
    return relabel(raw, 0x08, base + 5) if log_append_time else bytes(raw)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6))
def test_batches_rebuilt_at_once_are_those_rebuilt_one_at_a_time(seed: int, how_many: int) -> None:
    rng = random.Random(seed)
    raws = [_batch(rng, rng.choice([1, 3, 70, 9000 if rng.random() < 0.1 else 100]), rng.random() < 0.3)
            for _ in range(how_many)]
    chunk = b"".join(raws)
    batches = list(iter_batches(chunk, verify_crc=True))
    expected, horizons = [], []
    owner, offset_delta, timestamp_delta, tail, end = [], [], [], [], []
    position = 0
    for j, batch in enumerate(batches):
        records = record_keys(records_section(batch), batch.record_count)
        kept = sorted(rng.sample(range(len(records)), rng.randint(1, len(records))))
        horizon = rng.choice([None, batch.max_timestamp + 1000, 0])
        horizons.append(horizon)
        expected.append(rebuild_batch(batch, records_section(batch), [records[i] for i in kept], horizon))
        body = position + 61  # the records section's place in the chunk
        for i in kept:
            r = records[i]
            owner.append(j)
            offset_delta.append(r.offset_delta)
            timestamp_delta.append(r.timestamp_delta)
            tail.append(body + r.tail)
            end.append(body + r.end)
        position += batch.size_in_bytes
    columns = [np.array(c, dtype=np.int64) for c in (owner, offset_delta, timestamp_delta, tail, end)]
    assert rebuild_many(batches, horizons, chunk, *columns) == expected
