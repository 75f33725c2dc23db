"""__transaction_state keys and values (Kafka's TransactionLogKey/Value v0 and flexible v1) and the COMMIT/ABORT
control batches, byte for byte as Kafka writes them."""

from __future__ import annotations

import struct

import pytest

from pykraft.records import iter_batches
from pykraft.records.txn_log_records import (
    TxnLogValue, TxnRecordError, decode_txn_key, decode_txn_value, encode_txn_key, encode_txn_value,
)
from pykraft.records.txn_markers import decode_txn_marker, encode_txn_marker_batch, is_txn_marker_batch

VALUE = TxnLogValue(1000, 3, 60000, 1, (("a", (0, 2)), ("b", (1,))), 1700000000123, 1700000000000)


def test_key_is_version_0_string():
    assert encode_txn_key("tx") == b"\x00\x00\x00\x02tx"
    assert decode_txn_key(encode_txn_key("tx-é")) == "tx-é"
    with pytest.raises(TxnRecordError):
        decode_txn_key(b"\x00\x01\x00\x00")


def test_value_v0_layout():
    data = encode_txn_value(VALUE, 0)
    expected = (struct.pack(">hqhib", 0, 1000, 3, 60000, 1) + struct.pack(">i", 2)
                + struct.pack(">h", 1) + b"a" + struct.pack(">iii", 2, 0, 2)
                + struct.pack(">h", 1) + b"b" + struct.pack(">ii", 1, 1)
                + struct.pack(">qq", 1700000000123, 1700000000000))
    assert data == expected
    assert decode_txn_value(data) == VALUE


def test_value_v1_is_flexible_with_tagged_fields():
    tagged = TxnLogValue(1000, 3, 60000, 0, None, 5, -1, previous_producer_id=7, client_transaction_version=2)
    data = encode_txn_value(tagged, 1)
    assert data[:2] == b"\x00\x01"
    # Empty: a null partitions array (compact length 0), then the two timestamps, then two tagged fields.
    assert data[2 + 8 + 2 + 4 + 1] == 0
    assert decode_txn_value(data) == tagged
    assert decode_txn_value(encode_txn_value(VALUE, 1)) == VALUE


@pytest.mark.parametrize("cut", [1, 5, 17, 30])
def test_truncated_values_are_errors(cut):
    with pytest.raises(TxnRecordError):
        decode_txn_value(encode_txn_value(VALUE, 1)[:cut])
    with pytest.raises(TxnRecordError):
        decode_txn_value(encode_txn_value(VALUE, 0)[:cut])


def test_marker_batch_is_kafkas_end_transaction_marker():
    data = encode_txn_marker_batch(42, 3, 9, False, timestamp_ms=1234, base_offset=100, partition_leader_epoch=5)
    (batch,) = list(iter_batches(data))  # the CRC checks
    assert batch.is_control and batch.is_transactional and is_txn_marker_batch(batch)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.record_count) == (42, 3, -1, 1)
    (record,) = list(batch.records())
    assert bytes(record.key) == b"\x00\x00\x00\x00"  # version 0, ABORT
    assert bytes(record.value) == struct.pack(">hi", 0, 9)
    marker = decode_txn_marker(batch)
    assert not marker.commit and marker.coordinator_epoch == 9
    commit = next(iter_batches(encode_txn_marker_batch(42, 3, 9, True, timestamp_ms=1)))
    assert decode_txn_marker(commit).commit
