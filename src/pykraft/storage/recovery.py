"""Recovery on open: validate every batch of a segment, tell a torn tail from corruption.

Rules (Protocol-Aware Recovery, FAST'18, applied to Kafka's layout):
- Every batch must have magic 2, a sane length, a matching CRC-32C, the base offset that continues the log and
  an epoch that does not go backwards.
- Only the active (last) segment can end in a torn write: a segment is fsynced before a newer one is created
  (`Segment.seal`). A bad batch in any other segment is corruption.
- In the last segment a bad batch is a torn tail only if nothing valid follows it: a torn write leaves a prefix of
  what was being written (or zeros), never a complete, checksummed batch further on. If a valid batch with a
  later offset follows, the bad batch was once complete, so it is corruption and nothing is truncated.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from pykraft.records import RecordsError, iter_batches
from pykraft.records.crc import crc32c

from .errors import CorruptLogError
from .files import pread_exact
from .segment import HEADER, LOG_OVERHEAD, Segment

_CHUNK = 8 << 20
_MIN_LENGTH = 49  # a v2 batch header without records, minus the 12-byte log overhead
_MAX_TORN_TAIL = 128 << 20  # a suspected torn region larger than this is treated as corruption (never truncated)
_PREFIX = struct.Struct(">qi")


@dataclass(frozen=True, slots=True)
class TornTail:
    """A torn write dropped at the tail of the log during recovery."""

    path: str
    position: int
    offset: int
    dropped_bytes: int
    reason: str


@dataclass(slots=True)
class SegmentScan:
    next_offset: int
    last_epoch: int
    epoch_starts: list[tuple[int, int]] = field(default_factory=list)
    torn: TornTail | None = None
    gaps: bool = False  # a batch may start above the previous one's end (a cleaned partition log)


def scan_segment(segment: Segment, expected_offset: int, last_epoch: int, is_last: bool,
                 gaps: bool = False) -> SegmentScan:
    """Validate `segment` and fill its in-memory index, up to a torn tail if there is one (`scan.torn`; the file is
    not changed: `cut_torn_tail` does that once every check of the open has passed). With `gaps`, batches need
    only increasing offsets (Kafka's rule: the log cleaner leaves gaps), else each must continue the previous one.
    Raises `CorruptLogError`."""
    file_size = os.fstat(segment.fd).st_size
    scan = SegmentScan(expected_offset, last_epoch, gaps=gaps)
    position = 0
    chunk_size = _CHUNK
    while position < file_size:
        chunk = pread_exact(segment.fd, min(chunk_size, file_size - position), position)
        consumed, problem = _scan_chunk(chunk, segment, position, scan)
        if problem is not None:
            return _bad_batch(segment, position + problem[0], problem[1], file_size, is_last, scan)
        if consumed == 0:
            if len(chunk) < LOG_OVERHEAD or position + LOG_OVERHEAD + _PREFIX.unpack_from(chunk)[1] > file_size:
                reason = f"the last batch is cut: {file_size - position} bytes remain"
                return _bad_batch(segment, position, reason, file_size, is_last, scan)
            chunk_size = LOG_OVERHEAD + _PREFIX.unpack_from(chunk)[1]  # one batch larger than the chunk
            continue
        chunk_size = _CHUNK
        position += consumed
    return scan


def _scan_chunk(chunk: bytearray, segment: Segment, base: int, scan: SegmentScan) -> tuple[int, tuple[int, str] | None]:
    """Walk the whole batches of one chunk. Returns bytes consumed and the first problem (position, reason)."""
    consumed = 0
    try:
        for batch in iter_batches(chunk, allow_truncated_tail=True):
            if batch.base_offset != scan.next_offset and not (scan.gaps and batch.base_offset > scan.next_offset):
                return consumed, (consumed, f"base offset {batch.base_offset}, expected {scan.next_offset}")
            if batch.last_offset_delta < 0:
                return consumed, (consumed, f"negative last offset delta {batch.last_offset_delta}")
            epoch = batch.partition_leader_epoch
            if epoch < scan.last_epoch:
                return consumed, (consumed, f"leader epoch {epoch} after epoch {scan.last_epoch}")
            if not scan.epoch_starts or epoch > scan.epoch_starts[-1][0]:
                scan.epoch_starts.append((epoch, batch.base_offset))
            size = batch.size_in_bytes
            o, t = segment.index.observe(base + consumed, batch.last_offset, batch.max_timestamp, size)
            if segment.size == 0 and consumed == 0 and base == 0:
                segment.first_timestamp = batch.max_timestamp
            consumed += size
            segment.size = base + consumed
            scan.next_offset = batch.last_offset + 1
            scan.last_epoch = epoch
    except RecordsError as exc:
        return consumed, (exc.position, str(exc))
    return consumed, None


def _bad_batch(
    segment: Segment, position: int, reason: str, file_size: int, is_last: bool, scan: SegmentScan
) -> SegmentScan:
    offset = scan.next_offset
    if not is_last:
        raise CorruptLogError(segment.path, position, offset, f"{reason} (in a sealed segment)")
    if file_size - position > _MAX_TORN_TAIL:
        raise CorruptLogError(segment.path, position, offset, f"{reason}, with {file_size - position} bytes after it")
    if _valid_batch_after(segment.fd, position, file_size, offset):
        raise CorruptLogError(segment.path, position, offset, f"{reason}, and a valid batch with a later offset follows it")
    segment.size = position
    scan.torn = TornTail(segment.path, position, offset, file_size - position, reason)
    return scan


def cut_torn_tail(segment: Segment, torn: TornTail) -> None:
    """Drop the torn tail `scan_segment` found (the segment's size already ends before it)."""
    os.ftruncate(segment.fd, torn.position)
    segment.dirty = True


def _valid_batch_after(fd: int, position: int, file_size: int, expected_offset: int) -> bool:
    """Whether a complete batch with a valid CRC and an offset >= `expected_offset` starts after `position`."""
    region = bytes(pread_exact(fd, file_size - position, position))
    magic_at = 16
    search = 1 + magic_at
    while True:
        hit = region.find(b"\x02", search)
        if hit < 0:
            return False
        search = hit + 1
        start = hit - magic_at
        if start < 1 or start + HEADER.size > len(region):
            continue
        base, length, _epoch, _magic, crc, *_ = HEADER.unpack_from(region, start)
        if not (expected_offset <= base < expected_offset + (1 << 31)) or length < _MIN_LENGTH:
            continue
        end = start + LOG_OVERHEAD + length
        if end <= len(region) and crc32c(memoryview(region)[start + 21 : end]) == crc:
            return True
