"""In-memory `ReplicatedLog` for tests and the deterministic simulator.

It keeps encoded batches in a list together with their header fields, an epoch cache (epoch -> start offset),
frozen snapshots as bytes, and a flushed end offset. `simulate_crash()` models a hard kill: everything appended
after the last `flush()` is lost, as are unfrozen snapshot writers.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

from pykraft.raft.log import (
    BufferSnapshotReader,
    EpochIndexedLog,
    InvalidAppendError,
    InvalidSnapshotIdError,
    LogAppendInfo,
    LogFetchInfo,
    SnapshotId,
    ValidationKind,
)

# Record batch v2 header prefix: base offset, batch length, partition leader epoch, magic, crc, attributes,
# last offset delta. The memory log reads only these fields; the CRC is the codec's business.
_HEADER = struct.Struct(">qiibIhi")
_LENGTH_PREFIX = 12  # base offset + length field
_MAGIC_V2 = 2


@dataclass(frozen=True, slots=True)
class _Batch:
    base_offset: int
    last_offset: int
    epoch: int
    data: bytes


def split_batches(records: bytes | memoryview) -> list[_Batch]:
    """Split a buffer of whole v2 batches by their headers. Raises `InvalidAppendError` on a malformed buffer."""
    view = memoryview(records).cast("B")
    batches: list[_Batch] = []
    pos = 0
    while pos < len(view):
        if len(view) - pos < _HEADER.size:
            raise InvalidAppendError(f"truncated batch header at byte {pos}")
        base, length, epoch, magic, _crc, _attrs, delta = _HEADER.unpack_from(view, pos)
        end = pos + _LENGTH_PREFIX + length
        if magic != _MAGIC_V2 or length < _HEADER.size - _LENGTH_PREFIX or delta < 0 or end > len(view):
            raise InvalidAppendError(f"malformed batch at byte {pos}")
        batches.append(_Batch(base, base + delta, epoch, bytes(view[pos:end])))
        pos = end
    return batches


class MemorySnapshotWriter:
    def __init__(self, log: MemoryLog, snapshot_id: SnapshotId) -> None:
        self._log = log
        self._id = snapshot_id
        self._buffer = bytearray()
        self._frozen = False
        self._closed = False

    @property
    def snapshot_id(self) -> SnapshotId:
        return self._id

    def size_in_bytes(self) -> int:
        return len(self._buffer)

    def append(self, data: bytes | memoryview) -> None:
        assert not self._frozen and not self._closed, "append to a frozen or closed snapshot writer"
        self._buffer += data

    def is_frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        assert not self._closed, "freeze of a closed snapshot writer"
        if not self._frozen:
            self._frozen = True
            self._log._install_snapshot(self._id, bytes(self._buffer))

    def close(self) -> None:
        self._closed = True


class MemoryLog(EpochIndexedLog):
    """A `ReplicatedLog` held in memory. Not thread safe (the core is single threaded)."""

    def __init__(self) -> None:
        self._batches: list[_Batch] = []
        self._base_offsets: list[int] = []  # parallel to _batches, for bisect
        self._epochs: list[tuple[int, int]] = []  # (epoch, start offset), strictly increasing in both
        self._start_offset = 0
        self._high_watermark = 0
        self._flushed = 0
        self._snapshots: dict[SnapshotId, bytes] = {}

    # ---- appends -----------------------------------------------------------------------------------------
    def append_as_leader(self, records: bytes | memoryview, epoch: int) -> LogAppendInfo:
        batches = split_batches(records)
        for batch in batches:
            if batch.epoch != epoch:
                raise InvalidAppendError(f"leader batch epoch {batch.epoch} != leader epoch {epoch}")
        return self._append(batches)

    def append_as_follower(self, records: bytes | memoryview, epoch: int) -> LogAppendInfo:
        return self._append(split_batches(records))

    def _append(self, batches: list[_Batch]) -> LogAppendInfo:
        if not batches:
            raise InvalidAppendError("empty append")
        expected = self.end_offset()
        last_epoch = self.last_fetched_epoch()
        for batch in batches:  # validate everything before mutating anything
            if batch.base_offset != expected:
                raise InvalidAppendError(f"batch base offset {batch.base_offset} != expected {expected}")
            if batch.epoch < last_epoch:
                raise InvalidAppendError(f"batch epoch {batch.epoch} < last epoch {last_epoch}")
            expected, last_epoch = batch.last_offset + 1, batch.epoch
        for batch in batches:
            self._note_epoch(batch.epoch, batch.base_offset)
            self._batches.append(batch)
            self._base_offsets.append(batch.base_offset)
        return LogAppendInfo(batches[0].base_offset, batches[-1].last_offset)

    def _note_epoch(self, epoch: int, start: int) -> None:
        if not self._epochs or epoch > self._epochs[-1][0]:
            self._epochs.append((epoch, start))

    def initialize_leader_epoch(self, epoch: int) -> None:
        assert not self._epochs or epoch >= self._epochs[-1][0], "leader epoch going backwards"
        self._note_epoch(epoch, self.end_offset())

    # ---- reads -------------------------------------------------------------------------------------------
    def read(self, start_offset: int, max_bytes: int) -> LogFetchInfo:
        assert self._start_offset <= start_offset <= self.end_offset(), "read outside the log"
        index = bisect.bisect_right(self._base_offsets, start_offset) - 1
        index = max(index, 0)
        chunks: list[bytes] = []
        size = 0
        first_base = start_offset
        for batch in self._batches[index:]:
            if batch.last_offset < start_offset:
                continue
            if chunks and size + len(batch.data) > max_bytes:
                break
            if not chunks:
                first_base = batch.base_offset
            chunks.append(batch.data)
            size += len(batch.data)
        return LogFetchInfo(b"".join(chunks), first_base)

    def start_offset(self) -> int:
        return self._start_offset

    def end_offset(self) -> int:
        return self._batches[-1].last_offset + 1 if self._batches else self._start_offset

    def last_fetched_epoch(self) -> int:
        if self._batches:
            return self._batches[-1].epoch
        latest = self.latest_snapshot_id()
        return latest.epoch if latest is not None else 0

    # ---- truncation --------------------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        assert offset >= self._start_offset, "truncation below the log start"
        if offset >= self.end_offset():
            return
        keep = bisect.bisect_left(self._base_offsets, offset)
        if keep > 0 and self._batches[keep - 1].last_offset >= offset:
            keep -= 1  # a batch straddling the offset goes entirely: batches are the unit of the log
        del self._batches[keep:]
        del self._base_offsets[keep:]
        end = self.end_offset()
        self._epochs = [(e, s) for e, s in self._epochs if s < end]
        self._flushed = min(self._flushed, end)
        self._high_watermark = min(self._high_watermark, end)

    def truncate_to_latest_snapshot(self) -> bool:
        latest = self.latest_snapshot_id()
        if latest is None:
            return False
        last_epoch = self.last_fetched_epoch()
        if latest.epoch > last_epoch or (latest.epoch == last_epoch and latest.offset > self.end_offset()):
            self._reset_to(latest)
            return True
        return False

    def _reset_to(self, snapshot_id: SnapshotId) -> None:
        self._batches.clear()
        self._base_offsets.clear()
        self._epochs.clear()
        self._start_offset = snapshot_id.offset
        self._high_watermark = snapshot_id.offset
        self._flushed = snapshot_id.offset
        for older in [s for s in self._snapshots if s < snapshot_id]:
            del self._snapshots[older]

    # ---- snapshots ---------------------------------------------------------------------------------------
    def create_new_snapshot(self, snapshot_id: SnapshotId) -> MemorySnapshotWriter | None:
        if snapshot_id.offset > self._high_watermark:
            raise InvalidSnapshotIdError(f"{snapshot_id} is beyond the high watermark {self._high_watermark}")
        if self.validate_offset_and_epoch(snapshot_id.offset, snapshot_id.epoch).kind is not ValidationKind.VALID:
            raise InvalidSnapshotIdError(f"{snapshot_id} is not in the log history")
        if snapshot_id.offset not in (self._start_offset, self.end_offset()) and (
            snapshot_id.offset not in self._base_offsets
        ):
            raise InvalidSnapshotIdError(f"{snapshot_id} is not on a batch boundary")
        index = bisect.bisect_right(self._base_offsets, snapshot_id.offset - 1) - 1
        if index >= 0 and self._batches[index].epoch != snapshot_id.epoch:
            # Stricter than the epoch cache alone: the epoch must be that of the last contained record.
            raise InvalidSnapshotIdError(f"{snapshot_id} does not name the epoch of its last record")
        return self.create_new_snapshot_unchecked(snapshot_id)

    def create_new_snapshot_unchecked(self, snapshot_id: SnapshotId) -> MemorySnapshotWriter | None:
        if snapshot_id in self._snapshots:
            return None
        return MemorySnapshotWriter(self, snapshot_id)

    def _install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        self._snapshots[snapshot_id] = data

    def read_snapshot(self, snapshot_id: SnapshotId) -> BufferSnapshotReader | None:
        data = self._snapshots.get(snapshot_id)
        return None if data is None else BufferSnapshotReader(snapshot_id, data)

    def latest_snapshot_id(self) -> SnapshotId | None:
        return max(self._snapshots) if self._snapshots else None

    def earliest_snapshot_id(self) -> SnapshotId | None:
        return min(self._snapshots) if self._snapshots else None

    def on_snapshot_frozen(self, snapshot_id: SnapshotId) -> None:
        pass  # nothing to index in memory

    def delete_before_snapshot(self, snapshot_id: SnapshotId) -> bool:
        if snapshot_id not in self._snapshots or snapshot_id.offset <= self._start_offset:
            return False
        if snapshot_id.offset > self.end_offset():
            return False  # use truncate_to_latest_snapshot for a snapshot ahead of the log
        drop = bisect.bisect_left(self._base_offsets, snapshot_id.offset)
        del self._batches[:drop]
        del self._base_offsets[:drop]
        # Keep the epoch that covers the new start so end_offset_for_epoch stays right for later epochs.
        self._epochs = [(e, max(s, snapshot_id.offset)) for e, s in self._epochs if e >= snapshot_id.epoch]
        self._start_offset = snapshot_id.offset
        # What lies below the new start is covered by a frozen (durable) snapshot, so it counts as flushed even
        # when the batches dropped here never were: the flushed end never falls below the log start.
        self._flushed = max(self._flushed, snapshot_id.offset)
        for older in [s for s in self._snapshots if s < snapshot_id]:
            del self._snapshots[older]
        return True

    # ---- durability --------------------------------------------------------------------------------------
    def flush(self, force_active_segment: bool = False) -> None:
        self._flushed = self.end_offset()

    def flushed_end_offset(self) -> int:
        return self._flushed

    def simulate_crash(self) -> None:
        """A hard kill: unflushed batches are lost. Frozen snapshots survive (freeze is durable)."""
        if self._flushed < self.end_offset():
            self.truncate_to(max(self._flushed, self._start_offset))

    # ---- inspection helpers for tests --------------------------------------------------------------------
    def batch_count(self) -> int:
        return len(self._batches)

    def epoch_entries(self) -> list[tuple[int, int]]:
        return list(self._epochs)
