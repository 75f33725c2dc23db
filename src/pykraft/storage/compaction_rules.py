"""The log cleaner's decisions, as pure functions (no files, no clock: the time is passed in). Kafka's rules, from
`LogCleanerManager` (what to clean, which log first), `Cleaner` (which records and batches stay) and
`MemoryRecords.filterTo` (how a batch is written back).

Which range of a log is cleaned (`cleanable_offsets`): from the first dirty offset (the cleaner checkpoint, reset to
the log start when it is below the start or past the end) up to the first uncleanable offset, the lowest of
- the last stable offset (without transactions: the high watermark; replicas clean only what is committed),
- the active segment's base (the active segment is never cleaned),
- with `min.compaction.lag.ms`, the base of the first dirty segment holding a record newer than the lag.
The bytes between them over the whole log are the dirty ratio; a log is cleaned when that ratio exceeds
`min.cleanable.dirty.ratio`, or at once when a dirty segment's first batch is older than `max.compaction.lag.ms`
(`max_compaction_delay`). The dirtiest eligible log goes first (`choose_filthiest`).

Which records stay (`retain_record`): a record past the offset map's reach stays; a keyless record goes; a keyed one
stays when it is the latest of its key and, for a tombstone, while its batch has no delete horizon yet or the
horizon (set to now + `delete.retention.ms` by the pass that first cleans it) is still ahead.

Which batches stay (`batch_retention`): a batch is dropped when none of its records stay, except
- the last batch of an active idempotent producer (its last sequence and epoch: without it a retry after cleaning
  would look out of order) and the last batch of the cleaning round, which stay even when emptied (RETAIN_EMPTY);
- transaction markers and aborted transactions: `TransactionSeam` (below) is where Kafka's rule goes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from pykraft.records.rebuild import KeyedRecord

INT_MAX = (1 << 31) - 1
LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class SegmentFacts:
    """What the decisions need of one segment."""

    base_offset: int
    size: int
    largest_timestamp: int = -1  # Kafka's LogSegment.largestTimestamp (-1: no batch)
    first_batch_timestamp: int = -1  # the first batch's max timestamp (Kafka's rollingBasedTimestamp)
    offset_index_bytes: int = 0
    time_index_bytes: int = 0


@dataclass(frozen=True, slots=True)
class OffsetsToClean:
    first_dirty: int
    first_uncleanable: int
    force_update_checkpoint: bool = False  # the checkpoint was out of the log's range: rewrite it


@dataclass(frozen=True, slots=True)
class LogToClean:
    """One compacted log as a candidate of a pass (Kafka's LogToClean)."""

    key: object
    first_dirty: int
    first_uncleanable: int  # the base of the first segment not cleaned
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    min_cleanable_ratio: float

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def segments_between(segments: Sequence[SegmentFacts], start: int, end: int) -> list[SegmentFacts]:
    """Kafka's `logSegments(from, to)`: the segment holding `start` (its floor) and every later one with a base below
    `end`. `segments` is sorted by base offset."""
    if start >= end:
        return []
    floor = max((s.base_offset for s in segments if s.base_offset <= start), default=None)
    low = start if floor is None else floor
    return [s for s in segments if low <= s.base_offset < end]


def cleanable_offsets(segments: Sequence[SegmentFacts], *, log_start: int, log_end: int, checkpoint: int | None,
                      stable_offset: int, min_compaction_lag_ms: int, now_ms: int) -> OffsetsToClean:
    """Kafka's `LogCleanerManager.cleanableOffsets` (see the module docstring). `segments`: every segment of the
    log, the active one last."""
    dirty = log_start if checkpoint is None else checkpoint
    force = False
    if dirty < log_start or dirty > log_end:
        dirty, force = log_start, True
    active = segments[-1]
    limits = [stable_offset, active.base_offset]
    if min_compaction_lag_ms > 0:
        horizon = now_ms - min_compaction_lag_ms
        late = next((s for s in non_active_from(segments, dirty) if s.largest_timestamp > horizon), None)
        if late is not None:
            limits.append(late.base_offset)
    return OffsetsToClean(dirty, max(dirty, min(limits)), force)


def non_active_from(segments: Sequence[SegmentFacts], start: int) -> list[SegmentFacts]:
    """Kafka's `nonActiveLogSegmentsFrom`: the segments from the one holding `start`, the active one excluded."""
    active = segments[-1]
    return [] if start > active.base_offset else segments_between(segments, start, active.base_offset)


def cleanable_bytes(segments: Sequence[SegmentFacts], first_dirty: int, uncleanable: int) -> tuple[int, int]:
    """Kafka's `calculateCleanableBytes`: (the base of the segment holding `uncleanable`, or the active one's;
    the bytes of the segments from the first dirty one up to it)."""
    later = non_active_from(segments, uncleanable)
    first_uncleanable = (later[0] if later else segments[-1]).base_offset
    chosen = segments_between(segments, min(first_dirty, first_uncleanable), first_uncleanable)
    return first_uncleanable, sum(s.size for s in chosen)


def max_compaction_delay(segments: Sequence[SegmentFacts], first_dirty: int, max_compaction_lag_ms: int,
                         now_ms: int) -> int:
    """Kafka's `maxCompactionDelay`: how long ago the oldest dirty segment should have been cleaned (0: not due)."""
    stamps = [s.first_batch_timestamp for s in non_active_from(segments, first_dirty) if s.first_batch_timestamp > 0]
    earliest = min(stamps, default=LONG_MAX)
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


def log_to_clean(key: object, segments: Sequence[SegmentFacts], offsets: OffsetsToClean, *, delay_ms: int,
                 min_cleanable_ratio: float) -> LogToClean:
    clean = sum(s.size for s in segments if s.base_offset < offsets.first_dirty)  # Kafka's logSegments(-1, dirty)
    first_uncleanable, cleanable = cleanable_bytes(segments, offsets.first_dirty, offsets.first_uncleanable)
    return LogToClean(key, offsets.first_dirty, first_uncleanable, clean, cleanable, delay_ms > 0,
                      min_cleanable_ratio)


def choose_filthiest(candidates: Iterable[LogToClean]) -> tuple[LogToClean | None, float]:
    """(the log to clean now, or None; the highest dirty ratio among the non-empty logs: Kafka's max-dirty-percent
    gauge). Eligible: dirtier than its `min.cleanable.dirty.ratio`, or due by `max.compaction.lag.ms` with
    cleanable bytes. Ties go to the first candidate."""
    logs = [c for c in candidates if c.total_bytes > 0]
    dirtiest = max((c.cleanable_ratio for c in logs), default=0.0)
    eligible = [c for c in logs if (c.need_compaction_now and c.cleanable_bytes > 0)
                or c.cleanable_ratio > c.min_cleanable_ratio]
    best = None
    for c in eligible:
        if best is None or c.cleanable_ratio > best.cleanable_ratio:
            best = c
    return best, dirtiest


def group_segments_by_size(segments: Sequence[SegmentFacts], max_size: int, max_index_size: int,
                           first_uncleanable: int) -> list[list[SegmentFacts]]:
    """Kafka's `groupSegmentsBySize`: consecutive segments merged into one cleaned segment while the group's log
    bytes stay within `segment.bytes`, each index within `segment.index.bytes`, and its offsets within a 32-bit
    delta of the group's base (estimated from the next segment's base, or `first_uncleanable` for the last one)."""
    groups: list[list[SegmentFacts]] = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        log_size, index_size, time_size = group[0].size, group[0].offset_index_bytes, group[0].time_index_bytes
        while rest:
            nxt = rest[0]
            last_offset = (rest[1].base_offset if len(rest) > 1 else first_uncleanable) - 1
            fits = (log_size + nxt.size <= max_size and index_size + nxt.offset_index_bytes <= max_index_size
                    and time_size + nxt.time_index_bytes <= max_index_size
                    and (nxt.size == 0 or last_offset - group[-1].base_offset <= INT_MAX))
            if not fits:
                break
            group.append(rest.pop(0))
            log_size += nxt.size
            index_size += nxt.offset_index_bytes
            time_size += nxt.time_index_bytes
        groups.append(group)
    return groups


# ---- records and batches -----------------------------------------------------------------------------------


def retain_record(offset: int, key: bytes | None, null_value: bool, *, latest_mapped: int, key_offset: int,
                  delete_horizon_ms: int | None, now_ms: int) -> bool:
    """Kafka's `Cleaner.shouldRetainRecord` for a data record of a v2 batch (see the module docstring).
    `latest_mapped`: the offset map's latest offset; `key_offset`: the map's offset for the key (-1: absent)."""
    if offset > latest_mapped:
        return True
    if key is None:
        return False
    if offset < key_offset:
        return False
    return not null_value or delete_horizon_ms is None or now_ms < delete_horizon_ms


def retained_records(records: Sequence[KeyedRecord], base_offset: int, *, latest_mapped: int,
                     key_offset_of: Callable[[bytes], int], delete_horizon_ms: int | None,
                     now_ms: int) -> tuple[list[KeyedRecord], int]:
    """`retain_record` over a batch's records, the cleaner's hot loop: (the records kept, the keyless records below
    the map's reach, which Kafka counts as invalid). `key_offset_of(key)`: the map's offset of a key, -1 if none."""
    kept: list[KeyedRecord] = []
    keep = kept.append
    invalid = 0
    tombstones_go = delete_horizon_ms is not None and now_ms >= delete_horizon_ms
    for record in records:
        offset = base_offset + record[0]
        if offset > latest_mapped:
            keep(record)
            continue
        key = record[2]
        if key is None:
            invalid += 1
        elif offset >= key_offset_of(key) and not (record[3] and tombstones_go):
            keep(record)
    return kept, invalid


class BatchRetention(enum.Enum):
    DELETE = "delete"  # drop the batch whatever its records
    DELETE_EMPTY = "delete-empty"  # keep the records that stay; drop the batch if none does
    RETAIN_EMPTY = "retain-empty"  # keep the batch even when no record stays (an empty batch is written)


@dataclass(frozen=True, slots=True)
class ProducerLast:
    """An active producer's last batch, as the producer state knows it (Kafka's LastRecord)."""

    last_data_offset: int | None  # None: its last entry is a transaction marker
    epoch: int


def batch_retention(*, producer_id: int, producer_epoch: int, is_control: bool, last_offset: int, next_offset: int,
                    producers: Mapping[int, ProducerLast], upper_bound: int, discard_records: bool) -> BatchRetention:
    """Kafka's `checkBatchRetention` of the cleaner's filter. `upper_bound`: the first offset not cleaned by this
    round; `discard_records`: the transaction seam says the batch's records may all go."""
    last = producers.get(producer_id) if producer_id >= 0 else None
    if last is not None:
        if last.last_data_offset is not None:
            is_producers_last = last_offset == last.last_data_offset
        else:
            is_producers_last = is_control and producer_epoch == last.epoch
        if is_producers_last:
            return BatchRetention.RETAIN_EMPTY
    if next_offset == upper_bound:
        return BatchRetention.RETAIN_EMPTY  # keep the round's last offset in the log even when emptied
    return BatchRetention.DELETE if discard_records else BatchRetention.DELETE_EMPTY


def needs_delete_horizon(has_horizon: bool, kept_tombstone: bool, marker_for_empty_txn: bool) -> bool:
    """Kafka's `needToSetDeleteHorizon`: a batch that keeps a tombstone (or an empty transaction's marker) and has no
    horizon yet gets one: now + delete.retention.ms, written into its base timestamp (attribute bit 6)."""
    return (kept_tombstone or marker_for_empty_txn) and not has_horizon


class TransactionSeam(Protocol):
    """Where transactions enter the cleaner (Kafka's `CleanedTransactionMetadata`), fed every batch in log order.

    Kafka's rule, implemented by cleaner_txns.py: the aborted transactions of the cleaned range are
    collected from the transaction index before the pass; a data batch of an aborted transaction is discarded
    whatever its keys (`on_batch_read` -> True), and is never put in the offset map; an ABORT marker stays until
    every batch of its transaction is gone, a COMMIT marker is discardable when no batch of its transaction was
    seen, and an empty control batch is discardable; a discardable marker still waits for its batch's delete
    horizon (set like a tombstone's, `needs_delete_horizon` with `marker_for_empty_txn`) before it goes."""

    def on_batch_read(self, producer_id: int, is_transactional: bool, last_offset: int) -> bool: ...

    def on_control_batch_read(self, producer_id: int, last_offset: int, control_type: int | None) -> bool: ...


class NoTransactions:
    """A seam that knows no transaction: no batch is aborted and every marker stays (never discardable). The
    cleaner's own is cleaner_txns.transaction_seam, over the aborted transactions of its range."""

    def on_batch_read(self, producer_id: int, is_transactional: bool, last_offset: int) -> bool:
        return False

    def on_control_batch_read(self, producer_id: int, last_offset: int, control_type: int | None) -> bool:
        return False
