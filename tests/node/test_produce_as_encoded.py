"""A produced batch appended as it arrived (node/runtime/writes.py `plain_batches`, raft/accumulator.py
`append_encoded`): the log holds exactly what the leader would have encoded itself, only plain batches take the
path, anything malformed is still refused, and order and size limits are kept."""

from __future__ import annotations

import struct

import pytest

from pykraft.node.runtime.writes import _values, plain_batches
from pykraft.raft.accumulator import BatchAccumulator, RecordBatchTooLargeError
from pykraft.records import RecordsError, SimpleRecord, encode_batch, iter_batches
from pykraft.records.compression import Compression

NOW = 1_700_000_000_123


def client_batch(values, *, timestamp_ms=NOW - 5000, **record_fields) -> bytes:
    return encode_batch([SimpleRecord(value=v, **record_fields) for v in values], base_offset=0,
                        partition_leader_epoch=-1, timestamp_ms=timestamp_ms)


def test_a_plain_batch_is_appended_byte_for_byte_as_the_leader_would_encode_it():
    accumulator = BatchAccumulator(epoch=7, next_offset=40, linger_ms=0, max_batch_size=1 << 20)
    plain = plain_batches(client_batch([b"a", b"bb", b"ccc"]))
    assert plain is not None and [count for _, count in plain] == [3]
    last = accumulator.append_encoded(plain[0][0], 3, NOW)
    assert last == 42 and accumulator.next_offset == 43
    (written,) = accumulator.drain(NOW)
    expected = encode_batch([SimpleRecord(value=v, timestamp_ms=NOW) for v in (b"a", b"bb", b"ccc")],
                            base_offset=40, partition_leader_epoch=7, timestamp_ms=NOW)
    assert bytes(written) == expected  # offsets, epoch, timestamps and CRC all rewritten
    (batch,) = iter_batches(written)  # the CRC checks
    assert [(r.offset, r.timestamp, bytes(r.value)) for r in batch.records()] == [
        (40, NOW, b"a"), (41, NOW, b"bb"), (42, NOW, b"ccc")]


def test_keys_and_headers_are_kept():
    raw = client_batch([b"v"], key=b"k", headers=(("h", b"1"),))
    plain = plain_batches(raw)
    assert plain is not None
    accumulator = BatchAccumulator(epoch=1, next_offset=0, linger_ms=0, max_batch_size=1 << 20)
    accumulator.append_encoded(plain[0][0], 1, NOW)
    (record,) = next(iter_batches(accumulator.drain(NOW)[0])).records()
    assert (bytes(record.key), bytes(record.value), [(k, bytes(v)) for k, v in record.headers]) == (
        b"k", b"v", [("h", b"1")])


def with_header(raw: bytes, fmt: str, at: int, value: int) -> bytes:
    """`raw` with one header field changed and a fresh CRC (still a valid batch)."""
    from pykraft.records.crc import crc32c
    out = bytearray(raw)
    struct.pack_into(fmt, out, at, value)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


@pytest.mark.parametrize("raw", [
    with_header(client_batch([b"a"]), ">q", 43, 1000),  # a producer id
    with_header(client_batch([b"a"]), ">h", 21, 0x08),  # LogAppendTime attribute
    encode_batch([SimpleRecord(value=b"a", timestamp_ms=NOW), SimpleRecord(value=b"b", timestamp_ms=NOW + 1)],
                 base_offset=0, partition_leader_epoch=-1, timestamp_ms=NOW),  # a record off the batch timestamp
], ids=["producer-id", "attributes", "timestamp-delta"])
def test_other_batches_take_the_re_encoding_path(raw):
    assert plain_batches(raw) is None
    assert _values(raw)  # ... which accepts them, as before


def test_a_compressed_batch_takes_the_re_encoding_path():
    from pykraft.records.compression import compress
    plain = client_batch([b"a", b"b"])
    body = compress(Compression.GZIP, plain[61:])
    out = bytearray(plain[:61]) + body
    struct.pack_into(">i", out, 8, len(out) - 12)
    raw = with_header(bytes(out), ">h", 21, int(Compression.GZIP))
    assert plain_batches(raw) is None
    assert _values(raw) == [b"a", b"b"]


def test_malformed_input_is_refused_as_before():
    good = client_batch([b"a", b"b"])
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF  # CRC mismatch
    truncated_record = bytearray(good[:-1])
    struct.pack_into(">i", truncated_record, 8, len(truncated_record) - 12)  # CRC-valid, records do not decode
    bad_records = with_header(bytes(truncated_record), ">h", 21, 0)
    control = with_header(good, ">h", 21, 0x20)
    for raw in (bytes(corrupt), bad_records, control, b""):
        with pytest.raises(RecordsError):
            plain_batches(raw)
        with pytest.raises(RecordsError):
            _values(raw)


def test_order_with_buffered_records_and_the_size_limit():
    accumulator = BatchAccumulator(epoch=3, next_offset=10, linger_ms=25, max_batch_size=200)
    assert accumulator.append([b"buffered"], NOW) == 10  # waits for the linger
    plain = plain_batches(client_batch([b"x", b"y"]))
    assert plain is not None
    assert accumulator.append_encoded(plain[0][0], 2, NOW + 1) == 12
    batches = accumulator.drain(NOW + 1)  # the encoded batch completed the buffered one before it
    offsets = [[r.offset for r in b.records()] for raw in batches for b in iter_batches(raw)]
    assert offsets == [[10], [11, 12]]
    big = plain_batches(client_batch([b"z" * 300]))
    assert big is not None
    with pytest.raises(RecordBatchTooLargeError):
        accumulator.append_encoded(big[0][0], 1, NOW)
    assert accumulator.next_offset == 13 and accumulator.is_empty()


@pytest.mark.asyncio
@pytest.mark.parametrize("version", [9, 12])
async def test_a_node_stores_a_produced_batch_as_sent_and_answers_at_the_request_version(tmp_path, version):
    import datetime

    from kio.static.primitive import i16, i32, i32Timedelta

    from pykraft.node.runtime.runtime import NodeRuntime
    from pykraft.protocol.apis import request_class
    from pykraft.protocol.errors import ErrorCode
    from pykraft.raft.config import METADATA_TOPIC

    from .helpers import call, free_ports, leader_of, make_config, wait_for

    ports = {1: free_ports(1)[0]}
    runtime = NodeRuntime(make_config(tmp_path, 1, ports))
    await runtime.start()
    try:
        await wait_for(lambda: leader_of([runtime]) is not None)
        module = __import__(request_class(0, version).__module__, fromlist=["x"])
        request = module.ProduceRequest(
            transactional_id=None, acks=i16(-1), timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
            topic_data=(module.TopicProduceData(name=METADATA_TOPIC, partition_data=(module.PartitionProduceData(
                index=i32(0), records=client_batch([b"v1", b"v2"], key=b"k", headers=(("h", b"x"),))),)),))
        response = await call(ports[1], request)
        assert int(response.__version__) == version
        partition = response.responses[0].partition_responses[0]
        assert partition.error_code == ErrorCode.NONE
        base = int(partition.base_offset)
        stored = [r for b in iter_batches(runtime.core.log.read(base, 1 << 20).records) for r in b.records()]
        assert [(r.offset, bytes(r.key), bytes(r.value), len(r.headers)) for r in stored[:2]] == [
            (base, b"k", b"v1", 1), (base + 1, b"k", b"v2", 1)]  # the re-encoding path dropped keys and headers
        assert runtime.core.high_watermark > base + 1
    finally:
        await runtime.stop()
