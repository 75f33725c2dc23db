"""Many batches rebuilt around their kept records at once (the log cleaner's fast path): what `rebuild.rebuild_records`
writes for each, byte for byte, with numpy over all the records instead of a Python step per record.

The kept records are given as columns (their batch, offset delta, timestamp delta, and where each one's key, value
and headers lie in `raw`), grouped by batch in batch order. Each new record is its length varint, the attributes
byte (0, as Kafka writes it), the zig-zag varints of its new timestamp delta and of its offset delta, and its key,
value and headers copied; the timestamps are rebased on the delete horizon when one is set, else on the first kept
record's timestamp, and a log-append-time batch gives every record its max timestamp (`rebuild_records`). The
varints are written a byte position at a time over all records, the copied bytes a slice per record. Only uncompressed
batches: a compressed one is rebuilt by `rebuild_records`. Each batch's header and CRC-32C are then written in turn.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .batch import ATTR_COMPRESSION_MASK, ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE, BATCH_HEADER_SIZE, CRC_START, \
    LOG_OVERHEAD, MAGIC, RecordBatch
from .crc import crc32c
from .lazy_numpy import numpy_on_first_use

if TYPE_CHECKING:
    import numpy as np
else:
    np = numpy_on_first_use()
    if np is None:
        raise ImportError("numpy is not installed")

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC = struct.Struct(">I")
_MAX_VARINT_BYTES = 10


def _zigzag_sizes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the zig-zag encodings as uint64, their varint sizes)."""
    zigzag = ((values << 1) ^ (values >> 63)).view(np.uint64)
    sizes = np.ones(len(values), dtype=np.int64)
    for k in range(1, _MAX_VARINT_BYTES):
        sizes += zigzag >= np.uint64(1 << (7 * k))
    return zigzag, sizes


def _put_varints(out: np.ndarray, at: np.ndarray, zigzag: np.ndarray, sizes: np.ndarray) -> None:
    """Write each varint at its place in `out`."""
    rows = np.arange(len(at))
    for k in range(int(sizes.max()) if len(sizes) else 0):
        rows = rows[sizes[rows] > k]
        group = (zigzag[rows] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (sizes[rows] > k + 1).astype(np.uint64) << np.uint64(7)
        out[at[rows] + k] = (group | more).astype(np.uint8)


def rebuild_many(batches: Sequence[RecordBatch], horizons: Sequence[int | None], raw: bytes | bytearray | memoryview,
                 owner: np.ndarray, offset_delta: np.ndarray, timestamp_delta: np.ndarray, tail: np.ndarray,
                 end: np.ndarray) -> list[bytes]:
    """`rebuild_records(batches[j], raw, ...its rows..., horizons[j])` for every j, the rows of batch j being those
    with owner == j (int64 columns, grouped by batch in order; every batch has at least one row)."""
    n = len(batches)
    assert all(not b.attributes & ATTR_COMPRESSION_MASK for b in batches), "compressed: rebuild_records"
    first = np.searchsorted(owner, np.arange(n))
    log_append = np.array([bool(b.attributes & ATTR_TIMESTAMP_TYPE) for b in batches], dtype=bool)
    max_ts = np.array([b.max_timestamp for b in batches], dtype=np.int64)
    base_ts = np.array([b.base_timestamp for b in batches], dtype=np.int64)
    stamps = np.where(log_append[owner], max_ts[owner], base_ts[owner] + timestamp_delta)
    has_horizon = np.array([h is not None for h in horizons], dtype=bool)
    horizon = np.array([h if h is not None else 0 for h in horizons], dtype=np.int64)
    new_base = np.where(has_horizon, horizon, stamps[first])
    ts_zz, ts_size = _zigzag_sizes(stamps - new_base[owner])
    od_zz, od_size = _zigzag_sizes(offset_delta)
    body = end - tail
    length_zz, length_size = _zigzag_sizes(1 + ts_size + od_size + body)
    record_size = length_size + 1 + ts_size + od_size + body
    counts = np.bincount(owner, minlength=n)
    batch_size = BATCH_HEADER_SIZE + np.bincount(owner, weights=record_size, minlength=n).astype(np.int64)
    batch_at = np.concatenate(([0], np.cumsum(batch_size)))
    record_at = np.cumsum(record_size) - record_size  # from the first record of the first batch
    record_at += BATCH_HEADER_SIZE * (owner + 1)  # each batch's header before its records
    out = np.zeros(int(batch_at[-1]), dtype=np.uint8)
    _put_varints(out, record_at, length_zz, length_size)
    at = record_at + length_size + 1  # the attributes byte stays 0
    _put_varints(out, at, ts_zz, ts_size)
    at += ts_size
    _put_varints(out, at, od_zz, od_size)
    at += od_size
    _copy(out, raw, at.tolist(), tail.tolist(), end.tolist())
    top = np.maximum.reduceat(stamps, first)
    top = np.where(log_append, max_ts, top)
    return _headers(batches, out, batch_at.tolist(), new_base.tolist(), has_horizon.tolist(), top.tolist(),
                    counts.tolist())


def _copy(out: np.ndarray, raw: bytes | bytearray | memoryview, at: list[int], tail: list[int],
          end: list[int]) -> None:
    """Each record's key, value and headers into its place: a slice copy each (a gather of every byte would take
    index arrays eight times the bytes copied)."""
    target, source = memoryview(out.data), memoryview(raw)
    if source.format != "B":
        source = source.cast("B")
    for place, first, last in zip(at, tail, end):
        target[place:place + last - first] = source[first:last]


def _headers(batches: Sequence[RecordBatch], out: np.ndarray, batch_at: list[int], new_base: list[int],
             has_horizon: list[bool], top: list[int], counts: list[int]) -> list[bytes]:
    """Each batch's header and CRC, written over its part of `out`; the batches as bytes."""
    buffer = memoryview(out.data)  # the array's own buffer: headers are packed into it in place
    found = []
    for j, batch in enumerate(batches):
        a, b = batch_at[j], batch_at[j + 1]
        attributes = batch.attributes & ~ATTR_DELETE_HORIZON
        if has_horizon[j]:
            attributes |= ATTR_DELETE_HORIZON
        view = buffer[a:b]
        _HEADER.pack_into(view, 0, batch.base_offset, b - a - LOG_OVERHEAD, batch.partition_leader_epoch, MAGIC, 0,
                          attributes, batch.last_offset_delta, new_base[j], top[j], batch.producer_id,
                          batch.producer_epoch, batch.base_sequence, counts[j])
        _CRC.pack_into(view, 17, crc32c(view[CRC_START:]))
        found.append(bytes(view))
    return found
