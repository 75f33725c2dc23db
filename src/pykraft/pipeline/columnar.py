"""Vectorised decoding of a run of uncompressed, non-control record batches into Arrow columns.

The per-record Python path (`records.batch`: a `Record` tuple per record, then one Python list per column) costs
far more than the bytes it reads. Here no step is per record: where each record begins is found by the project's
record scan (`records/record_scan.py`, the log cleaner's: records of one size framed at once and proven, varied
sizes stepped through a numpy step per record index across the run's batches), and every other field (timestamp
and offset deltas, key and value lengths, the header count) is read with numpy at all records' positions at once;
keys and values become Arrow binary columns copied out of one zero-copy view of the buffer, never a Python `bytes`
each.

Anything this path does not handle the way `records.batch` would (an impossible length, an over-long varint, a
record with headers, a field running past its record) makes `decode_run` return None: the caller then decodes
the run record by record, so that damage still gets `records.batch`'s exact error text. Tables are therefore
identical either way (tests/pipeline/test_columnar.py compares both paths).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pykraft.records import RecordBatch
from pykraft.records.batch import BATCH_HEADER_SIZE
from pykraft.records.record_scan import RecordColumns, scan_records, varints

_INT32_VARINT_BYTES = 5  # longer encodings of an int32 field: left to records.batch to judge


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


def binary_column(buf: np.ndarray, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """An Arrow binary array of buf[start:start+length] per row (length -1 = null), the ranges in ascending order
    and not overlapping (as records lie in a run). One zero-copy array over the buffer covers row i's bytes as
    element 2i and the gap before row i+1 as element 2i+1; taking the even elements copies every row's bytes in
    one C loop (a byte mask over the whole range, as before, cost ten times more: numpy work per byte)."""
    count = len(start)
    if count == 0:
        return pa.array([], pa.binary())
    present = length >= 0
    if not present.any():  # no key at all (metadata records, most producers' records): nothing to copy
        return pa.nulls(count, pa.binary())
    end = start + np.maximum(length, 0)
    lo, hi = int(start[0]), int(end[-1])
    if hi - lo > np.iinfo(np.int32).max or (start[1:] < end[:-1]).any():
        raise ValueError("binary_column: ranges out of order, overlapping or over 2 GiB")
    bounds = np.empty(2 * count, dtype=np.int32)  # the spans' offsets, made in Arrow's type at once
    np.subtract(start, lo, out=bounds[0::2], casting="unsafe")  # unsafe: within int32, checked above
    np.subtract(end, lo, out=bounds[1::2], casting="unsafe")
    spans = pa.BinaryArray.from_buffers(pa.binary(), 2 * count - 1,
                                        [None, pa.py_buffer(bounds), pa.py_buffer(buf[lo:hi])])
    rows = np.arange(0, 2 * count, 2, dtype=np.int32)
    return spans.take(pa.array(rows, mask=None if present.all() else ~present))


def decode_run(buf: np.ndarray, raw: bytes | memoryview, batches: list[tuple[int, RecordBatch]]) -> RunColumns | None:
    """The records of `batches` ((position in buf, batch) each, uncompressed, not control), or None when the
    record-by-record path must judge them."""
    scanned = scan_records(raw, [(position + BATCH_HEADER_SIZE, position + batch.size_in_bytes, batch.record_count)
                                 for position, batch in batches])
    if scanned is None:
        return None
    values = _value_fields(buf, scanned)
    if values is None:
        return None
    value_start, value_length = values
    count = len(scanned.start)
    batch_of = np.repeat(np.arange(len(batches)), np.diff(scanned.first))
    base_offsets = np.asarray([b.base_offset for _, b in batches], dtype=np.int64)[batch_of]
    base_timestamps = np.asarray([b.base_timestamp for _, b in batches], dtype=np.int64)[batch_of]
    timestamp_delta = scanned.timestamp_deltas(np.arange(count))
    return RunColumns(batch_of, base_offsets + scanned.offset_delta, base_timestamps + timestamp_delta,
                      binary_column(buf, scanned.key_start, scanned.key_length),
                      binary_column(buf, value_start, value_length), value_start, value_length)


def _value_fields(buf: np.ndarray, scanned: RecordColumns) -> tuple[np.ndarray, np.ndarray] | None:
    """(value start, value length) of every record, or None where a record does not end, as records.batch reads
    it, with its value and an empty header list (headers are the record-by-record path's)."""
    key_end = scanned.key_start + np.maximum(scanned.key_length, 0)  # the scan checked it lies in the record
    value_length, size = varints(buf, key_end, _INT32_VARINT_BYTES)
    if value_length is None or (value_length < -1).any():
        return None
    value_start = key_end + size
    after = value_start + np.maximum(value_length, 0)
    end = scanned.end
    if (after >= end).any() or (buf[after] != 0).any() or (after + 1 != end).any():
        return None
    return value_start, value_length
