"""Validation of a Produce request's records for one partition, from batch headers only (no record decode).

Kafka's rules (`ProduceRequest.validateRecords` and `LogValidator`, for Produce v3+):
- exactly one record batch, magic 2, a length that fits the buffer -> INVALID_RECORD otherwise;
- a CRC-32C that matches (attributes..end) -> CORRUPT_MESSAGE;
- at most `max.message.bytes` (the topic's, default 1048588) -> MESSAGE_TOO_LARGE;
- a known compression codec (none, gzip, snappy, lz4, zstd) -> UNSUPPORTED_COMPRESSION_TYPE; the compressed
  bytes are stored as they came (compression passed through, as Kafka does when the topic's
  compression.type is `producer`);
- not a control batch, record count >= 1 and lastOffsetDelta = count - 1 -> INVALID_RECORD;
- a transactional batch carries a producer id -> INVALID_RECORD otherwise (the producer's transaction is checked
  by the leader: producer state and KIP-890 verification).
- on a compacted topic (cleanup.policy has compact), every record has a key -> INVALID_RECORD
  (`require_keys`: the one rule that walks the records, as Kafka's LogValidator does for such topics).

`assign_offsets` patches the accepted batch in place: base offset and partition leader epoch (both outside the
CRC, so the producer's CRC stays valid). `stamp_log_append_time` is the topic's message.timestamp.type =
LogAppendTime: the timestamp-type attribute bit and the max timestamp (both inside the CRC) are set and the CRC is
written again, as Kafka's `DefaultRecordBatch.setMaxTimestamp` does; the records are not touched (consumers read
the batch's max timestamp as every record's timestamp).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    BATCH_HEADER_SIZE,
    CRC_START,
    LOG_OVERHEAD,
    MAGIC,
    set_base_offset,
    set_partition_leader_epoch,
)
from pykraft.records.batch import iter_batches
from pykraft.records.crc import crc32c
from pykraft.records.errors import RecordsError
from pykraft.records.rebuild import record_keys, records_section

try:
    from pykraft.records.record_scan import every_record_keyed
except ImportError:  # no working numpy on this platform: the walk decides every batch
    def every_record_keyed(section: bytes | memoryview, count: int) -> bool | None:
        return None

# base offset, length, leader epoch, magic, crc, attributes, last offset delta, base ts, max ts, producer id,
# producer epoch, base sequence, record count
_HEADER = struct.Struct(">qiibIhiqqqhii")
DEFAULT_MAX_MESSAGE_BYTES = 1048588  # max.message.bytes
_MAX_CODEC = 4  # zstd
_ATTRIBUTES = struct.Struct(">h")
_ATTRIBUTES_AT, _MAX_TIMESTAMP_AT, _CRC_AT = 21, 35, 17
_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class ProducedBatch:
    """The header fields the leader needs from an accepted batch."""

    size: int
    record_count: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool = False

    @property
    def is_idempotent(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        return (self.base_sequence + self.record_count - 1) % (1 << 31)


@dataclass(frozen=True, slots=True)
class Rejected:
    error: ErrorCode
    message: str


def validate_batch(records: bytes | memoryview | None, max_message_bytes: int) -> ProducedBatch | Rejected:
    """Check one partition's Produce records (see the module docstring)."""
    if records is None or len(records) == 0:
        return Rejected(ErrorCode.INVALID_RECORD, "no record batch in the request")
    view = memoryview(records)
    if len(view) < BATCH_HEADER_SIZE:
        return Rejected(ErrorCode.INVALID_RECORD, f"{len(view)} bytes are too few for a record batch")
    (_base, length, _epoch, magic, crc, attributes, delta, _base_ts, max_ts, pid, pepoch, seq,
     count) = _HEADER.unpack_from(view, 0)
    if magic != MAGIC:
        return Rejected(ErrorCode.INVALID_RECORD, f"record batch magic {magic}: Produce v3+ needs magic 2")
    size = length + LOG_OVERHEAD
    if length < BATCH_HEADER_SIZE - LOG_OVERHEAD or size > len(view):
        return Rejected(ErrorCode.INVALID_RECORD, f"batch length {length} does not fit the {len(view)} bytes sent")
    if size != len(view):
        return Rejected(ErrorCode.INVALID_RECORD, "Produce v3+ must carry exactly one record batch per partition")
    if size > max_message_bytes:
        return Rejected(ErrorCode.MESSAGE_TOO_LARGE,
                        f"the batch is {size} bytes, larger than max.message.bytes {max_message_bytes}")
    if crc32c(view[CRC_START:size]) != crc:
        return Rejected(ErrorCode.CORRUPT_MESSAGE, "the record batch fails its CRC-32C check")
    if attributes & ATTR_COMPRESSION_MASK > _MAX_CODEC:
        return Rejected(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {attributes & 7}")
    if attributes & ATTR_CONTROL:
        return Rejected(ErrorCode.INVALID_RECORD, "clients may not produce control batches")
    transactional = bool(attributes & ATTR_TRANSACTIONAL)
    if transactional and pid < 0:
        return Rejected(ErrorCode.INVALID_RECORD, "a transactional batch must carry a producer id")
    if count < 1 or delta != count - 1:
        return Rejected(ErrorCode.INVALID_RECORD, f"record count {count} does not match last offset delta {delta}")
    return ProducedBatch(size, count, max_ts, pid, pepoch, seq, transactional)


def require_keys(records: bytes | memoryview, count: int, topic: str, partition: int) -> Rejected | None:
    """Kafka's LogValidator check for a compacted topic: a record without a key could never be cleaned."""
    try:
        (batch,) = list(iter_batches(records, verify_crc=False))
        section = records_section(batch)
        keyed = every_record_keyed(section, count)  # numpy over the records; the walk where it declines
        if keyed or (keyed is None and all(r.key is not None for r in record_keys(section, count))):
            return None
    except (RecordsError, ValueError) as exc:
        return Rejected(ErrorCode.INVALID_RECORD, f"the records of the batch do not decode: {exc}")
    return Rejected(ErrorCode.INVALID_RECORD,
                    f"Compacted topic cannot accept message without key in topic partition {topic}-{partition}.")


def assign_offsets(batch: bytearray | memoryview, base_offset: int, leader_epoch: int) -> None:
    """Patch the accepted batch in place as the leader writes it."""
    set_base_offset(batch, base_offset)
    set_partition_leader_epoch(batch, leader_epoch)


def stamp_log_append_time(batch: bytearray | memoryview, now_ms: int) -> None:
    """LogAppendTime: the attribute bit, the max timestamp = `now_ms`, and the CRC-32C computed again."""
    (attributes,) = _ATTRIBUTES.unpack_from(batch, _ATTRIBUTES_AT)
    _ATTRIBUTES.pack_into(batch, _ATTRIBUTES_AT, attributes | ATTR_TIMESTAMP_TYPE)
    _TIMESTAMP.pack_into(batch, _MAX_TIMESTAMP_AT, now_ms)
    size = int.from_bytes(batch[8:12], "big") + LOG_OVERHEAD
    _CRC.pack_into(batch, _CRC_AT, crc32c(memoryview(batch)[CRC_START:size]))
