"""Vectorised decoding of a run of uncompressed, non-control record batches into Arrow columns.

The per-record Python path (`records.batch`: a `Record` tuple per record, then one Python list per column) costs
far more than the bytes it reads. Here the only per-record Python step is the walk over the record lengths (each
record's start depends on the previous one's length varint); every other field (timestamp and offset deltas, key
and value lengths, the header count) is read with numpy at all records' positions at once, and keys and values
become Arrow binary columns copied out of one zero-copy view of the buffer, never a Python `bytes` each.

Anything this path does not handle the way `records.batch` would (an impossible length, an over-long varint, a
record with headers, a field running past its record) makes `decode_run` return None: the caller then decodes
the run record by record, so that damage still gets `records.batch`'s exact error text. Tables are therefore
identical either way (tests/pipeline/test_columnar.py compares both paths).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pykraft.records import RecordBatch, RecordsError
from pykraft.records.batch import BATCH_HEADER_SIZE
from pykraft.records.varint import read_varint

_INT32_VARINT_BYTES = 5  # longer encodings of an int32 field: left to records.batch to judge
_MIN_RECORD_LENGTH = 6


@dataclass(frozen=True, slots=True)
class RunColumns:
    """The per-record columns of a run of batches; `batch_of` maps each record to its batch in the run."""

    batch_of: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    key: pa.Array
    value: pa.Array
    value_start: np.ndarray  # byte positions of each value in the run's buffer (for metadata decoding)
    value_length: np.ndarray  # -1 = null


def _record_heads(body: bytes, count: int, heads: array) -> bool:
    """Append where each of the `count` records in `body` (a batch's records section) begins, its length varint,
    relative to the body (the caller adds the body's place in the run's buffer, all at once); the only per-record
    Python step, so it reads nothing else (the lengths are decoded and checked again, all at once, by `_bounds`).
    False when the records do not end where the body does."""
    pos = 0
    append = heads.append
    try:
        for _ in range(count):
            append(pos)
            b = body[pos]
            if b < 0x80:
                pos += 1 + (b >> 1)
            elif body[pos + 1] < 0x80:
                pos += 2 + (((b & 0x7F) | (body[pos + 1] << 7)) >> 1)
            else:
                length, after = read_varint(body, pos)
                if length < _MIN_RECORD_LENGTH:
                    return False
                pos = after + length
    except (IndexError, RecordsError):  # the record-by-record path reports it
        return False
    return pos == len(body)


def _varints(buf: np.ndarray, pos: np.ndarray, max_bytes: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """Zig-zag varints at every position at once: (values, sizes, all end within max_bytes). The first byte of
    every varint is read in one gather over all rows (most varints end there); byte k of the ones still open is
    then read for those rows only."""
    last = len(buf) - 1
    first = buf[np.minimum(pos, last)]
    zigzag = (first & 0x7F).astype(np.int64)
    size = (first < 0x80).astype(np.int64)  # 1 where the varint ended, 0 while open
    open_rows = np.flatnonzero(size == 0)
    for k in range(1, max_bytes):
        if not len(open_rows):
            break
        byte = buf[np.minimum(pos[open_rows] + k, last)]
        zigzag[open_rows] |= (byte & 0x7F).astype(np.int64) << (7 * k)
        ends = byte < 0x80
        size[open_rows[ends]] = k + 1
        open_rows = open_rows[~ends]
    unsigned = zigzag.view(np.uint64)  # a 10-byte varint fills all 64 bits: the shift below must be logical
    values = (unsigned >> np.uint64(1)).view(np.int64) ^ -(zigzag & 1)
    return values, size, not len(open_rows)


def binary_column(buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """An Arrow binary array of buf[start:start+length] per row (length -1 = null), the ranges in ascending order
    and not overlapping (as records lie in a run). One zero-copy array over the buffer covers row i's bytes as
    element 2i and the gap before row i+1 as element 2i+1; taking the even elements copies every row's bytes in
    one C loop (a byte mask over the whole range, as before, cost ten times more: numpy work per byte)."""
    count = len(start)
    if count == 0:
        return pa.array([], pa.binary())
    present = length >= 0
    bounds = np.empty(2 * count, dtype=np.int64)
    bounds[0::2] = start
    bounds[1::2] = start + np.where(present, length, 0)
    lo, hi = int(bounds[0]), int(bounds[-1])
    offsets = bounds - lo
    if (np.diff(offsets) < 0).any() or hi - lo > np.iinfo(np.int32).max:
        raise ValueError("binary_column: ranges out of order, overlapping or over 2 GiB")
    spans = pa.BinaryArray.from_buffers(pa.binary(), 2 * count - 1,
                                        [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(buf[lo:hi])])
    rows = np.arange(0, 2 * count, 2, dtype=np.int32)
    return spans.take(pa.array(rows, mask=None if present.all() else ~present))


def decode_run(buf: np.ndarray, raw: bytes | memoryview, batches: list[tuple[int, RecordBatch]]) -> RunColumns | None:
    """The records of `batches` ((position in buf, batch) each, uncompressed, not control), or None when the
    record-by-record path must judge them."""
    heads = array("q")  # int64 as numpy reads it without a copy (a list's conversion cost ~40% of the walk itself)
    counts, body_starts = [], []
    for position, batch in batches:
        body_start = position + BATCH_HEADER_SIZE
        body = bytes(raw[body_start: position + batch.size_in_bytes])
        if not _record_heads(body, batch.record_count, heads):
            return None
        counts.append(batch.record_count)
        body_starts.append(body_start)
    head_positions = np.frombuffer(heads, dtype=np.int64) if heads else np.zeros(0, np.int64)
    head_positions = head_positions + np.repeat(np.asarray(body_starts, dtype=np.int64), counts)
    length, size, well_formed = _varints(buf, head_positions, _INT32_VARINT_BYTES)
    if not well_formed or (length < _MIN_RECORD_LENGTH).any():
        return None
    start = head_positions + size
    fields = _record_fields(buf, start + 1, start + length)  # + 1: the attributes byte
    if fields is None:
        return None
    timestamp_delta, offset_delta, key_start, key_length, value_start, value_length = fields
    batch_of = np.repeat(np.arange(len(batches)), counts)
    base_offsets = np.asarray([b.base_offset for _, b in batches], dtype=np.int64)[batch_of]
    base_timestamps = np.asarray([b.base_timestamp for _, b in batches], dtype=np.int64)[batch_of]
    return RunColumns(batch_of, base_offsets + offset_delta, base_timestamps + timestamp_delta,
                      binary_column(buf, key_start, key_length), binary_column(buf, value_start, value_length),
                      value_start, value_length)


def _record_fields(buf: np.ndarray, pos: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """(timestamp delta, offset delta, key start, key length, value start, value length), or None."""
    timestamp_delta, size, ok_ts = _varints(buf, pos, 10)
    pos = pos + size
    offset_delta, size, ok_off = _varints(buf, pos, _INT32_VARINT_BYTES)
    pos = pos + size
    key_length, size, ok_key = _varints(buf, pos, _INT32_VARINT_BYTES)
    key_start = pos + size
    pos = key_start + np.maximum(key_length, 0)
    if not (ok_ts and ok_off and ok_key) or (key_length < -1).any() or (pos >= end).any():
        return None
    value_length, size, ok_value = _varints(buf, pos, _INT32_VARINT_BYTES)
    value_start = pos + size
    pos = value_start + np.maximum(value_length, 0)
    if not ok_value or (value_length < -1).any() or (pos >= end).any():
        return None
    if (buf[pos] != 0).any() or (pos + 1 != end).any():  # headers (or trailing bytes): records.batch's call
        return None
    return timestamp_delta, offset_delta, key_start, key_length, value_start, value_length
