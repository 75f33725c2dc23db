"""The replicated log as the raft core sees it.

The core holds one `ReplicatedLog` and calls its mutating methods directly: appends are buffered (not durable)
until the runtime executes a `FlushLog` effect and reports back with `RaftCore.on_log_flushed`. This mirrors
Kafka's `ReplicatedLog`, where `appendAsLeader`/`appendAsFollower` write to the page cache and `flush` fsyncs.

Records cross this interface as whole encoded record batches (v2 format, see `pykraft.records`): the log never
re-encodes them, it only reads the batch headers to learn offsets and epochs.

Two implementations exist: `pykraft.raft.memory_log.MemoryLog` (tests, simulation) and the file-backed log in
`pykraft.storage`. Both must satisfy the contract documented on each method below.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "EpochIndexedLog",
    "OffsetAndEpoch",
    "SnapshotId",
    "BOOTSTRAP_SNAPSHOT_ID",
    "ValidationKind",
    "ValidOffsetAndEpoch",
    "LogAppendInfo",
    "LogFetchInfo",
    "LogError",
    "InvalidAppendError",
    "InvalidSnapshotIdError",
    "RawSnapshotReader",
    "BufferSnapshotReader",
    "RawSnapshotWriter",
    "ReplicatedLog",
    "truncation_offset",
    "end_offset_for_epoch_in",
    "validate_offset_and_epoch_in",
]


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """An (offset, epoch) pair. Ordering is lexicographic on (offset, epoch) like Kafka's `OffsetAndEpoch`.

    When comparing log positions for vote granting use `(epoch, offset)` order instead; see `is_log_up_to_date`
    in the election code.
    """

    offset: int
    epoch: int


# A snapshot id is (end offset exclusive, epoch of the last contained record).
SnapshotId = OffsetAndEpoch

# The bootstrap snapshot written by `storage format` for dynamic quorums. It is never served over FetchSnapshot.
BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)


class ValidationKind(enum.Enum):
    VALID = "valid"
    DIVERGING = "diverging"
    SNAPSHOT = "snapshot"


@dataclass(frozen=True, slots=True)
class ValidOffsetAndEpoch:
    """Result of `ReplicatedLog.validate_offset_and_epoch`.

    - VALID: `offset_and_epoch` is the position that was validated.
    - DIVERGING: `offset_and_epoch` is the local end offset for the requested epoch (what the follower must
      truncate to; sent back as the Fetch response's DivergingEpoch).
    - SNAPSHOT: `offset_and_epoch` is the latest snapshot id (sent back as the Fetch response's SnapshotId).
    """

    kind: ValidationKind
    offset_and_epoch: OffsetAndEpoch

    @staticmethod
    def valid(offset_and_epoch: OffsetAndEpoch) -> ValidOffsetAndEpoch:
        return ValidOffsetAndEpoch(ValidationKind.VALID, offset_and_epoch)

    @staticmethod
    def diverging(offset_and_epoch: OffsetAndEpoch) -> ValidOffsetAndEpoch:
        return ValidOffsetAndEpoch(ValidationKind.DIVERGING, offset_and_epoch)

    @staticmethod
    def snapshot(snapshot_id: SnapshotId) -> ValidOffsetAndEpoch:
        return ValidOffsetAndEpoch(ValidationKind.SNAPSHOT, snapshot_id)


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    """Offsets of an append: first and last offset written (inclusive)."""

    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class LogFetchInfo:
    """Result of a read: whole encoded batches starting with the batch that contains the requested offset.

    `start_offset` is the base offset of the first returned batch (it may be below the requested offset when
    the requested offset falls inside a batch). `records` is empty when the read starts at the end offset.
    """

    records: bytes | memoryview
    start_offset: int


class LogError(Exception):
    """Base class for errors the log raises for invalid local use (never for peer input)."""


class InvalidAppendError(LogError):
    """The batches do not continue the log (wrong base offset, epoch going backwards, undecodable header)."""


class InvalidSnapshotIdError(LogError):
    """A snapshot id that is beyond the high watermark, not on a batch boundary, or not in the log history."""


@runtime_checkable
class RawSnapshotReader(Protocol):
    """Byte-level reader of a frozen snapshot. The content is a sequence of encoded record batches."""

    @property
    def snapshot_id(self) -> SnapshotId: ...

    def size_in_bytes(self) -> int: ...

    def read(self, position: int, max_bytes: int) -> bytes | memoryview:
        """Up to `max_bytes` bytes from `position`; the slice may cut a batch (FetchSnapshot is unaligned)."""
        ...

    def records(self) -> bytes | memoryview:
        """The whole snapshot content."""
        ...


class BufferSnapshotReader:
    """A `RawSnapshotReader` over a snapshot whose bytes are already addressable: held in memory (MemoryLog) or
    memory-mapped from a `.checkpoint` file (the file log subclasses this)."""

    def __init__(self, snapshot_id: SnapshotId, data: bytes | memoryview) -> None:
        self._id = snapshot_id
        self._data = data

    @property
    def snapshot_id(self) -> SnapshotId:
        return self._id

    def size_in_bytes(self) -> int:
        return len(self._data)

    def read(self, position: int, max_bytes: int) -> bytes | memoryview:
        return self._data[position : position + max(0, max_bytes)]

    def records(self) -> bytes | memoryview:
        return self._data


@runtime_checkable
class RawSnapshotWriter(Protocol):
    """Byte-level writer of a snapshot that becomes visible only once frozen (file: `.part` renamed on freeze)."""

    @property
    def snapshot_id(self) -> SnapshotId: ...

    def size_in_bytes(self) -> int: ...

    def append(self, data: bytes | memoryview) -> None: ...

    def is_frozen(self) -> bool: ...

    def freeze(self) -> None:
        """Make the snapshot durable and visible to `read_snapshot`/`latest_snapshot_id`."""
        ...

    def close(self) -> None:
        """Release resources; an unfrozen snapshot is discarded."""
        ...


class ReplicatedLog(Protocol):
    """The log of `__cluster_metadata-0` as used by the raft core.

    Offsets: `start_offset() <= high_watermark() <= end_offset()` is NOT enforced by the log (the HWM is
    owned by the core); the log only stores what the core tells it.
    """

    # ---- appends -----------------------------------------------------------------------------------------
    def append_as_leader(self, records: bytes | memoryview, epoch: int) -> LogAppendInfo:
        """Append batches built by the leader. The first batch's base offset must equal `end_offset()` and every
        batch's partition leader epoch must equal `epoch`. Raises `InvalidAppendError` otherwise."""
        ...

    def append_as_follower(self, records: bytes | memoryview, epoch: int) -> LogAppendInfo:
        """Append batches fetched from the leader. Batches must be contiguous from `end_offset()` and their epochs
        must not go backwards. `epoch` is the follower's current epoch (used only for diagnostics). Raises
        `InvalidAppendError` when the batches do not continue the log; the core turns that into a dropped
        response, never a crash."""
        ...

    def initialize_leader_epoch(self, epoch: int) -> None:
        """Record that `epoch` starts at the current end offset (epoch cache), before any batch of it exists."""
        ...

    # ---- reads -------------------------------------------------------------------------------------------
    def read(self, start_offset: int, max_bytes: int) -> LogFetchInfo:
        """Whole batches from the one containing `start_offset`, at least one batch even if larger than
        `max_bytes`. `start_offset` must be within [start_offset(), end_offset()]."""
        ...

    def start_offset(self) -> int:
        """The log start offset (end offset of the snapshot the log was truncated to, else 0)."""
        ...

    def end_offset(self) -> int:
        """The log end offset (LEO): the offset the next appended record will get."""
        ...

    def last_fetched_epoch(self) -> int:
        """Epoch of the last batch; if the log is empty past its start, the latest snapshot's epoch; else 0."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch <= `epoch` known locally and the end offset of that epoch (start of the next higher
        epoch, or the LEO). When `epoch` predates everything in the log, returns the earliest snapshot's epoch
        (or 0) with the offset where the first retained epoch starts."""
        ...

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> ValidOffsetAndEpoch:
        """Check a follower's (fetch offset, last fetched epoch) against this log."""
        ...

    # ---- high watermark (stored for read isolation; the core owns the value) -------------------------------
    def high_watermark(self) -> int: ...

    def update_high_watermark(self, offset: int) -> None: ...

    # ---- truncation --------------------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Remove every record at or after `offset`. Must not go below the high watermark of committed data;
        the core guarantees it never asks that."""
        ...

    def truncate_to_latest_snapshot(self) -> bool:
        """If the latest snapshot is ahead of the log, drop the whole log and restart it at the snapshot end
        offset (start = end = snapshot end). Returns whether it truncated."""
        ...

    # ---- snapshots ---------------------------------------------------------------------------------------
    def create_new_snapshot(self, snapshot_id: SnapshotId) -> RawSnapshotWriter | None:
        """Writer for a snapshot of committed data. Raises `InvalidSnapshotIdError` if the id is beyond the HWM,
        not VALID in this log or not on a batch boundary. Returns None if the snapshot already exists."""
        ...

    def create_new_snapshot_unchecked(self, snapshot_id: SnapshotId) -> RawSnapshotWriter | None:
        """Writer for a snapshot downloaded from the leader (no validation). None if it already exists."""
        ...

    def read_snapshot(self, snapshot_id: SnapshotId) -> RawSnapshotReader | None: ...

    def latest_snapshot_id(self) -> SnapshotId | None: ...

    def earliest_snapshot_id(self) -> SnapshotId | None: ...

    def on_snapshot_frozen(self, snapshot_id: SnapshotId) -> None:
        """Called after a writer of this log was frozen (bookkeeping for file logs)."""
        ...

    def delete_before_snapshot(self, snapshot_id: SnapshotId) -> bool:
        """Advance the log start offset to the snapshot's end offset, dropping older batches and snapshots.
        Returns whether anything changed."""
        ...

    # ---- durability --------------------------------------------------------------------------------------
    def flush(self, force_active_segment: bool = False) -> None:
        """Make every appended record durable. Data appended but not flushed is lost on a crash."""
        ...

    def flushed_end_offset(self) -> int:
        """End offset of the durable prefix of the log."""
        ...


def end_offset_for_epoch_in(
    epoch_starts: Sequence[tuple[int, int]], epoch: int, end_offset: int, earliest_snapshot: SnapshotId | None
) -> OffsetAndEpoch:
    """`ReplicatedLog.end_offset_for_epoch` over an epoch cache of (epoch, start offset) pairs in ascending order:
    the largest epoch <= `epoch` and where the next epoch starts (or the LEO). Shared by every log implementation."""
    lower_epoch = earliest_snapshot.epoch if earliest_snapshot is not None else 0
    for cached_epoch, start in epoch_starts:
        if cached_epoch > epoch:
            return OffsetAndEpoch(start, lower_epoch)
        lower_epoch = cached_epoch
    return OffsetAndEpoch(end_offset, lower_epoch)


def validate_offset_and_epoch_in(log: ReplicatedLog, offset: int, epoch: int) -> ValidOffsetAndEpoch:
    """`ReplicatedLog.validate_offset_and_epoch` in terms of the log's other queries (reference §1.9): SNAPSHOT when
    the position is behind the log start or older than the oldest snapshot, DIVERGING when our history for that
    epoch ends earlier or the epoch is unknown, else VALID. Shared by every log implementation."""
    earliest = log.earliest_snapshot_id()
    start = log.start_offset()
    if earliest is not None and (
        offset < start or (offset == start and epoch != earliest.epoch) or epoch < earliest.epoch
    ):
        latest = log.latest_snapshot_id()
        assert latest is not None
        return ValidOffsetAndEpoch.snapshot(latest)
    end = log.end_offset_for_epoch(epoch)
    if end.epoch != epoch or end.offset < offset:
        return ValidOffsetAndEpoch.diverging(end)
    return ValidOffsetAndEpoch.valid(OffsetAndEpoch(offset, epoch))


def truncation_offset(log: ReplicatedLog, diverging: OffsetAndEpoch) -> int:
    """Where a follower truncates when the leader answers a Fetch with DivergingEpoch(end_offset, epoch).

    If we know the leader's diverging epoch, we keep our records of that epoch up to the leader's end offset for it;
    otherwise we keep everything up to the end of our largest epoch below it (our history diverges after that).
    """
    if diverging.epoch == 0:
        return min(diverging.offset, log.end_offset())
    # Either way the local end of that epoch bounds what is shared; the leader's offset bounds it too (records
    # past it belong to epochs the leader does not have).
    local = log.end_offset_for_epoch(diverging.epoch)
    return min(local.offset, diverging.offset, log.end_offset())


class EpochIndexedLog:
    """The `ReplicatedLog` methods every implementation derives the same way from its epoch entries and high
    watermark. Subclasses keep `_epochs` ((epoch, start offset), ascending) and `_high_watermark`, and provide
    `end_offset()` and `earliest_snapshot_id()`."""

    _epochs: list[tuple[int, int]]
    _high_watermark: int

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        return end_offset_for_epoch_in(self._epochs, epoch, self.end_offset(),  # type: ignore[attr-defined]
                                       self.earliest_snapshot_id())  # type: ignore[attr-defined]

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> ValidOffsetAndEpoch:
        return validate_offset_and_epoch_in(self, offset, epoch)  # type: ignore[arg-type]

    def high_watermark(self) -> int:
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> None:
        self._high_watermark = min(offset, self.end_offset())  # type: ignore[attr-defined]
