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

from collections.abc import Iterable, Sequence
from itertools import chain, repeat

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
    if batch.record_count > _UNIFORM_FROM:
        values = _uniform_values(body, view, batch.record_count, batch.base_offset, keep)
        if values is not None:
            return values
    return _walk_values(body, view, batch.record_count, batch.base_offset, keep)


def _walk_values(body: bytes, view: memoryview, count: int, base_offset: int,
                 keep: bytes) -> list[tuple[int, memoryview]] | None:
    """simple_values by a step per record: the judge of the simple shape."""
    size = len(body)
    values: list[tuple[int, memoryview]] = []
    append = values.append
    pos = 0
    try:
        for delta in range(count):
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


# Records of one value length: the usual batch of a writer of fixed-size commands. Where each record starts is then
# known without reading the lengths one by one (two strides: the offset delta takes one byte below index 64, two
# from there), and every byte the walk checks is compared at all records' positions at once, one strided slice per
# byte of the framing. What this accepts, the walk accepts with the same values (it checks the same bytes, in their
# canonical forms only); anything else is left to the walk, which decides.
_UNIFORM_FROM = 8  # fewer records are walked (and encoded one by one): the setup costs about what eight steps do
_ONE_BYTE_DELTAS = 64
_MAX_DELTAS = 8192  # offset deltas past 8191 take three bytes: the full decode's job, as in the walk
_DELTA_LOW = bytes(range(0, 2 * _ONE_BYTE_DELTAS, 2)) + bytes(
    ((delta << 1) & 0x7F) | 0x80 for delta in range(_ONE_BYTE_DELTAS, _MAX_DELTAS))
_DELTA_HIGH = bytes(_ONE_BYTE_DELTAS) + bytes(delta >> 6 for delta in range(_ONE_BYTE_DELTAS, _MAX_DELTAS))


def _short_varint(value: int) -> bytes | None:
    """The zig-zag varint of a non-negative `value` in the one or two bytes the walk reads, else None."""
    return _varint(value) if value < _MAX_DELTAS else None


def _uniform_values(body: bytes, view: memoryview, count: int, base_offset: int,
                    keep: bytes) -> list[tuple[int, memoryview]] | None:
    """simple_values of a batch whose values all have the first record's length, else None (the walk decides)."""
    if count > _MAX_DELTAS or len(body) < 8:
        return None
    head = 1 if body[0] < 0x80 else 2  # the first record's length, then attributes, timestamp, delta 0, null key
    low = body[head + 4]
    value_length = low >> 1 if low < 0x80 else ((low & 0x7F) | (body[head + 5] << 7)) >> 1
    value_prefix = _short_varint(value_length)
    if value_prefix is None:
        return None
    stretches = []  # (first index, count, start, stride, value's place in its record)
    start = 0
    for first, stop, delta_bytes in ((0, min(count, _ONE_BYTE_DELTAS), 1), (_ONE_BYTE_DELTAS, count, 2)):
        if first >= stop:
            continue
        length_prefix = _short_varint(4 + delta_bytes + len(value_prefix) + value_length)
        if length_prefix is None:
            return None
        stride = len(length_prefix) + 4 + delta_bytes + len(value_prefix) + value_length
        n = stop - first
        end = start + n * stride
        if end > len(body):
            return None
        # the framing bytes of each record, as the walk reads them: length, timestamp delta (after the attributes,
        # which nobody reads), offset delta, null key, value length; then the header count after the value
        at = len(length_prefix)
        expected = [(place, bytes((byte,)) * n) for place, byte in enumerate(length_prefix)]
        expected.append((at + 1, bytes(n)))
        expected.append((at + 2, _DELTA_LOW[first:stop]))
        if delta_bytes == 2:
            expected.append((at + 3, _DELTA_HIGH[first:stop]))
        at += 2 + delta_bytes
        expected.append((at, b"\x01" * n))
        expected.extend((at + 1 + place, bytes((byte,)) * n) for place, byte in enumerate(value_prefix))
        expected.append((stride - 1, bytes(n)))
        for place, wanted in expected:
            if body[start + place:end:stride] != wanted:
                return None
        stretches.append((first, n, start, stride, at + 1 + len(value_prefix)))
        start = end
    if start != len(body):
        return None
    values: list[tuple[int, memoryview]] = []
    for first, n, start, stride, value_at in stretches:
        begin = start + value_at
        kept: Iterable[int] = range(n)
        if value_length and keep is not EVERY_VALUE:
            flags = body[begin:start + n * stride:stride].translate(keep)  # 1 where the value's first byte is kept
            if flags.count(1) != n:
                kept = [index for index, flag in enumerate(flags) if flag] if 1 in flags else ()
        values.extend((base_offset + first + index, view[begin + index * stride:begin + index * stride + value_length])
                      for index in kept)
    return values




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
    if _UNIFORM_FROM < len(values) <= _MAX_DELTAS and len(set(map(len, values))) == 1:
        out = bytearray(BATCH_HEADER_SIZE)
        out += _uniform_records(values, len(values[0]))
        return seal_batch(out, len(values), base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                          base_timestamp=timestamp_ms, max_timestamp=timestamp_ms)
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


def _uniform_records(values: Sequence[bytes | bytearray | memoryview], size: int) -> bytes:
    """The records of `encode_values` when every value is `size` bytes long: each record's framing differs only by
    its offset delta, so the records are one join of the pieces (length and attributes, offset delta, null key and
    value length, value, header count) interleaved by C-level iterators, no Python step per record."""
    count = len(values)
    tail = b"\x01" + _varint(size)  # the null key, the value's length
    pieces: list[Iterable[bytes | bytearray | memoryview]] = []
    for first, stop, width in ((0, min(count, _ONE_BYTE_DELTAS), 1), (_ONE_BYTE_DELTAS, count, 2)):
        if first < stop:  # attributes 0 and timestamp delta 0 after the record's length, then the offset delta
            head = _varint(2 + width + len(tail) + size + 1) + b"\x00\x00"
            deltas = _SMALL[first:stop] if stop <= _SMALL_LIMIT else [_varint(delta) for delta in range(first, stop)]
            pieces.append(chain.from_iterable(zip(repeat(head), deltas, repeat(tail), values[first:stop],
                                                  repeat(b"\x00"))))
    return b"".join(chain.from_iterable(pieces))


__all__ = ["EVERY_VALUE", "NO_VALUE", "encode_values", "simple_values"]
