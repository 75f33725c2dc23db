"""Cross-checks against two independent codecs: aiokafka's (Cython) and kafka-python's (pure Python)."""

from __future__ import annotations

import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.memory_records import MemoryRecords

from pykraft.records import Compression, SimpleRecord, encode_batch, iter_batches

from .batch_helpers import TIMESTAMPS, decoded, patch_batch, record_lists


def their_view(records):
    return [(r.offset, r.timestamp, r.key, r.value, tuple((k, v) for k, v in r.headers)) for r in records]


def ours_as_theirs(batch):
    return [(o, t, k, v, h) for o, t, k, v, h in decoded(batch)]


@given(records=record_lists, base_offset=st.integers(0, 2**40), epoch=st.integers(0, 2**31 - 1), timestamp=TIMESTAMPS, control=st.booleans())
def test_pykraft_batches_parse_and_validate_in_aiokafka_and_kafka_python(records, base_offset, epoch, timestamp, control):
    raw = encode_batch(records, base_offset=base_offset, partition_leader_epoch=epoch, timestamp_ms=timestamp, control=control)
    (ours,) = list(iter_batches(raw))
    for batch in (AioBatch(bytearray(raw)), KpBatch(raw)):
        assert batch.validate_crc()
        assert batch.base_offset == base_offset
        assert batch.is_control_batch == control
        if not control:  # both skip or special-case control records when iterating
            assert their_view(list(batch)) == ours_as_theirs(ours)


def build_with(builder_cls, records, codec):
    builder = builder_cls(2, codec, 0, -1, -1, -1, 1 << 20)
    for i, r in enumerate(records):
        builder.append(i, r.timestamp_ms if r.timestamp_ms is not None else 1000, r.key, r.value, list(r.headers))
    return bytes(builder.build())


@pytest.mark.parametrize("builder_cls", [AioBuilder, KpBuilder], ids=["aiokafka", "kafka-python"])
@given(records=record_lists, base_offset=st.integers(0, 2**40), epoch=st.integers(0, 2**31 - 1), control=st.booleans())
@settings(max_examples=50)
def test_batches_built_by_other_codecs_decode_in_pykraft(builder_cls, records, base_offset, epoch, control):
    raw = patch_batch(build_with(builder_cls, records, 0), base_offset=base_offset, leader_epoch=epoch, control=control)
    (batch,) = list(iter_batches(raw))
    assert batch.crc_valid and batch.is_control == control
    assert (batch.base_offset, batch.partition_leader_epoch) == (base_offset, epoch)
    assert ours_as_theirs(batch) == [
        (base_offset + i, r.timestamp_ms if r.timestamp_ms is not None else 1000, r.key, r.value, tuple(r.headers))
        for i, r in enumerate(records)
    ]


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
@pytest.mark.parametrize("builder_cls", [AioBuilder, KpBuilder], ids=["aiokafka", "kafka-python"])
def test_compressed_batches_from_other_producers_decode(builder_cls, codec):
    records = list(range(50))
    builder = builder_cls(2, int(codec), 0, -1, -1, -1, 1 << 20)
    for i in records:
        builder.append(i, 5000 + i, None, f"value-{i}".encode() * 20, [])
    raw = bytes(builder.build())
    (batch,) = list(iter_batches(raw))
    assert batch.compression == codec
    values = [(r.offset, r.timestamp, bytes(r.value)) for r in batch.records()]
    assert values == [(i, 5000 + i, f"value-{i}".encode() * 20) for i in records]


def test_kafka_python_walks_a_whole_segment_written_by_pykraft():
    layout = [(0, 1), (1, 2), (3, 7)]  # (base offset, record count) per batch
    segment = b"".join(
        encode_batch([SimpleRecord(b"v")] * count, base_offset=base, partition_leader_epoch=base, timestamp_ms=base)
        for base, count in layout
    )
    walker = MemoryRecords(segment)
    offsets = []
    while walker.has_next():
        batch = walker.next_batch()
        assert batch.validate_crc()
        offsets.extend(r.offset for r in batch)
    assert offsets == list(range(10))
