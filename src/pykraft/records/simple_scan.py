"""The records of a batch in the shape KRaft writes them: a fast walk that builds no `Record` objects, and its encoder.

Nearly every batch of the metadata log, and every batch `MetadataLogWriter` produces, has one shape ("simple"):
uncompressed; per record a length and a value length of one or two varint bytes, timestamp delta 0, offset delta
equal to the record's index, a null key, no headers. Every node replays every committed record and the leader
checks every produced one, so the full decode (`RecordBatch.records`, ~1 us a record) was the largest per-record
cost of the commit path (benchmarks/quorum.py). `simple_values` walks that shape only and hands out (offset,
value) pairs; for any other batch, or any byte it does not expect, it answers None and the caller takes the full
decode. It never raises and never decides that a batch is malformed: the full decode stays the only judge, so
a batch gets the same verdict and the same error either way (tests/records/test_simple_scan.py checks it).
`encode_values` writes that shape: `encode_batch` of plain values, byte for byte, at a fraction of its cost.
"""

from __future__ import annotations

from collections.abc import Sequence

from .batch import ATTR_COMPRESSION_MASK, BATCH_HEADER_SIZE, RecordBatch, seal_batch
from .varint import append_varint


EVERY_VALUE = b"\x01" * 256
NO_VALUE = bytes(256)  # a check only: the batch has the simple shape when the answer is not None


def simple_values(batch: RecordBatch, keep: bytes = EVERY_VALUE) -> list[tuple[int, memoryview]] | None:
    """(offset, value) of every record when the whole batch has the simple shape, else None. A batch it accepts
    is one the full decode accepts too, with the same offsets and values, every timestamp the batch's base
    timestamp, and no key or header. `keep` (256 flags, by a value's first byte) leaves out the non-empty values
    whose first byte is not flagged: they are walked and checked, but no slice or pair is made for them."""
    if batch.attributes & ATTR_COMPRESSION_MASK:
        return None
    view = batch.buffer[BATCH_HEADER_SIZE:]
    body = bytes(view)  # one copy: indexing bytes is faster than indexing a memoryview
    size = len(body)
    base_offset = batch.base_offset
    values: list[tuple[int, memoryview]] = []
    append = values.append
    pos = 0
    try:
        for delta in range(batch.record_count):
            b = body[pos]  # record length: non-negative, one or two bytes
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                pos += 1
            elif not b & 1 and body[pos + 1] < 0x80:
                end = pos + 2 + (((b & 0x7F) | (body[pos + 1] << 7)) >> 1)
                pos += 2
            else:
                return None
            if end > size or body[pos + 1] != 0:  # after the attributes byte: timestamp delta 0
                return None
            if delta < 64:  # offset delta == index, in its one- or two-byte zig-zag form
                if body[pos + 2] != delta << 1:
                    return None
                pos += 3
            elif delta < 8192:
                if body[pos + 2] != ((delta << 1) & 0x7F) | 0x80 or body[pos + 3] != delta >> 6:
                    return None
                pos += 4
            else:
                return None
            if body[pos] != 1:  # key: null
                return None
            b = body[pos + 1]  # value length: non-negative, one or two bytes
            if b < 0x80 and not b & 1:
                start = pos + 2
                stop = start + (b >> 1)
            elif not b & 1 and body[pos + 2] < 0x80:
                start = pos + 3
                stop = start + (((b & 0x7F) | (body[pos + 2] << 7)) >> 1)
            else:
                return None
            if stop + 1 != end or body[stop] != 0:  # no headers, and that is where the record's length ends
                return None
            if start == stop or keep[body[start]]:
                append((base_offset + delta, view[start:stop]))
            pos = end
    except IndexError:
        return None
    return values if pos == size else None




def _varint_table(size: int) -> list[bytes]:
    table = []
    for value in range(size):
        out = bytearray()
        append_varint(out, value)
        table.append(bytes(out))
    return table


_SMALL = _varint_table(1024)  # zig-zag varints of 0..1023 (one or two bytes): lengths and offset deltas
_SMALL_LIMIT = len(_SMALL)


def _varint(value: int) -> bytes:
    if value < _SMALL_LIMIT:
        return _SMALL[value]
    out = bytearray()
    append_varint(out, value)
    return bytes(out)


def encode_values(values: Sequence[bytes | bytearray | memoryview], *, base_offset: int,
                  partition_leader_epoch: int, timestamp_ms: int) -> bytes:
    """`encode_batch([SimpleRecord(v) for v in values], ...)` byte for byte, in the simple shape, without the
    SimpleRecord objects and without a buffer and five varint calls per record (about 3x cheaper: the writer and
    the leader's accumulator encode every record once). Values are not None."""
    if not values:
        raise ValueError("a record batch holds at least one record")
    out = bytearray(BATCH_HEADER_SIZE)
    small, limit = _SMALL, _SMALL_LIMIT
    for delta, value in enumerate(values):
        size = len(value)
        # attributes 0, timestamp delta 0, the offset delta, a null key (zig-zag -1)
        middle = b"\x00\x00" + (small[delta] if delta < limit else _varint(delta)) + b"\x01"
        value_length = small[size] if size < limit else _varint(size)
        length = len(middle) + len(value_length) + size + 1  # + the header count 0
        out += small[length] if length < limit else _varint(length)
        out += middle
        out += value_length
        out += value
        out.append(0)
    return seal_batch(out, len(values), base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                      base_timestamp=timestamp_ms, max_timestamp=timestamp_ms)


__all__ = ["EVERY_VALUE", "NO_VALUE", "encode_values", "simple_values"]
