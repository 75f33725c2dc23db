"""Record batches as a producer client writes them: keys, values, headers and timestamps per record, the records
section optionally compressed (gzip, snappy, lz4, zstd: the attribute's low bits), and the idempotent producer's
id, epoch and base sequence (or -1s). The leader assigns the offsets and the leader epoch, so both are 0 / -1 here.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from .batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, MAGIC, SimpleRecord, _encode_record
from .compression import Compression, compress
from .crc import crc32c

__all__ = ["encode_producer_batch"]

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_AT, _CRC_START = 17, 21


def encode_producer_batch(records: Sequence[SimpleRecord], *, timestamp_ms: int,
                          compression: Compression = Compression.NONE, producer_id: int = -1,
                          producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """One batch of `records`; records without a timestamp take `timestamp_ms`."""
    if not records:
        raise ValueError("a record batch holds at least one record")
    timestamps = [timestamp_ms if r.timestamp_ms is None else r.timestamp_ms for r in records]
    base_timestamp = min(timestamps)
    body = bytearray()
    for delta, (record, timestamp) in enumerate(zip(records, timestamps)):
        _encode_record(body, delta, timestamp - base_timestamp, record)
    if compression != Compression.NONE:
        body = bytearray(compress(compression, bytes(body)))
    out = bytearray(BATCH_HEADER_SIZE) + body
    _HEADER.pack_into(out, 0, 0, len(out) - LOG_OVERHEAD, -1, MAGIC, 0, int(compression), len(records) - 1,
                      base_timestamp, max(timestamps), producer_id, producer_epoch, base_sequence, len(records))
    struct.pack_into(">I", out, _CRC_AT, crc32c(memoryview(out)[_CRC_START:]))
    return bytes(out)
