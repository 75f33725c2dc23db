"""Record batch v2 encode/decode: round trips, header fields and byte layout."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.records import (
    BATCH_HEADER_SIZE,
    SimpleRecord,
    encode_batch,
    iter_batches,
    set_base_offset,
    set_partition_leader_epoch,
)

from .batch_helpers import TIMESTAMPS, decoded, record_lists


def expected(records, base_offset, timestamp_ms):
    return [
        (
            base_offset + i,
            timestamp_ms if r.timestamp_ms is None else r.timestamp_ms,
            r.key,
            r.value,
            tuple(r.headers),
        )
        for i, r in enumerate(records)
    ]


@given(
    records=record_lists,
    base_offset=st.integers(0, 2**62),
    epoch=st.integers(-1, 2**31 - 1),
    timestamp=TIMESTAMPS,
    control=st.booleans(),
)
def test_encode_then_decode_returns_the_same_records(records, base_offset, epoch, timestamp, control):
    raw = encode_batch(records, base_offset=base_offset, partition_leader_epoch=epoch, timestamp_ms=timestamp, control=control)
    (batch,) = list(iter_batches(raw))
    assert batch.base_offset == base_offset
    assert batch.last_offset == base_offset + len(records) - 1
    assert batch.partition_leader_epoch == epoch
    assert batch.is_control == control
    assert batch.record_count == len(records)
    assert batch.size_in_bytes == len(raw)
    assert batch.crc_valid
    assert decoded(batch) == expected(records, base_offset, timestamp)


@given(records=record_lists, timestamp=TIMESTAMPS)
def test_batch_timestamps_span_the_record_timestamps(records, timestamp):
    raw = encode_batch(records, base_offset=0, partition_leader_epoch=0, timestamp_ms=timestamp)
    (batch,) = list(iter_batches(raw))
    stamps = [timestamp if r.timestamp_ms is None else r.timestamp_ms for r in records]
    assert batch.base_timestamp == min(stamps)
    assert batch.max_timestamp == max(stamps)


def test_header_layout_matches_kafka():
    raw = encode_batch([SimpleRecord(b"v")], base_offset=7, partition_leader_epoch=3, timestamp_ms=1234, control=True)
    fields = struct.unpack_from(">qiibIhiqqqhii", raw)
    base_offset, length, epoch, magic, _crc, attributes, last_delta, base_ts, max_ts, pid, pepoch, seq, count = fields
    assert (base_offset, length, epoch, magic) == (7, len(raw) - 12, 3, 2)
    assert attributes == 0x20  # control bit, no compression, CreateTime, not transactional
    assert (last_delta, base_ts, max_ts, count) == (0, 1234, 1234, 1)
    assert (pid, pepoch, seq) == (-1, -1, -1)
    # record: length 7, attributes 0, ts delta 0, offset delta 0, key -1, value len 1 'v', 0 headers
    assert raw[BATCH_HEADER_SIZE:] == bytes([14, 0, 0, 0, 1, 2]) + b"v" + bytes([0])


def test_patching_offset_and_epoch_keeps_the_crc_valid():
    raw = bytearray(encode_batch([SimpleRecord(b"a"), SimpleRecord(b"b")], base_offset=0, partition_leader_epoch=0, timestamp_ms=1))
    set_base_offset(raw, 100)
    set_partition_leader_epoch(raw, 9)
    (batch,) = list(iter_batches(raw))
    assert (batch.base_offset, batch.partition_leader_epoch, batch.crc_valid) == (100, 9, True)
    assert [r.offset for r in batch.records()] == [100, 101]


def test_empty_batch_is_refused():
    with pytest.raises(ValueError):
        encode_batch([], base_offset=0, partition_leader_epoch=0, timestamp_ms=0)


def test_concatenated_batches_are_walked_in_order_without_copying():
    first = encode_batch([SimpleRecord(b"x" * 10)], base_offset=0, partition_leader_epoch=1, timestamp_ms=0)
    second = encode_batch([SimpleRecord(b"y" * 10)] * 3, base_offset=1, partition_leader_epoch=2, timestamp_ms=0)
    segment = bytearray(first + second)
    batches = list(iter_batches(segment))
    assert [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in batches] == [(0, 0, 1), (1, 3, 2)]
    value = next(batches[1].records()).value
    assert isinstance(value, memoryview) and value.obj is segment  # a view of the scanned buffer, not a copy
