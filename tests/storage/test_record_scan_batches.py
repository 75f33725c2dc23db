"""The record scan over many batches at once (records/record_scan.py), as the cleaner's windows give it: batches of
records of varied sizes and counts are framed a record index per numpy step across all of them, then checked; a
batch the checks refuse is walked in Python. Whatever the batches (mangled bytes, records of 8 KiB and more whose
length takes three bytes, counts from 1 to 300), the scan of the run refuses it exactly when `record_keys` refuses
one of its batches, and otherwise finds each batch's records as `record_keys` does."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.rebuild import record_keys
from pykraft.records.record_scan import scan_records

_HEADER = 61


def _batch(rng: random.Random) -> bytes:
    count = rng.choice([1, 2, rng.randrange(1, 40), rng.randrange(100, 300)])
    large = rng.random() < 0.1  # a record of 8 KiB or more: its length varint takes three bytes
    records = []
    for i in range(count):
        size = rng.randrange(8200, 9000) if large and i == count // 2 else rng.randrange(0, 300)
        value = None if rng.random() < 0.05 else bytes(rng.getrandbits(8) for _ in range(min(size, 16))) * \
            (size // 16 + 1)
        key = None if rng.random() < 0.05 else b"key-%d" % rng.randrange(10**rng.randrange(1, 9))
        records.append(SimpleRecord(value[:size] if value is not None else None, key))
    return encode_batch(records, base_offset=0, partition_leader_epoch=1, timestamp_ms=rng.randrange(10**6))


def _walked(section: bytes, count: int):
    try:
        return record_keys(section, count)
    except Exception:  # any refusal
        return None


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 10**6), flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                                                    max_size=2))
def test_a_run_of_batches_is_framed_as_record_keys_frames_each(seed: int, flips) -> None:
    rng = random.Random(seed)
    raw = bytearray(b"".join(_batch(rng) for _ in range(rng.randrange(1, 12))))
    batches = list(iter_batches(bytes(raw), verify_crc=False))
    bodies, position = [], 0
    for batch in batches:
        bodies.append((position + _HEADER, position + batch.size_in_bytes, batch.record_count))
        position += batch.size_in_bytes
    for at, value in flips:  # mangle the records, not the batch headers (the cleaner reads those first)
        start, end, _ = bodies[at % len(bodies)]
        if end > start:
            raw[start + at % (end - start)] = value
    raw_bytes = bytes(raw)
    columns = scan_records(raw_bytes + bytes(8), bodies)
    walked = [_walked(raw_bytes[start:end], count) for start, end, count in bodies]
    if any(w is None for w in walked):
        assert columns is None
        return
    assert columns is not None
    rows = [r for w in walked for r in w]
    starts = [start for (start, _, _), w in zip(bodies, walked) for _ in w]
    assert columns.offset_delta.tolist() == [r.offset_delta for r in rows]
    assert (columns.tail - starts).tolist() == [r.tail for r in rows]
    assert (columns.end - starts).tolist() == [r.end for r in rows]
    assert columns.null_value.tolist() == [r.null_value for r in rows]
    keys = [None if n < 0 else raw_bytes[s:s + n] for s, n in zip(columns.key_start.tolist(),
                                                                  columns.key_length.tolist())]
    assert keys == [None if r.key is None else bytes(r.key) for r in rows]
    assert columns.first.tolist()[-1] == len(rows)
