"""The cleaner's record walk and its rebuilt and empty batches, checked against pykraft's full decode and two
independent codecs (aiokafka's and kafka-python's): offsets kept, producer fields kept, timestamps recomputed
from the new base (or the delete horizon), every codec."""

from __future__ import annotations

import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder

from pykraft.records import Compression, MalformedBatchError, SimpleRecord, encode_batch, iter_batches
from pykraft.records.batch import ATTR_DELETE_HORIZON
from pykraft.records.rebuild import delete_horizon, empty_batch, rebuild_batch, record_keys, records_section


def producer_batch(codec: int = 0, count: int = 6, log_append_time: bool = False) -> bytes:
    """An idempotent producer's batch from kafka-python's builder: producer 42, epoch 3, base sequence 100."""
    builder = KpBuilder(2, codec, 0, 42, 3, 100, 1 << 20)
    for i in range(count):
        key = None if i == 4 else f"key-{i % 3}".encode()
        value = None if i == 2 else f"value-{i}".encode() * 3
        builder.append(i, 5000 + 7 * i, key, value, [("h", b"x")] if i == 1 else [])
    raw = bytearray(builder.build())
    raw[0:8] = (1000).to_bytes(8, "big")  # base offset 1000 (not covered by the CRC)
    if log_append_time:
        return relabel(raw, attributes_or=0x08, max_timestamp=9999)
    return bytes(raw)


def relabel(raw: bytearray, attributes_or: int, max_timestamp: int) -> bytes:
    from pykraft.records.crc import crc32c

    attributes = int.from_bytes(raw[21:23], "big") | attributes_or
    raw[21:23] = attributes.to_bytes(2, "big")
    raw[35:43] = max_timestamp.to_bytes(8, "big")
    raw[17:21] = crc32c(memoryview(raw)[21:]).to_bytes(4, "big")
    return bytes(raw)


def only(raw: bytes):
    (batch,) = list(iter_batches(raw))
    return batch


def test_record_keys_matches_the_full_decode() -> None:
    batch = only(producer_batch())
    walked = record_keys(records_section(batch), batch.record_count)
    full = list(batch.records())
    assert [batch.base_offset + r.offset_delta for r in walked] == [r.offset for r in full]
    assert [r.key for r in walked] == [None if r.key is None else bytes(r.key) for r in full]
    assert [r.null_value for r in walked] == [r.value is None for r in full]
    assert [batch.base_timestamp + r.timestamp_delta for r in walked] == [r.timestamp for r in full]


def test_record_keys_refuses_framing_that_does_not_add_up() -> None:
    batch = only(producer_batch())
    body = records_section(batch)
    with pytest.raises(MalformedBatchError):
        record_keys(body, batch.record_count + 1)
    with pytest.raises(MalformedBatchError):
        record_keys(body + b"\x00", batch.record_count)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4,
                                   Compression.ZSTD])
def test_a_rebuilt_batch_keeps_offsets_and_producer_fields_and_reads_in_other_codecs(codec: int) -> None:
    batch = only(producer_batch(codec))
    body = records_section(batch)
    walked = record_keys(body, batch.record_count)
    kept = [walked[1], walked[3], walked[5]]
    raw = rebuild_batch(batch, body, kept, None)
    rebuilt = only(raw)
    assert rebuilt.crc_valid and rebuilt.compression == codec
    assert (rebuilt.base_offset, rebuilt.last_offset, rebuilt.record_count) == (1000, 1005, 3)
    assert (rebuilt.producer_id, rebuilt.producer_epoch, rebuilt.base_sequence) == (42, 3, 100)
    assert rebuilt.partition_leader_epoch == batch.partition_leader_epoch
    assert delete_horizon(rebuilt) is None
    assert rebuilt.base_timestamp == 5007 and rebuilt.max_timestamp == 5035  # first and last kept record
    original = {r.offset: r for r in batch.records()}
    for record in rebuilt.records():
        before = original[record.offset]
        assert (record.timestamp, record.key, record.value, record.headers) == \
            (before.timestamp, before.key, before.value, before.headers)
    for theirs in (KpBatch(raw), AioBatch(bytearray(raw))):
        assert theirs.validate_crc()
        assert [(r.offset, r.timestamp, r.key) for r in theirs] == \
            [(1001, 5007, b"key-1"), (1003, 5021, b"key-0"), (1005, 5035, b"key-2")]


def test_a_delete_horizon_becomes_the_base_timestamp_and_record_times_stay() -> None:
    batch = only(producer_batch())
    body = records_section(batch)
    walked = record_keys(body, batch.record_count)
    raw = rebuild_batch(batch, body, [walked[2], walked[5]], 86_400_000)
    rebuilt = only(raw)
    assert rebuilt.attributes & ATTR_DELETE_HORIZON and delete_horizon(rebuilt) == 86_400_000
    assert [(r.offset, r.timestamp, r.value) for r in rebuilt.records()] == \
        [(1002, 5014, None), (1005, 5035, b"value-5" * 3)]
    assert [(r.offset, r.timestamp) for r in KpBatch(raw)] == [(1002, 5014), (1005, 5035)]
    again = rebuild_batch(rebuilt, records_section(rebuilt), record_keys(records_section(rebuilt), 2)[1:], 86_400_000)
    assert [(r.offset, r.timestamp) for r in only(again).records()] == [(1005, 5035)]


def test_a_log_append_time_batch_keeps_its_append_time() -> None:
    batch = only(producer_batch(log_append_time=True))
    body = records_section(batch)
    rebuilt = only(rebuild_batch(batch, body, record_keys(body, batch.record_count)[3:4], None))
    assert rebuilt.max_timestamp == 9999 and rebuilt.attributes & 0x08
    assert [r.offset for r in KpBatch(bytes(rebuilt.buffer))] == [1003]
    assert KpBatch(bytes(rebuilt.buffer)).timestamp_type == 1


def test_an_empty_batch_keeps_the_producers_sequence_and_epoch() -> None:
    batch = only(producer_batch(Compression.GZIP))
    raw = empty_batch(batch)
    empty = only(raw)
    assert len(raw) == 61 and empty.crc_valid and empty.record_count == 0 and list(empty.records()) == []
    assert (empty.base_offset, empty.last_offset) == (1000, 1005)
    assert (empty.producer_id, empty.producer_epoch, empty.base_sequence) == (42, 3, 100)
    assert empty.compression == Compression.NONE and empty.base_timestamp == -1
    assert empty.max_timestamp == batch.max_timestamp
    theirs = KpBatch(raw)
    assert theirs.validate_crc() and list(theirs) == [] and theirs.producer_id == 42


def test_a_rebuilt_plain_batch_is_the_batch_kafka_would_build() -> None:
    records = [SimpleRecord(f"v{i}".encode(), f"k{i}".encode(), timestamp_ms=100 + i) for i in range(4)]
    batch = only(encode_batch(records, base_offset=50, partition_leader_epoch=2, timestamp_ms=0))
    body = records_section(batch)
    walked = record_keys(body, 4)
    rebuilt = rebuild_batch(batch, body, walked[2:], None)
    # Kafka's builder: base offset 50, offset deltas 2 and 3, base timestamp = the first kept record's.
    expected = bytearray(encode_batch(records[2:], base_offset=52, partition_leader_epoch=2, timestamp_ms=0))
    assert only(rebuilt).base_timestamp == 102
    assert [(r.offset, r.timestamp, r.key) for r in only(rebuilt).records()] == \
        [(r.offset, r.timestamp, r.key) for r in only(bytes(expected)).records()]
