"""Transaction markers: the COMMIT / ABORT control batches a partition leader writes when a transaction ends.

Kafka's format (`MemoryRecords.withEndTransactionMarker`, `EndTransactionMarker`): one record batch with the
transactional and control attribute bits set, the producer's id and epoch, base sequence -1, holding one record:
key = {version int16 = 0, type int16 (0 ABORT, 1 COMMIT)}, value = EndTxnMarker v0 {version int16 = 0,
coordinatorEpoch int32}. Consumers skip control batches; read_committed consumers use an ABORT marker to stop
dropping the aborted producer's records.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .batch import ATTR_CONTROL, ATTR_TRANSACTIONAL, BATCH_HEADER_SIZE, CRC_START, LOG_OVERHEAD, MAGIC, RecordBatch
from .control import ControlRecordType
from .crc import crc32c
from .errors import RecordsError
from .varint import append_varint

_HEADER = struct.Struct(">qiibIhiqqqhii")
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
END_TXN_MARKER_VERSION = 0


class InvalidTxnMarkerError(RecordsError):
    """A control batch that should hold a transaction marker but does not."""


@dataclass(frozen=True, slots=True)
class TxnMarker:
    commit: bool
    coordinator_epoch: int


def encode_txn_marker_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, *,
                            timestamp_ms: int, base_offset: int = 0, partition_leader_epoch: int = 0) -> bytes:
    """The control batch of one marker (base offset and leader epoch are patched by the appending leader)."""
    key = _KEY.pack(0, ControlRecordType.COMMIT if commit else ControlRecordType.ABORT)
    value = _VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)
    body = bytearray(b"\x00")  # record attributes
    append_varint(body, 0)  # timestamp delta
    append_varint(body, 0)  # offset delta
    append_varint(body, len(key))
    body += key
    append_varint(body, len(value))
    body += value
    append_varint(body, 0)  # no headers
    out = bytearray(BATCH_HEADER_SIZE)
    append_varint(out, len(body))
    out += body
    _HEADER.pack_into(out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC, 0,
                      ATTR_TRANSACTIONAL | ATTR_CONTROL, 0, timestamp_ms, timestamp_ms, producer_id, producer_epoch,
                      -1, 1)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def is_txn_marker_batch(batch: RecordBatch) -> bool:
    return batch.is_control and batch.is_transactional


def decode_txn_marker(batch: RecordBatch) -> TxnMarker:
    """The marker of a transactional control batch (InvalidTxnMarkerError when it holds anything else)."""
    records = list(batch.records())
    if not records or records[0].key is None or len(records[0].key) < _KEY.size:
        raise InvalidTxnMarkerError(f"control batch at offset {batch.base_offset} holds no marker key")
    _version, kind = _KEY.unpack_from(records[0].key)
    if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise InvalidTxnMarkerError(f"control batch at offset {batch.base_offset} has record type {kind}")
    value = records[0].value
    coordinator_epoch = -1
    if value is not None and len(value) >= _VALUE.size:
        _, coordinator_epoch = _VALUE.unpack_from(value)
    return TxnMarker(kind == ControlRecordType.COMMIT, coordinator_epoch)
