"""Moving the log start: deletion behind snapshots, reset to a downloaded snapshot, and retention cleaning.

Retention follows Kafka's `KafkaMetadataLog.cleanSnapshots`: segments have no retention of their own; the
oldest snapshot is deleted (and the log start advanced to the next-oldest snapshot, dropping the segments wholly
before it) while the log plus snapshots exceed `metadata.max.retention.bytes`, or while the oldest snapshot's
last contained record is older than `metadata.max.retention.ms`. The latest snapshot is always kept.

The log start offset is persisted in `<metadata.log.dir>/log-start-offset-checkpoint` (Kafka's format), written
durably *before* any file behind it is deleted, so a crash in between leaves extra files, never a gap.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from pykraft.raft.log import SnapshotId
from pykraft.records import RecordsError, iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record

from .files import LOG_START_CHECKPOINT, sync_dir
from .log_start import truncate_epochs_from_start
from .offset_checkpoints import update_offsets
from .segment import Segment

if TYPE_CHECKING:
    from .file_log import FileLog

_log = logging.getLogger("pykraft.storage.log")


def write_log_start(log: FileLog, offset: int) -> None:
    """Persist the log start of this partition, keeping the other partitions' entries of the directory."""
    update_offsets(os.path.join(os.path.dirname(log.directory), LOG_START_CHECKPOINT), {log.key: offset})


def advance_log_start(log: FileLog, snapshot_id: SnapshotId) -> None:
    """`delete_before_snapshot`: start = snapshot end; drop whole segments and snapshots behind it."""
    write_log_start(log, snapshot_id.offset)
    log._start_offset = snapshot_id.offset
    log.layout_version += 1
    while len(log._segments) > 1 and log._segments[0].next_offset <= snapshot_id.offset:
        segment = log._segments.pop(0)
        segment.delete()
        log._bases.pop(0)
        _log.debug("[LocalLog dir=%s] Deleted segment %d-%d (%d bytes): below snapshot %d", log.directory,
                   segment.base_offset, segment.next_offset - 1, segment.size, snapshot_id.offset)
    for older in [s for s in log._snapshots.ids if s < snapshot_id]:
        log._snapshots.delete(older)
    # Keep the epoch covering the new start so end_offset_for_epoch stays right for later epochs.
    log._epochs = [(e, max(s, snapshot_id.offset)) for e, s in log._epochs if e >= snapshot_id.epoch]
    log._dirty_epochs = True
    log._dirty_dir = True


def reset_to_snapshot(log: FileLog, snapshot_id: SnapshotId) -> None:
    """`truncate_to_latest_snapshot`: the whole log goes; it restarts empty at the snapshot's end offset."""
    reset_to_offset(log, snapshot_id.offset)
    for older in [s for s in log._snapshots.ids if s < snapshot_id]:
        log._snapshots.delete(older)


def reset_to_offset(log: FileLog, offset: int) -> None:
    """Kafka's `truncateFullyAndStartAt`: every segment goes; the log restarts empty at `offset` (a snapshot's
    end, or a partition leader's log start that a follower fell below)."""
    write_log_start(log, offset)
    log.layout_version += 1
    for segment in log._segments:
        segment.delete()
    log.producer_snapshots.delete_all()
    log.txn_index.retain_segments([])
    segment = Segment(log.directory, offset, log.config.index_interval_bytes)
    segment.index.open_files()
    log._segments = [segment]
    log._bases = [offset]
    log._epochs = []
    log._last_batch_epoch = 0
    log._start_offset = log._high_watermark = log._flushed = offset
    log._dirty_epochs = True
    for ticket in list(log._tickets):
        ticket.clamp(offset)
    # The reset is rare and the new start is reported at once: make it durable now.
    sync_dir(log.directory)


def snapshot_timestamp(log: FileLog, snapshot_id: SnapshotId) -> int | None:
    """`LastContainedLogTimestamp` from the snapshot's header record, or None if it has none."""
    reader = log.read_snapshot(snapshot_id)
    if reader is None:
        return None
    try:
        for batch in iter_batches(reader.read(0, 1 << 20), allow_truncated_tail=True):
            if batch.is_control:
                for record in batch.records():
                    control = decode_control_record(record)
                    if control.type is ControlRecordType.SNAPSHOT_HEADER:
                        return int(control.message.last_contained_log_timestamp)
            return None
    except RecordsError:
        return None
    return None


def maybe_clean(log: FileLog, now_ms: int) -> bool:
    """Apply retention once (Kafka calls this every 60 s from the raft poll). Returns whether anything went."""
    config = log.config
    changed = False
    while True:
        snapshots = log.snapshot_ids()
        if len(snapshots) < 2:
            return changed
        oldest, successor = snapshots[0], snapshots[1]
        total = log.size_in_bytes() + sum(log._snapshots.size(s) for s in snapshots)
        over_size = config.retention_bytes >= 0 and total > config.retention_bytes
        timestamp = snapshot_timestamp(log, oldest)
        over_age = config.retention_ms >= 0 and timestamp is not None and now_ms - timestamp > config.retention_ms
        if not (over_size or over_age):
            return changed
        if successor.offset > log.end_offset() or successor.offset > log.high_watermark():
            return changed
        if not log.delete_before_snapshot(successor):
            log._snapshots.delete(oldest)  # start already past it: only the file is left to drop
            log._dirty_dir = True
        changed = True


def _drop_oldest_segment(log: FileLog) -> None:
    """Delete the oldest segment of a partition log; the log start moves to the next segment's base, or stays
    where DeleteRecords put it when that is further (persisted first, so a crash leaves an extra file, never a
    gap)."""
    new_start = max(log._segments[1].base_offset, log._start_offset)
    write_log_start(log, new_start)
    log.layout_version += 1
    segment = log._segments.pop(0)
    segment.delete()
    _log.debug("[LocalLog dir=%s] Deleted segment %d-%d (%d bytes) by retention; log start offset %d", log.directory,
               segment.base_offset, new_start - 1, segment.size, new_start)
    log._bases.pop(0)
    log._start_offset = new_start
    log.producer_snapshots.delete_below(log._segments[0].base_offset)  # a segment's producer snapshot goes with it
    log.txn_index.retain_segments(log._bases)  # and its aborted-transaction index
    log._epochs = truncate_epochs_from_start(log._epochs, new_start)  # Kafka's truncateFromStart
    log._dirty_epochs = True
    log._dirty_dir = True


def delete_expired_segments(log: FileLog, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
    """Partition-log retention (Kafka's `deleteOldSegments`): drop whole sealed segments, oldest first, while the
    oldest one lies wholly below the log start (moved there by DeleteRecords: Kafka's
    `deleteLogStartOffsetBreachedSegments`), or its newest record is older than `retention.ms`, or the log without
    it still holds `retention.bytes` (-1: no limit). Only segments wholly below the high watermark go, and never
    the active one. Returns how many segments were deleted."""
    deleted = 0
    while len(log._segments) > 1:
        oldest = log._segments[0]
        if oldest.next_offset > log.high_watermark():
            break
        below_start = log._segments[1].base_offset <= log._start_offset
        # An empty sealed segment (every batch removed by the log cleaner) is past any retention, as in Kafka
        # (its largest timestamp is -1).
        too_old = retention_ms >= 0 and (oldest.size == 0 or 0 <= oldest.index.max_timestamp < now_ms - retention_ms)
        too_big = retention_bytes >= 0 and log.size_in_bytes() - oldest.size >= retention_bytes
        if not (below_start or too_old or too_big):
            break
        _drop_oldest_segment(log)
        deleted += 1
    return deleted
