"""What the log cleaner needs from the record format: each record's key and offset without building `Record`s,
and a batch rebuilt from some of its records the way Kafka's `MemoryRecords.filterTo` rebuilds it.

- `record_keys(batch)`: one `KeyedRecord` per record (offset delta, timestamp delta, key bytes or None, whether the
  value is null, where the record's key/value/headers start and end in the records section). The records section
  is walked once with inline varints; values and headers are skipped, not decoded. Malformed framing raises
  `MalformedBatchError`, as the full decode does.
- `rebuild_batch(batch, body, kept, delete_horizon_ms)`: Kafka's `buildRetainedRecordsInto`: the same base offset
  and last offset delta (offsets are never renumbered: the last sequence of an idempotent producer stays where it
  was), producer id, epoch, base sequence, leader epoch, compression, timestamp type, transactional and control
  flags; the base timestamp is the delete horizon when one is set (attribute bit 6, KIP-534) else the first kept
  record's timestamp, and every kept record's timestamp delta is recomputed from it (the record's key, value and
  headers bytes are copied as they were).
  `rebuild_records` is the same from columns (records/record_scan.py), the cleaner's fast path.
- `empty_batch(batch)`: Kafka's `writeEmptyHeader`: a 61-byte batch with no records that keeps a producer's last
  sequence and epoch (`BatchRetention.RETAIN_EMPTY`): base timestamp -1, max timestamp kept, uncompressed.
"""

from __future__ import annotations

import functools
import struct
from typing import NamedTuple

from .batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    BATCH_HEADER_SIZE,
    CRC_START,
    LOG_OVERHEAD,
    MAGIC,
    RecordBatch,
)
from .compression import Compression, compress, decompress
from .crc import crc32c
from .errors import MalformedBatchError
from .varint import append_varint, read_varint

_HEADER = struct.Struct(">qiibIhiqqqhii")
_NO_TIMESTAMP = -1


def _varint(value: int) -> bytes:
    out = bytearray()
    append_varint(out, value)
    return bytes(out)


# Zig-zag varints of -8192..8191, by value (a negative index reads from the end): deltas and lengths of one or two
# bytes, the common case when a batch is rebuilt. Built at the first rebuild: 16384 bytes objects take ~700 KiB, which
# every broker imports (produce_rules.py) and only the log cleaner uses (issue 34: idle RSS).
_SMALL_LIMIT = 8192


@functools.cache
def _small_varints() -> list[bytes]:
    return [_varint(v) for v in range(_SMALL_LIMIT)] + [_varint(v) for v in range(-_SMALL_LIMIT, 0)]


class KeyedRecord(NamedTuple):
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    null_value: bool  # a tombstone when it has a key
    tail: int  # position (in the records section) of the key length: key, value and headers follow
    end: int  # position after the record


def records_section(batch: RecordBatch) -> bytes:
    """The batch's records, decompressed when the batch is compressed."""
    codec = batch.attributes & ATTR_COMPRESSION_MASK
    raw = batch.buffer[BATCH_HEADER_SIZE:]
    return bytes(raw) if codec == Compression.NONE else decompress(codec, raw)


def record_keys(body: bytes, count: int) -> list[KeyedRecord]:
    """Walk `count` records of a records section (see the module docstring). The cleaner's hot loop: varints of one
    or two bytes (record lengths below 8 KiB, offset deltas below 8192, short keys) are decoded inline."""
    found: list[KeyedRecord] = []
    append = found.append
    new = tuple.__new__  # skips NamedTuple.__new__, which re-packs the arguments
    size = len(body)
    pos = 0
    try:
        for _ in range(count):
            b = body[pos]  # record length
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif body[pos + 1] < 0x80:
                z = (b & 0x7F) | (body[pos + 1] << 7)
                length = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                length, pos = read_varint(body, pos)
            end = pos + length
            if length < 6 or end > size:
                raise MalformedBatchError(f"record length {length} is impossible at byte {pos} of the records")
            b = body[pos + 1]  # after the attributes byte: the timestamp delta
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                ts_delta, pos = read_varint(body, pos + 1)
            b = body[pos]  # offset delta
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif body[pos + 1] < 0x80:
                z = (b & 0x7F) | (body[pos + 1] << 7)
                offset_delta = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                offset_delta, pos = read_varint(body, pos)
            tail = pos
            b = body[pos]  # key length
            if b == 1:
                key = None
                pos += 1
            else:
                if b < 0x80:
                    key_size = (b >> 1) ^ -(b & 1)
                    pos += 1
                else:
                    key_size, pos = read_varint(body, pos)
                if key_size < 0 or pos + key_size > end:
                    raise MalformedBatchError(f"key of {key_size} bytes does not fit its record")
                key = body[pos:pos + key_size]
                pos += key_size
            if pos >= end:
                raise MalformedBatchError("record ends before its value")
            append(new(KeyedRecord, (offset_delta, ts_delta, key, body[pos] == 1, tail, end)))
            pos = end
    except IndexError:
        raise MalformedBatchError("records run past the end of the batch") from None
    if pos != size:
        raise MalformedBatchError(f"batch has {size - pos} bytes after its {count} records")
    return found


def rebuild_batch(batch: RecordBatch, body: bytes, kept: list[KeyedRecord], delete_horizon_ms: int | None) -> bytes:
    """The batch with only `kept` (walked from `body`, its records section), as Kafka's cleaner writes it."""
    return rebuild_records(batch, body, [r[0] for r in kept], [r[1] for r in kept], [r[4] for r in kept],
                           [r[5] for r in kept], delete_horizon_ms)


def rebuild_records(batch: RecordBatch, body: bytes | bytearray | memoryview, offset_deltas: list[int],
                    timestamp_deltas: list[int], tails: list[int], ends: list[int],
                    delete_horizon_ms: int | None) -> bytes:
    """`rebuild_batch` from the kept records' columns: their offset and timestamp deltas, and where each one's key,
    value and headers lie in `body` (body[tail:end])."""
    assert offset_deltas, "an empty batch is written by empty_batch"
    log_append_time = bool(batch.attributes & ATTR_TIMESTAMP_TYPE)
    if log_append_time:  # readers take the batch's max timestamp as every record's: Kafka's builder does too
        stamps = [batch.max_timestamp] * len(offset_deltas)
    else:
        base = batch.base_timestamp
        stamps = [base + delta for delta in timestamp_deltas]
    base_timestamp = delete_horizon_ms if delete_horizon_ms is not None else stamps[0]
    records = bytearray()
    view = memoryview(body)
    small, limit = _small_varints(), _SMALL_LIMIT
    for offset_delta, stamp, tail, end in zip(offset_deltas, stamps, tails, ends):
        ts_delta = stamp - base_timestamp
        if -limit <= ts_delta < limit and offset_delta < limit:
            prefix = b"\x00" + small[ts_delta] + small[offset_delta]  # attributes: Kafka writes 0
        else:
            prefix = bytearray(b"\x00")
            append_varint(prefix, ts_delta)
            append_varint(prefix, offset_delta)
        length = len(prefix) + end - tail
        if length < limit:
            records += small[length]
        else:
            append_varint(records, length)
        records += prefix
        records += view[tail:end]
    codec = batch.attributes & ATTR_COMPRESSION_MASK
    payload = bytes(records) if codec == Compression.NONE else compress(codec, bytes(records))
    attributes = batch.attributes & ~ATTR_DELETE_HORIZON
    if delete_horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON
    max_timestamp = batch.max_timestamp if log_append_time else max(stamps)
    out = bytearray(BATCH_HEADER_SIZE) + payload
    _HEADER.pack_into(out, 0, batch.base_offset, len(out) - LOG_OVERHEAD, batch.partition_leader_epoch, MAGIC, 0,
                      attributes, batch.last_offset_delta, base_timestamp, max_timestamp, batch.producer_id,
                      batch.producer_epoch, batch.base_sequence, len(offset_deltas))
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def empty_batch(batch: RecordBatch) -> bytes:
    """Kafka's `DefaultRecordBatch.writeEmptyHeader` for `batch` (see the module docstring)."""
    attributes = batch.attributes & ~(ATTR_COMPRESSION_MASK | ATTR_DELETE_HORIZON)
    out = bytearray(BATCH_HEADER_SIZE)
    _HEADER.pack_into(out, 0, batch.base_offset, BATCH_HEADER_SIZE - LOG_OVERHEAD, batch.partition_leader_epoch,
                      MAGIC, 0, attributes, batch.last_offset_delta, _NO_TIMESTAMP, batch.max_timestamp,
                      batch.producer_id, batch.producer_epoch, batch.base_sequence, 0)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def delete_horizon(batch: RecordBatch) -> int | None:
    """The batch's delete horizon (KIP-534: its base timestamp when attribute bit 6 is set), else None."""
    return batch.base_timestamp if batch.attributes & ATTR_DELETE_HORIZON else None
