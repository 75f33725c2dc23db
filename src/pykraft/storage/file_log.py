"""`FileLog`: the `ReplicatedLog` of the raft core on disk, in Kafka's `<topic>-<partition>` layout.

One class for `__cluster_metadata-0` and for a broker's partition logs (`key` names which); partition logs have
no `.checkpoint` snapshots, so the snapshot methods simply find none there. Partition logs have Kafka's producer
snapshots instead (`producer_snapshots`, producer_snapshots.py): the log calls `on_roll` before a segment rolls (the
broker writes one there), drops them with retention and truncation, and syncs them with its flushes.

It behaves like `pykraft.raft.memory_log.MemoryLog` at the protocol level (the contract tests run both). Opening,
recovery and retention live in `log_open.py` and `retention.py`; this module holds the running log.

Durability: appends, truncations and segment rolls reach the page cache only; `flush()` (or the ticket API in
`flush.py`) makes them durable, and `flushed_end_offset()` says how far. Snapshots are durable when frozen.
"""

from __future__ import annotations

import bisect
import logging
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.raft.log import (
    EpochIndexedLog,
    InvalidAppendError,
    InvalidSnapshotIdError,
    LogAppendInfo,
    LogFetchInfo,
    SnapshotId,
    ValidationKind,
)
from pykraft.protocol.framing import FileRegion
from pykraft.records.crc import crc32c

from .epoch_cache import write_epoch_checkpoint
from .files import EPOCH_CHECKPOINT, TOPIC_NAME
from .flush import FlushTicket
from .locking import DirectoryLock
from .log_start import increment_log_start, truncate_epochs_from_start
from .producer_snapshots import ProducerSnapshotFiles
from .segment import HEADER, LOG_OVERHEAD, BatchInfo, Segment
from .snapshots import FileSnapshotReader, FileSnapshotWriter, SnapshotFiles
from .txn_index import TxnIndexFiles

_log = logging.getLogger("pykraft.storage.log")

_MIN_LENGTH = 49
_MAX_RELATIVE_OFFSET = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Kafka's metadata log settings (reference §4.2)."""

    segment_bytes: int = 1 << 30  # metadata.log.segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000  # metadata.log.segment.ms
    index_interval_bytes: int = 4096  # log.index.interval.bytes
    retention_bytes: int = 100 * 1024 * 1024  # metadata.max.retention.bytes (-1: no limit)
    retention_ms: int = 7 * 24 * 3600 * 1000  # metadata.max.retention.ms (-1: no limit)
    verify_follower_crc: bool = True  # check CRCs of fetched batches before they reach the disk
    # A partition log may have offset gaps: the log cleaner removes records but never renumbers the rest, so a
    # follower fetching a cleaned range appends batches whose base offset is above its log end, and recovery finds
    # batches (and segments) that do not continue the previous one (Kafka only requires increasing offsets). The
    # metadata log keeps the stricter contiguity check.
    allow_offset_gaps: bool = False


def parse_batches(records: bytes | bytearray | memoryview, verify_crc: bool) -> tuple[memoryview, list[BatchInfo]]:
    """Split an append buffer by batch headers. Raises `InvalidAppendError` for anything malformed."""
    view = memoryview(records)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    batches: list[BatchInfo] = []
    pos = 0
    total = len(view)
    while pos < total:
        if total - pos < HEADER.size:
            raise InvalidAppendError(f"truncated batch header at byte {pos}")
        base, length, epoch, magic, crc, _attrs, delta, _base_ts, max_ts = HEADER.unpack_from(view, pos)
        end = pos + LOG_OVERHEAD + length
        if magic != 2 or length < _MIN_LENGTH or delta < 0 or end > total:
            raise InvalidAppendError(f"malformed batch at byte {pos}")
        if verify_crc and crc32c(view[pos + 21 : end]) != crc:
            raise InvalidAppendError(f"CRC mismatch in batch at byte {pos} (base offset {base})")
        batches.append(BatchInfo(pos, length + LOG_OVERHEAD, base, base + delta, epoch, max_ts))
        pos = end
    if not batches:
        raise InvalidAppendError("empty append")
    return view, batches


class FileLog(EpochIndexedLog):
    """A `ReplicatedLog` backed by segment files. Single threaded; see `flush.py` for the flush contract."""

    def __init__(self, directory: str, config: LogConfig, lock: DirectoryLock | None,
                 key: tuple[str, int] = (TOPIC_NAME, 0)) -> None:
        # Use `open_file_log` (log_open.py): it recovers the files and fills these fields.
        self.directory = directory
        self.key = key  # (topic, partition): the entry this log owns in the directory's checkpoint files
        self.config = config
        self._lock = lock
        self._segments: list[Segment] = []
        self._bases: list[int] = []
        self._epochs: list[tuple[int, int]] = []
        self._start_offset = 0
        self._high_watermark = 0
        self._flushed = 0
        self._last_batch_epoch = 0
        # The default of `keep` in append_as_leader and append_as_follower: a node sets it on its metadata log,
        # whose only appends are the raft core's (`bytes` it built, or read from a Fetch answer, never changed):
        # a leader's followers then fetch, and a follower's replay reads, what was just appended from memory.
        self.keep_appends = False
        self._snapshots = SnapshotFiles(directory)
        self.producer_snapshots = ProducerSnapshotFiles(directory)
        self.txn_index = TxnIndexFiles(directory)  # aborted transactions (.txnindex), partition logs only
        self.on_roll: Callable[[int], None] | None = None  # called with the new segment's base before a roll
        self._dirty_dir = False
        self._dirty_epochs = False
        self._tickets: weakref.WeakSet[FlushTicket] = weakref.WeakSet()
        self._closed = False
        # Bumped by every change to the segments other than an append or a roll (truncation, retention, a reset,
        # a cleaner swap): a cleaner pass planned on an older layout swaps nothing in (cleaner_manager.py).
        self.layout_version = 0

    # ---- appends -----------------------------------------------------------------------------------------
    def append_as_leader(self, records: bytes | bytearray | memoryview, epoch: int, *,
                         keep: bool | None = None) -> LogAppendInfo:
        """`keep`: the caller hands `records` over (never changes them again), so the next reads of them are
        served from memory (segment.py, tail_cache.py): the followers' fetches of what a leader just appended.
        None: `keep_appends`."""
        if keep is None:
            keep = self.keep_appends
        view, batches = parse_batches(records, verify_crc=False)  # built by this node's accumulator
        for batch in batches:
            if batch.epoch != epoch:
                raise InvalidAppendError(f"leader batch epoch {batch.epoch} != leader epoch {epoch}")
        return self._append(view, batches, keep)

    def append_as_follower(self, records: bytes | memoryview, epoch: int, *, keep: bool | None = None) -> LogAppendInfo:
        """`keep`: as in `append_as_leader` (None: `keep_appends`)."""
        view, batches = parse_batches(records, verify_crc=self.config.verify_follower_crc)
        return self._append(view, batches, self.keep_appends if keep is None else keep)

    def _append(self, view: memoryview, batches: list[BatchInfo], keep: bool = False) -> LogAppendInfo:
        expected = self.end_offset()
        last_epoch = self.last_fetched_epoch()
        gaps = self.config.allow_offset_gaps
        for batch in batches:  # validate everything before writing anything
            if batch.base_offset != expected and not (gaps and batch.base_offset > expected):
                raise InvalidAppendError(f"batch base offset {batch.base_offset} != expected {expected}")
            if batch.epoch < last_epoch:
                raise InvalidAppendError(f"batch epoch {batch.epoch} < last epoch {last_epoch}")
            expected, last_epoch = batch.last_offset + 1, batch.epoch
        self._maybe_roll(len(view), batches)
        self._segments[-1].append(view, batches, keep)
        for batch in batches:
            self._note_epoch(batch.epoch, batch.base_offset)
        self._last_batch_epoch = batches[-1].epoch
        return LogAppendInfo(batches[0].base_offset, batches[-1].last_offset)

    def _maybe_roll(self, size: int, batches: list[BatchInfo]) -> None:
        active = self._segments[-1]
        if active.size == 0:
            return
        too_big = active.size + size > self.config.segment_bytes
        too_old = active.first_timestamp >= 0 and (
            max(b.max_timestamp for b in batches) - active.first_timestamp > self.config.segment_ms
        )
        overflow = batches[-1].last_offset - active.base_offset > _MAX_RELATIVE_OFFSET
        if too_big or too_old or overflow:
            # Kafka rolls at the first offset being appended: after an offset gap (a cleaned range fetched by a
            # follower) that is above the log end.
            self.roll(batches[0].base_offset)

    def roll(self, base_offset: int | None = None) -> None:
        """Start a new active segment at the end offset, or at `base_offset` (>= it: the first offset about to be
        appended). The old one is made durable first."""
        base = self.end_offset() if base_offset is None else max(base_offset, self.end_offset())
        if self.on_roll is not None:
            self.on_roll(self.end_offset())
        _log.debug("[LocalLog dir=%s] Rolled new log segment at offset %d (the old one: %d bytes)", self.directory,
                   self.end_offset(), self._segments[-1].size)
        self._segments[-1].seal()
        segment = Segment(self.directory, base, self.config.index_interval_bytes)
        segment.index.open_files()
        self._segments.append(segment)
        self._bases.append(segment.base_offset)
        self._dirty_dir = True

    def _note_epoch(self, epoch: int, start: int) -> None:
        if not self._epochs or epoch > self._epochs[-1][0]:
            self._epochs.append((epoch, start))
            self._dirty_epochs = True

    def initialize_leader_epoch(self, epoch: int) -> None:
        assert not self._epochs or epoch >= self._epochs[-1][0], "leader epoch going backwards"
        self._note_epoch(epoch, self.end_offset())

    # ---- reads -------------------------------------------------------------------------------------------
    def read(self, start_offset: int, max_bytes: int) -> LogFetchInfo:
        end = self.end_offset()
        assert self._start_offset <= start_offset <= end, "read outside the log"
        if start_offset == end:
            return LogFetchInfo(b"", start_offset)
        i = bisect.bisect_right(self._bases, start_offset) - 1
        found = self._segments[i].read(start_offset, max_bytes)
        while found is None:  # an offset gap left by the log cleaner: the next batch is in a later segment
            i += 1
            if i == len(self._segments):
                return LogFetchInfo(b"", start_offset)
            found = self._segments[i].read(self._segments[i].base_offset, max_bytes)
        view, first_base, at_end = found
        pieces = [view]
        total = len(view)
        # Go on into the next segments while the previous one was read to its end and whole batches still fit;
        # only then is a copy (the join) needed.
        while at_end and total < max_bytes and i + 1 < len(self._segments) and self._segments[i + 1].size:
            i += 1
            more_found = self._segments[i].read(self._segments[i].base_offset, max_bytes - total)
            if more_found is None:
                break
            more, _, at_end = more_found
            if len(more) > max_bytes - total:
                break
            pieces.append(more)
            total += len(more)
        # Read-only: a reader must not be able to write into the segment's buffer (and kio refuses writable ones).
        records = memoryview(pieces[0]).toreadonly() if len(pieces) == 1 else b"".join(pieces)
        return LogFetchInfo(records, first_base)

    def read_region(self, start_offset: int, max_bytes: int, upper: int) -> bytes | memoryview | FileRegion:
        """A consumer's read: whole batches from the one holding `start_offset` that end below `upper` (its high
        watermark or last stable offset), up to `max_bytes` (at least one batch). Batches still in the active
        segment's tail cache come from memory as `read` gives them (the caller trims them at `upper`: they may
        reach past it); any others as a region
        of one segment file for the server to send from its pages (zero-copy, as Kafka's FileRecords): one segment per
        read, the consumer's next fetch goes on from there. A region carries no bytes for the caller to look at."""
        end = self.end_offset()
        assert self._start_offset <= start_offset <= end, "read outside the log"
        if start_offset >= min(end, upper):
            return b""
        i = bisect.bisect_right(self._bases, start_offset) - 1
        while i < len(self._segments):
            segment = self._segments[i]
            if segment.tail.read(start_offset, 1) is not None:
                return self.read(start_offset, max_bytes).records
            region = segment.read_region(max(start_offset, segment.base_offset), max(max_bytes, 1), upper)
            if region is not None:
                return region if region.size else b""
            i += 1  # an offset gap left by the log cleaner: the next batch is in a later segment
        return b""

    def release_cached_below(self, offset: int) -> None:
        """The batches below `offset` kept in memory by `append_as_leader(keep=True)` will not be read again soon
        (every follower fetched past them): free them."""
        self._segments[-1].tail.release_below(offset)

    def start_offset(self) -> int:
        return self._start_offset

    def end_offset(self) -> int:
        return self._segments[-1].next_offset

    def last_fetched_epoch(self) -> int:
        if self.end_offset() > self._start_offset:
            return self._last_batch_epoch
        latest = self.latest_snapshot_id()
        return latest.epoch if latest is not None else 0

    # ---- truncation --------------------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        assert offset >= self._start_offset, "truncation below the log start"
        if offset >= self.end_offset():
            return
        i = bisect.bisect_right(self._bases, offset) - 1
        position, batch = self._segments[i].locate(offset)
        # A batch straddling the offset goes entirely. With offset gaps (a cleaned log) the first batch at or past
        # the offset may start above it, or the segment may end before it: the log then ends at the offset or
        # where that segment's batches end.
        new_end = self._segments[i].next_offset if batch is None else min(batch.base_offset, offset)
        self.layout_version += 1
        for segment in self._segments[i + 1 :]:
            segment.delete()
            self._dirty_dir = True
        del self._segments[i + 1 :]
        del self._bases[i + 1 :]
        self._segments[i].truncate_to(position, new_end)
        self._after_truncation(new_end)

    def adopt_epochs(self, epochs: list[tuple[int, int]]) -> None:
        """A moved replica's copy takes the epoch cache of the log it copied (the same batches, plus the epochs a
        leader started without appending), cut at its own start."""
        self._epochs = truncate_epochs_from_start([(e, s) for e, s in epochs if s <= self.end_offset()],
                                                  self._start_offset)
        self._dirty_epochs = True

    def forget_epochs_from_end(self) -> None:
        """Kafka's `UnifiedLog.truncateTo` at or past the log end: nothing is cut, but epochs starting at the log end
        go (one this replica started as leader without appending anything), or a partition follower would keep
        sending that epoch as its last fetched one and get the same DivergingEpoch forever."""
        end = self.end_offset()
        kept = [(e, s) for e, s in self._epochs if s < end]
        if kept != self._epochs:
            self._epochs = kept
            self._dirty_epochs = True

    def _after_truncation(self, end: int) -> None:
        self.producer_snapshots.delete_above(end)
        self.txn_index.truncate_to(end)
        self.txn_index.retain_segments(self._bases)
        kept = [(e, s) for e, s in self._epochs if s < end]
        if kept != self._epochs:
            self._epochs = kept
            self._dirty_epochs = True
        # The epoch of the last remaining batch is that of the last epoch starting before the end.
        self._last_batch_epoch = self._epochs[-1][0] if self._epochs else 0
        self._flushed = min(self._flushed, end)
        self._high_watermark = min(self._high_watermark, end)
        for ticket in list(self._tickets):
            ticket.clamp(end)

    def increment_log_start(self, offset: int) -> bool:
        """DeleteRecords, or a follower adopting its leader's log start: log_start.py. Returns whether it moved;
        `LogStartBeyondHighWatermarkError` above the high watermark."""
        return increment_log_start(self, offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Kafka's `truncateFullyAndStartAt`: empty the log and restart it at `offset` (a partition follower
        whose log ends below its leader's log start)."""
        from .retention import reset_to_offset

        reset_to_offset(self, offset)

    def truncate_to_latest_snapshot(self) -> bool:
        latest = self.latest_snapshot_id()
        if latest is None:
            return False
        last_epoch = self.last_fetched_epoch()
        if latest.epoch > last_epoch or (latest.epoch == last_epoch and latest.offset > self.end_offset()):
            from .retention import reset_to_snapshot

            reset_to_snapshot(self, latest)
            return True
        return False

    # ---- snapshots ---------------------------------------------------------------------------------------
    def create_new_snapshot(self, snapshot_id: SnapshotId) -> FileSnapshotWriter | None:
        if snapshot_id.offset > self._high_watermark:
            raise InvalidSnapshotIdError(f"{snapshot_id} is beyond the high watermark {self._high_watermark}")
        if self.validate_offset_and_epoch(snapshot_id.offset, snapshot_id.epoch).kind is not ValidationKind.VALID:
            raise InvalidSnapshotIdError(f"{snapshot_id} is not in the log history")
        if self._start_offset < snapshot_id.offset:
            # The batch holding the last contained offset must end exactly there and carry the snapshot's epoch.
            last = snapshot_id.offset - 1
            i = bisect.bisect_right(self._bases, last) - 1
            _, batch = self._segments[i].locate(last)
            assert batch is not None
            if batch.last_offset != last:
                raise InvalidSnapshotIdError(f"{snapshot_id} is not on a batch boundary")
            if batch.epoch != snapshot_id.epoch:
                raise InvalidSnapshotIdError(f"{snapshot_id} does not name the epoch of its last record")
        return self.create_new_snapshot_unchecked(snapshot_id)

    def create_new_snapshot_unchecked(self, snapshot_id: SnapshotId) -> FileSnapshotWriter | None:
        if snapshot_id in self._snapshots.ids:
            return None
        return FileSnapshotWriter(self.directory, snapshot_id, self._snapshots.ids.add)

    def read_snapshot(self, snapshot_id: SnapshotId) -> FileSnapshotReader | None:
        return self._snapshots.reader(snapshot_id)

    def latest_snapshot_id(self) -> SnapshotId | None:
        return max(self._snapshots.ids) if self._snapshots.ids else None

    def earliest_snapshot_id(self) -> SnapshotId | None:
        return min(self._snapshots.ids) if self._snapshots.ids else None

    def snapshot_ids(self) -> list[SnapshotId]:
        return sorted(self._snapshots.ids)

    def on_snapshot_frozen(self, snapshot_id: SnapshotId) -> None:
        pass  # the writer registers the file when it renames it

    def delete_before_snapshot(self, snapshot_id: SnapshotId) -> bool:
        if snapshot_id not in self._snapshots.ids or snapshot_id.offset <= self._start_offset:
            return False
        if snapshot_id.offset > self.end_offset():
            return False  # use truncate_to_latest_snapshot for a snapshot ahead of the log
        from .retention import advance_log_start

        advance_log_start(self, snapshot_id)
        return True

    # ---- durability --------------------------------------------------------------------------------------
    def prepare_flush(self, force_active_segment: bool = False) -> FlushTicket:
        """Capture what a flush must sync (event-loop thread). See `flush.py`."""
        if self._dirty_epochs:
            # Written (and renamed durably) before the data it describes is synced, so that on disk the
            # checkpoint never lags behind durable batches.
            write_epoch_checkpoint(os.path.join(self.directory, EPOCH_CHECKPOINT), self._epochs)
            self._dirty_epochs = False
        fds = []
        for segment in self._segments:
            if segment.dirty or (force_active_segment and segment is self._segments[-1]):
                fds.append(os.dup(segment.fd))
                segment.dirty = False
        snapshot_fds, snapshot_names = self.producer_snapshots.take_unsynced()
        index_fds, index_names = self.txn_index.take_unsynced()
        fds += snapshot_fds + index_fds
        names_changed = snapshot_names or index_names
        dirs = [self.directory] if (self._dirty_dir or force_active_segment or names_changed) else []
        self._dirty_dir = False
        ticket = FlushTicket(self.end_offset(), fds, dirs)
        self._tickets.add(ticket)
        return ticket

    def complete_flush(self, ticket: FlushTicket) -> None:
        """Record a synced ticket (event-loop thread)."""
        assert ticket.synced, "complete_flush of a ticket that was not synced"
        self._tickets.discard(ticket)
        self._flushed = max(self._flushed, min(ticket.end_offset, self.end_offset()))

    def flush(self, force_active_segment: bool = False) -> None:
        ticket = self.prepare_flush(force_active_segment)
        ticket.sync()
        self.complete_flush(ticket)

    def flushed_end_offset(self) -> int:
        return self._flushed

    def close(self) -> None:
        """Flush, sync the indexes, release files and the directory lock."""
        if self._closed:
            return
        self.flush(force_active_segment=True)
        for segment in self._segments:
            segment.index.sync()
            segment.close()
        self._closed = True
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> FileLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- inspection --------------------------------------------------------------------------------------
    def segment_base_offsets(self) -> list[int]:
        return list(self._bases)

    def active_segment_base(self) -> int:
        """The segment the next append goes to (a marker's `.txnindex` entry is filed under it)."""
        return self._bases[-1]

    def epoch_entries(self) -> list[tuple[int, int]]:
        return list(self._epochs)

    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    def segment_count(self) -> int:
        return len(self._segments)
