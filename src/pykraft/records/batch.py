"""Record batch v2 (magic 2), byte for byte as Apache Kafka writes it.

Layout (big-endian, 61-byte header; see reference §3.3):

    0 baseOffset int64 | 8 length int32 | 12 partitionLeaderEpoch int32 | 16 magic int8 | 17 crc uint32
    21 attributes int16 | 23 lastOffsetDelta int32 | 27 baseTimestamp int64 | 35 maxTimestamp int64
    43 producerId int64 | 51 producerEpoch int16 | 53 baseSequence int32 | 57 recordsCount int32 | 61 records...

The CRC covers attributes..end, so base offset and leader epoch can be patched without recomputing it.
Decoding works on memoryviews: a `RecordBatch` is a view over its bytes, and record keys and values are
slices of the same buffer; nothing is copied unless the batch is compressed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from .compression import Compression, decompress
from .crc import crc32c
from .errors import CorruptBatchError, MalformedBatchError, RecordsError, TruncatedBatchError
from .varint import append_varint, read_varint

if TYPE_CHECKING:
    import mmap

MAGIC = 2
BATCH_HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + length: the bytes not counted by the length field
CRC_START = 21  # first byte covered by the CRC (attributes)
_MIN_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")
_PREFIX = struct.Struct(">qi")
_MAGIC_OFFSET = 16

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1


class Record(NamedTuple):
    """One decoded record. `key` and `value` are memoryview slices of the batch (or None for null)."""

    offset: int
    timestamp: int
    key: memoryview | None
    value: memoryview | None
    headers: tuple[tuple[str, memoryview | None], ...]


@dataclass(frozen=True, slots=True)
class SimpleRecord:
    """A record to encode. `timestamp_ms` defaults to the batch timestamp."""

    value: bytes | None
    key: bytes | None = None
    timestamp_ms: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class RecordBatch:
    """A decoded batch header plus a view of the whole batch's bytes (`buffer`)."""

    __slots__ = (
        "buffer", "base_offset", "length", "partition_leader_epoch", "magic", "crc", "attributes",
        "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
        "base_sequence", "record_count",
    )  # fmt: skip
    base_offset: int
    length: int
    crc: int
    attributes: int
    last_offset_delta: int

    def __init__(self, buffer: memoryview) -> None:
        self.buffer = buffer
        (
            self.base_offset, self.length, self.partition_leader_epoch, self.magic, self.crc, self.attributes,
            self.last_offset_delta, self.base_timestamp, self.max_timestamp, self.producer_id,
            self.producer_epoch, self.base_sequence, self.record_count,
        ) = _HEADER.unpack_from(buffer)  # fmt: skip

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_in_bytes(self) -> int:
        return self.length + LOG_OVERHEAD

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & ATTR_COMPRESSION_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    def compute_crc(self) -> int:
        return crc32c(self.buffer[CRC_START:])

    @property
    def crc_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def records(self) -> Iterator[Record]:
        """Decode the records. Raises MalformedBatchError (or UnsupportedCompressionError) on bad contents."""
        codec = self.attributes & ATTR_COMPRESSION_MASK
        if codec == Compression.NONE:
            view: memoryview = self.buffer[BATCH_HEADER_SIZE:]
            scan = bytes(view)
        else:
            scan = decompress(codec, self.buffer[BATCH_HEADER_SIZE:])
            view = memoryview(scan)
        try:
            return iter(_decode_records(scan, view, self.record_count, self.base_offset, self.base_timestamp))
        except RecordsError as exc:
            exc.base_offset = self.base_offset
            raise

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"epoch={self.partition_leader_epoch}, records={self.record_count}, control={self.is_control}, "
            f"size={self.size_in_bytes})"
        )


def _decode_records(body: bytes, view: memoryview, count: int, base_offset: int, base_timestamp: int) -> list[Record]:
    """Walk `count` records in `body`; keys and values are slices of `view`, the same bytes in the caller's buffer.

    Fields are read from `body`, a transient bytes copy of the records section (one memcpy per batch), because
    indexing bytes is faster than indexing a memoryview; payloads handed out are never copied.

    This is the decode hot path, so varints of one or two bytes (lengths below 8 KiB, small deltas: nearly every
    field of a metadata record) are decoded inline and a null key takes no call; longer ones go to `read_varint`.
    """
    records: list[Record] = []
    append = records.append
    new_record = tuple.__new__  # skips NamedTuple.__new__, which re-packs the arguments
    end_of_body = len(body)
    pos = 0
    try:
        for _ in range(count):
            # record length
            b = body[pos]
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
            if length < 6 or end > end_of_body:
                raise MalformedBatchError(f"record length {length} is impossible at byte {pos} of the records")
            # attributes (unused), then timestamp delta
            pos += 1
            b = body[pos]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                timestamp_delta, pos = read_varint(body, pos)
            # offset delta
            b = body[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif body[pos + 1] < 0x80:
                z = (b & 0x7F) | (body[pos + 1] << 7)
                offset_delta = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                offset_delta, pos = read_varint(body, pos)
            # key: usually null in KRaft
            if body[pos] == 1:
                key = None
                pos += 1
            else:
                key, pos = _read_bytes(body, view, pos, end)
            # value
            value: memoryview | None
            b = body[pos]
            if b < 0x80 and not b & 1:
                stop = pos + 1 + (b >> 1)
                value = view[pos + 1 : stop]
                pos = stop
            elif b >= 0x80 and body[pos + 1] < 0x80 and not b & 1:
                stop = pos + 2 + (((b & 0x7F) | (body[pos + 1] << 7)) >> 1)
                value = view[pos + 2 : stop]
                pos = stop
            else:
                value, pos = _read_bytes(body, view, pos, end)
            # headers: usually none
            if body[pos] == 0:
                headers: tuple[tuple[str, memoryview | None], ...] = ()
                pos += 1
            else:
                headers, pos = _read_headers(body, view, pos, end)
            if pos != end:
                raise MalformedBatchError(f"record ends at byte {pos} of the records but its length says {end}")
            append(
                new_record(Record, (base_offset + offset_delta, base_timestamp + timestamp_delta, key, value, headers))
            )
    except IndexError:
        raise MalformedBatchError("records run past the end of the batch") from None
    if pos != end_of_body:
        raise MalformedBatchError(f"batch has {end_of_body - pos} bytes after its {count} records")
    return records


def _read_bytes(body: bytes, view: memoryview, pos: int, end: int) -> tuple[memoryview | None, int]:
    b = body[pos]
    if b < 0x80:
        size = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        size, pos = read_varint(body, pos)
    if size < 0:
        if size != -1:
            raise MalformedBatchError(f"negative length {size}")
        return None, pos
    stop = pos + size
    if stop > end:
        raise MalformedBatchError(f"field of {size} bytes runs past the end of its record")
    return view[pos:stop], stop


def _read_headers(
    body: bytes, view: memoryview, pos: int, end: int
) -> tuple[tuple[tuple[str, memoryview | None], ...], int]:
    count, pos = read_varint(body, pos)
    if count < 0 or count > end - pos:
        raise MalformedBatchError(f"impossible header count {count}")
    headers = []
    for _ in range(count):
        raw_key, pos = _read_bytes(body, view, pos, end)
        if raw_key is None:
            raise MalformedBatchError("record header key is null")
        try:
            key = str(raw_key, "utf-8")
        except UnicodeDecodeError:
            raise MalformedBatchError("record header key is not valid UTF-8") from None
        value, pos = _read_bytes(body, view, pos, end)
        headers.append((key, value))
    return tuple(headers), pos


# ---------------------------------------------------------------------------------------------------------------
# Encoding


def _append_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(1)  # zig-zag -1
    else:
        append_varint(out, len(data))
        out += data


def _encode_record(out: bytearray, offset_delta: int, timestamp_delta: int, record: SimpleRecord) -> None:
    body = bytearray(b"\x00")  # attributes
    append_varint(body, timestamp_delta)
    append_varint(body, offset_delta)
    _append_bytes(body, record.key)
    _append_bytes(body, record.value)
    append_varint(body, len(record.headers))
    for key, value in record.headers:
        _append_bytes(body, key.encode())
        _append_bytes(body, value)
    append_varint(out, len(body))
    out += body


def encode_batch(
    records: Sequence[SimpleRecord],
    *,
    base_offset: int,
    partition_leader_epoch: int,
    timestamp_ms: int,
    control: bool = False,
) -> bytes:
    """Encode an uncompressed batch with producer fields -1, as a KRaft leader writes it.

    The batch's base timestamp is the earliest record timestamp and its max timestamp the latest (Kafka's rule);
    records without their own timestamp take `timestamp_ms`.
    """
    if not records:
        raise ValueError("a record batch holds at least one record")
    timestamps = [timestamp_ms if r.timestamp_ms is None else r.timestamp_ms for r in records]
    base_timestamp = min(timestamps)
    out = bytearray(BATCH_HEADER_SIZE)
    for delta, (record, timestamp) in enumerate(zip(records, timestamps)):
        _encode_record(out, delta, timestamp - base_timestamp, record)
    return seal_batch(out, len(records), base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                      base_timestamp=base_timestamp, max_timestamp=max(timestamps), control=control)


def seal_batch(out: bytearray, count: int, *, base_offset: int, partition_leader_epoch: int, base_timestamp: int,
               max_timestamp: int, control: bool = False) -> bytes:
    """The batch: `out` is BATCH_HEADER_SIZE bytes of room followed by `count` encoded records; the header
    (producer fields -1) and the CRC are written into the room."""
    attributes = ATTR_CONTROL if control else 0
    _HEADER.pack_into(
        out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC, 0, attributes,
        count - 1, base_timestamp, max_timestamp, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, count,
    )  # fmt: skip
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def set_base_offset(batch: bytearray | memoryview, base_offset: int) -> None:
    """Rewrite a batch's base offset in place (not covered by the CRC)."""
    _BASE_OFFSET.pack_into(batch, 0, base_offset)


def set_partition_leader_epoch(batch: bytearray | memoryview, epoch: int) -> None:
    """Rewrite a batch's partition leader epoch in place (not covered by the CRC)."""
    _LEADER_EPOCH.pack_into(batch, 12, epoch)


_TIMESTAMPS = struct.Struct(">qq")  # base timestamp, max timestamp
_TIMESTAMPS_AT = 27
_CRC_FIELD = struct.Struct(">I")
_CRC_AT = 17


def restamp_batch(batch: bytearray, *, base_offset: int, partition_leader_epoch: int, timestamp_ms: int) -> None:
    """Rewrite, in place, what a leader sets when it appends a client's batch as it arrived: the base offset, the
    leader epoch, and base and max timestamps = `timestamp_ms`; then the CRC (the timestamps are inside it). Only
    for a batch whose records all carry timestamp delta 0: they then all read `timestamp_ms`, exactly as if the
    leader had encoded them itself (`encode_batch` with that timestamp). No record is decoded or encoded."""
    set_base_offset(batch, base_offset)
    set_partition_leader_epoch(batch, partition_leader_epoch)
    _TIMESTAMPS.pack_into(batch, _TIMESTAMPS_AT, timestamp_ms, timestamp_ms)
    _CRC_FIELD.pack_into(batch, _CRC_AT, crc32c(memoryview(batch)[CRC_START:]))


# ---------------------------------------------------------------------------------------------------------------
# Scanning concatenated batches


def iter_batches(
    data: bytes | bytearray | memoryview | mmap.mmap,
    *,
    verify_crc: bool = True,
    allow_truncated_tail: bool = False,
) -> Iterator[RecordBatch]:
    """Yield the batches of a segment file, snapshot or Fetch response, front to back.

    Raises, at the first bad batch (after yielding every good one before it):
    - TruncatedBatchError when the buffer ends inside a batch (unless `allow_truncated_tail`, which a Fetch
      response needs: the leader may cut its last batch at the size limit);
    - MalformedBatchError for an impossible length or a magic other than 2;
    - CorruptBatchError when the CRC does not match (only if `verify_crc`).
    The error's `position` is the batch's byte offset in `data`.
    """
    view = data if isinstance(data, memoryview) else memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    total = len(view)
    pos = 0
    while pos < total:
        if total - pos < LOG_OVERHEAD:
            if allow_truncated_tail:
                return
            raise TruncatedBatchError(
                f"truncated batch: {total - pos} trailing bytes are too few for a batch header", position=pos
            )
        base_offset, length = _PREFIX.unpack_from(view, pos)
        if length < _MIN_LENGTH:
            raise MalformedBatchError(
                f"batch length {length} is below the minimum {_MIN_LENGTH}", position=pos, base_offset=base_offset
            )
        end = pos + LOG_OVERHEAD + length
        if total - pos > _MAGIC_OFFSET and view[pos + _MAGIC_OFFSET] != MAGIC:
            raise MalformedBatchError(
                f"batch magic is {view[pos + _MAGIC_OFFSET]}, only magic 2 is supported",
                position=pos,
                base_offset=base_offset,
            )
        if end > total:
            if allow_truncated_tail:
                return
            raise TruncatedBatchError(
                f"truncated batch: it needs {end - pos} bytes but only {total - pos} remain", position=pos, base_offset=base_offset
            )
        batch = RecordBatch(view[pos:end])
        if verify_crc and not batch.crc_valid:
            raise CorruptBatchError(
                f"CRC mismatch: stored {batch.crc:#010x}, computed {batch.compute_crc():#010x}",
                position=pos,
                base_offset=base_offset,
            )
        yield batch
        pos = end
