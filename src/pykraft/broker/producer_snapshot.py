"""Kafka's producer-state snapshot (`<20-digit offset>.snapshot`), encoded and decoded; pure.

The layout is Kafka's `ProducerSnapshot` (storage/src/main/resources/message/ProducerSnapshot.json, version 1,
not flexible), big-endian:

    int16  version = 1
    uint32 crc       CRC-32C of every byte after this field
    int32  count     then `count` entries of 46 bytes:
        int64 producer_id, int16 epoch, int32 last_sequence, int64 last_offset, int32 offset_delta,
        int64 timestamp, int32 coordinator_epoch, int64 current_txn_first_offset (-1: none)

The file named `N.snapshot` holds the state of the producers as of the log up to offset N (exclusive). Kafka keeps
only each producer's last batch in it (`offset_delta` = last offset - first offset of that batch, which for an
idempotent batch is also last - first sequence). A file that fails these checks is `CorruptProducerSnapshotError`:
the caller deletes it and rebuilds the state from the log, as Kafka's ProducerStateManager does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pykraft.records.crc import crc32c

VERSION = 1
_HEADER = struct.Struct(">hI")  # version, crc
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_FROM = _HEADER.size  # the CRC covers the count and the entries


class CorruptProducerSnapshotError(ValueError):
    """The bytes are not a producer snapshot (bad version, bad CRC, truncated or trailing bytes)."""


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int  # -1: no batch of this producer is known (Kafka then keeps only the epoch)
    offset_delta: int
    timestamp: int
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta

    @property
    def first_sequence(self) -> int:
        return (self.last_sequence - self.offset_delta) % (1 << 31)


def encode_producer_snapshot(entries: list[ProducerSnapshotEntry]) -> bytes:
    body = bytearray(_COUNT.pack(len(entries)))
    for e in entries:
        body += _ENTRY.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
                            e.coordinator_epoch, e.current_txn_first_offset)
    return _HEADER.pack(VERSION, crc32c(body)) + bytes(body)


def decode_producer_snapshot(data: bytes | memoryview) -> list[ProducerSnapshotEntry]:
    view = memoryview(data)
    if len(view) < _HEADER.size + _COUNT.size:
        raise CorruptProducerSnapshotError(f"{len(view)} bytes: too short for a producer snapshot")
    version, crc = _HEADER.unpack_from(view, 0)
    if version != VERSION:
        raise CorruptProducerSnapshotError(f"unknown producer snapshot version {version}")
    computed = crc32c(view[_CRC_FROM:])
    if computed != crc:
        raise CorruptProducerSnapshotError(f"CRC mismatch: stored {crc}, computed {computed}")
    (count,) = _COUNT.unpack_from(view, _HEADER.size)
    start = _HEADER.size + _COUNT.size
    if count < 0 or len(view) != start + count * _ENTRY.size:
        raise CorruptProducerSnapshotError(f"{count} entries do not fill {len(view) - start} bytes")
    return [ProducerSnapshotEntry(*_ENTRY.unpack_from(view, start + i * _ENTRY.size)) for i in range(count)]
