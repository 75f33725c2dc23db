"""Kafka's producer snapshot format (broker/producer_snapshot.py) and the producer state it carries."""

from __future__ import annotations

import google_crc32c
import pytest

from pykraft.broker.producer_snapshot import (
    CorruptProducerSnapshotError,
    ProducerSnapshotEntry,
    decode_producer_snapshot,
    encode_producer_snapshot,
)
from pykraft.broker.producer_state import ProducerStates
from pykraft.protocol.errors import ErrorCode

# Kafka's ProducerStateManagerTest.testProducerSnapshotCompatibility entries: producer 1 (epoch 2, coordinator
# epoch 3, txn first offset 100, last batch: sequence 1, offset 2, delta 3, no timestamp) and producer 11 (epoch
# 12, coordinator epoch 13, timestamp 123456, no batch: Kafka writes last sequence and offset -1, delta 0).
KAFKA_ENTRIES = [ProducerSnapshotEntry(1, 2, 1, 2, 3, -1, 3, 100), ProducerSnapshotEntry(11, 12, -1, -1, 0, 123456, 13, -1)]


def _field(value: int, width: int) -> bytes:
    return value.to_bytes(width, "big", signed=True)


def _kafka_bytes(entries: list[ProducerSnapshotEntry]) -> bytes:
    """Built field by field from ProducerSnapshot.json v1 (not flexible: int32 array length), CRC-32C by an
    independent library over everything after the crc field."""
    body = _field(len(entries), 4)
    for e in entries:
        body += (_field(e.producer_id, 8) + _field(e.epoch, 2) + _field(e.last_sequence, 4) + _field(e.last_offset, 8)
                 + _field(e.offset_delta, 4) + _field(e.timestamp, 8) + _field(e.coordinator_epoch, 4)
                 + _field(e.current_txn_first_offset, 8))
    return _field(1, 2) + google_crc32c.value(body).to_bytes(4, "big") + body


def test_encoding_is_kafkas_bytes_and_decodes_back() -> None:
    expected = _kafka_bytes(KAFKA_ENTRIES)
    assert len(expected) == 2 + 4 + 4 + 2 * 46
    assert encode_producer_snapshot(KAFKA_ENTRIES) == expected
    assert decode_producer_snapshot(expected) == KAFKA_ENTRIES
    assert decode_producer_snapshot(_kafka_bytes([])) == []


@pytest.mark.parametrize("damage", ["flip", "truncate", "trailing", "version", "short"])
def test_a_damaged_snapshot_is_refused(damage: str) -> None:
    data = bytearray(_kafka_bytes(KAFKA_ENTRIES))
    if damage == "flip":
        data[20] ^= 0x01
    elif damage == "truncate":
        del data[-5:]
    elif damage == "trailing":
        data += b"\0"
    elif damage == "version":
        data[1] = 2
    else:
        data = data[:5]
    with pytest.raises(CorruptProducerSnapshotError):
        decode_producer_snapshot(bytes(data))


def test_a_restored_state_deduplicates_the_last_batch_and_continues_the_sequence() -> None:
    states = ProducerStates()
    states.observe(7, 0, 0, 4, 100, 104, timestamp=555)
    states.observe(7, 0, 5, 9, 110, 114, timestamp=556)
    states.observe(8, 3, 0, 0, 120, 120)
    entries = states.entries()
    assert entries == [ProducerSnapshotEntry(7, 0, 9, 114, 4, 556), ProducerSnapshotEntry(8, 3, 0, 120, 0, -1)]
    restored = ProducerStates()
    restored.restore(decode_producer_snapshot(encode_producer_snapshot(entries)))
    duplicate = restored.check(7, 0, 5, 9)
    assert duplicate.duplicate_of is not None
    assert (duplicate.duplicate_of.base_offset, duplicate.duplicate_of.last_offset) == (110, 114)
    assert restored.check(7, 0, 10, 12).error is ErrorCode.NONE and restored.check(7, 0, 10, 12).duplicate_of is None
    assert restored.check(7, 0, 11, 12).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert restored.check(8, 2, 1, 1).error is ErrorCode.INVALID_PRODUCER_EPOCH
    assert restored.entries() == entries


def test_a_producer_known_only_by_its_epoch_keeps_refusing_older_epochs() -> None:
    restored = ProducerStates()
    restored.restore([ProducerSnapshotEntry(11, 12, -1, -1, 0, 123456, 13, -1)])
    assert restored.check(11, 11, 0, 0).error is ErrorCode.INVALID_PRODUCER_EPOCH
    assert restored.check(11, 12, 0, 0).error is ErrorCode.NONE


def test_producers_expire_after_producer_id_expiration_ms_of_silence() -> None:
    states = ProducerStates()
    states.observe(1, 0, 0, 0, 0, 0, timestamp=1_000)
    states.observe(2, 0, 0, 0, 1, 1, timestamp=5_000)
    assert states.expire(now_ms=10_999, expiration_ms=10_000) == 0
    assert states.expire(now_ms=11_000, expiration_ms=10_000) == 1  # Kafka's rule: now - last timestamp >= expiry
    assert [e.producer_id for e in states.entries()] == [2]
    assert states.check(1, 0, 5, 5).error is ErrorCode.NONE  # forgotten: any sequence is accepted again
