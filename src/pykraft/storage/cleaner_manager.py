"""Which partition the cleaner takes next, and the state of each partition's cleaning (Kafka's
`LogCleanerManager`): the owner's side of a pass, run on the thread that owns the logs (the event loop).

- `plan` picks the dirtiest compacted log (compaction_rules.py) among those not being cleaned, not paused and not
  marked uncleanable, marks it in progress and captures a `CleanTask` for a cleaner thread (cleaner.py).
- `swap` puts one cleaned segment in place (segment_swap.py) if the pass still holds: not aborted, and the log's
  layout unchanged since the plan (no truncation, retention or reset in between); otherwise the cleaned files go.
- `done` ends the pass: the log directory's renames of the last swap are synced (segment_swap.py, step 3: each
  swap's first sync covers the previous swap's renames), and the first offset not cleaned goes into
  `cleaner-offset-checkpoint` of the log's directory (Kafka's OffsetCheckpointFile format), unless the pass was
  aborted. A directory whose pass never got to `done` is synced before the next pass of that log is planned.
- `abort_and_pause(key)` / `resume(key)`: what truncation, deletion and log-directory moves call (Kafka's API of
  the same name). Kafka's call blocks until the cleaner thread stopped; here it never blocks: `on_abort` tells the
  pass (in a cleaner process, node/hosts/log_cleaner.py), its next check raises, and since every swap runs on the
  owner's thread and checks the state first, nothing the aborted pass wrote can reach the log after the call.
  `abort(key)` is Kafka's abortCleaning (abort without a pause).
- A pass that fails unexpectedly marks its partition uncleanable for its directory (Kafka's
  uncleanable-partitions-count) until the partition goes away; `truncated` lowers a checkpoint above a truncation.
The in-progress/paused state is shared with the cleaner threads under one lock; the checkpoint files are written on
the owner's thread only.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .cleaner import Cleaner, CleanerStats, CleaningAborted, CleanTask, SourceSegment
from .compaction_rules import (
    LogToClean,
    ProducerLast,
    SegmentFacts,
    choose_filthiest,
    cleanable_offsets,
    log_to_clean,
    max_compaction_delay,
)
from .file_log import FileLog
from .files import CLEANER_CHECKPOINT, sync_dir
from .offset_checkpoints import PartitionKey, read_offsets, update_offsets
from .segment_swap import CleanedSegment, no_fault, replace_segments

_log = logging.getLogger("pykraft.storage.cleaner")


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """A compacted log's settings (its topic's, with Kafka's precedence)."""

    min_cleanable_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = (1 << 63) - 1  # max.compaction.lag.ms
    delete_retention_ms: int = 86_400_000  # delete.retention.ms
    segment_bytes: int = 1 << 30  # segment.bytes: the most a group of cleaned segments may hold
    max_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    delete: bool = False  # cleanup.policy also has delete


@dataclass(frozen=True, slots=True)
class CleanableLog:
    """A compacted log the owner offers to `plan`."""

    key: PartitionKey
    log_dir: str
    log: FileLog
    settings: CompactionSettings
    # The active producers' last batches, or a callable giving them (asked only of the log chosen).
    producers: Mapping[int, ProducerLast] | Callable[[], Mapping[int, ProducerLast]] = field(default_factory=dict)
    # Kafka cleans below the last stable offset only (an open transaction's batches are not cleaned before its
    # marker); None: the high watermark (no transaction can be open).
    stable_offset: int | None = None


@dataclass(slots=True)
class _State:
    in_progress: bool = False
    aborted: bool = False
    pauses: int = 0
    layout_version: int = -1  # the log's layout the running pass expects


def segment_facts(log: FileLog) -> list[SegmentFacts]:
    return [SegmentFacts(s.base_offset, s.size, s.index.max_timestamp, s.first_timestamp,
                         len(s.index._offsets) * 8, len(s.index._times) * 12) for s in log._segments]


class CleanerManager:
    def __init__(self, log_dirs: Iterable[str]) -> None:
        self.log_dirs = tuple(log_dirs)
        self._lock = threading.Lock()
        self._states: dict[PartitionKey, _State] = {}
        self._uncleanable: dict[str, set[PartitionKey]] = {}
        self.dirtiest_ratio = 0.0  # Kafka's max-dirty-percent, as a ratio
        # Told at once when a running pass is aborted (the broker stops its cleaner process's pass: log_cleaner.py).
        self.on_abort: Callable[[PartitionKey], None] = lambda key: None
        self.last_delay_ms = 0  # the longest max.compaction.lag.ms overrun seen by the last plan
        self._unsynced: set[str] = set()  # log directories with a swap's final renames not yet synced

    # ---- checkpoints -------------------------------------------------------------------------------------------
    def checkpoint_path(self, log_dir: str) -> str:
        return os.path.join(log_dir, CLEANER_CHECKPOINT)

    def checkpoints(self) -> dict[PartitionKey, int]:
        found: dict[PartitionKey, int] = {}
        for log_dir in self.log_dirs:
            found.update(read_offsets(self.checkpoint_path(log_dir)))
        return found

    def truncated(self, key: PartitionKey, log_dir: str, offset: int) -> None:
        """Kafka's maybeTruncateCheckpoint: a log truncated below its checkpoint is dirty again from there."""
        current = read_offsets(self.checkpoint_path(log_dir)).get(key)
        if current is not None and current > offset:
            update_offsets(self.checkpoint_path(log_dir), {key: offset})

    def move_checkpoint(self, key: PartitionKey, source_dir: str, target_dir: str) -> None:
        """Kafka's alterCheckpointDir: the partition's log moved to another log directory (AlterReplicaLogDirs,
        between abort_and_pause and resume): its first dirty offset and uncleanable mark move with it."""
        offset = read_offsets(self.checkpoint_path(source_dir)).get(key)
        if offset is not None:
            update_offsets(self.checkpoint_path(source_dir), {}, removed=[key])
            update_offsets(self.checkpoint_path(target_dir), {key: offset})
        with self._lock:
            if key in self._uncleanable.get(source_dir, set()):
                self._uncleanable[source_dir].discard(key)
                self._uncleanable.setdefault(target_dir, set()).add(key)

    def forget(self, key: PartitionKey, log_dir: str) -> None:
        """The partition's log is gone from this directory: its checkpoint entry and marks go too."""
        update_offsets(self.checkpoint_path(log_dir), {}, removed=[key])
        with self._lock:
            self._uncleanable.get(log_dir, set()).discard(key)
            state = self._states.get(key)
            if state is not None and not state.in_progress and state.pauses == 0:
                del self._states[key]

    # ---- choosing a log ----------------------------------------------------------------------------------------
    def plan(self, logs: Iterable[CleanableLog], now_ms: int) -> CleanTask | None:
        """The next pass (see the module docstring), or None when no log is due."""
        checkpoints = self.checkpoints()
        offered: dict[PartitionKey, CleanableLog] = {}
        candidates: list[LogToClean] = []
        with self._lock:
            busy = {k for k, s in self._states.items() if s.in_progress or s.pauses > 0}
            bad = set().union(*self._uncleanable.values()) if self._uncleanable else set()
        delays = [0]
        for item in logs:
            if item.key in busy or item.key in bad:
                continue
            log, settings = item.log, item.settings
            facts = segment_facts(log)
            offsets = cleanable_offsets(facts, log_start=log.start_offset(), log_end=log.end_offset(),
                                        checkpoint=checkpoints.get(item.key),
                                        stable_offset=log.high_watermark() if item.stable_offset is None
                                        else min(item.stable_offset, log.high_watermark()),
                                        min_compaction_lag_ms=settings.min_compaction_lag_ms, now_ms=now_ms)
            if offsets.force_update_checkpoint:
                if not settings.delete:
                    _log.warning("resetting the first dirty offset of %s-%d to its log start %d: the checkpointed "
                                 "offset %s is out of the log's range", *item.key, offsets.first_dirty,
                                 checkpoints.get(item.key))
                update_offsets(self.checkpoint_path(item.log_dir), {item.key: offsets.first_dirty})
            delay = max_compaction_delay(facts, offsets.first_dirty, settings.max_compaction_lag_ms, now_ms)
            delays.append(delay)
            candidates.append(log_to_clean(item.key, facts, offsets, delay_ms=delay,
                                           min_cleanable_ratio=settings.min_cleanable_ratio))
            offered[item.key] = item
        chosen, self.dirtiest_ratio = choose_filthiest(candidates)
        self.last_delay_ms = max(delays)
        if chosen is None:
            return None
        item = offered[chosen.key]  # type: ignore[index]
        self._sync_renames(item.log.directory)  # before the pass writes its first .cleaned file there
        with self._lock:
            state = self._states.setdefault(item.key, _State())
            state.in_progress, state.aborted, state.layout_version = True, False, item.log.layout_version
        return _task(item, chosen, now_ms)

    def in_progress(self, key: PartitionKey) -> bool:
        with self._lock:
            state = self._states.get(key)
            return state is not None and state.in_progress

    # ---- the pass's steps on the owner's thread ----------------------------------------------------------------
    def swap(self, log: FileLog, task: CleanTask, cleaned: CleanedSegment, old_bases: list[int],
             fault: Callable[[str], None] = no_fault) -> bool:
        """Swap `cleaned` in for the segments at `old_bases` if the pass still holds (module docstring). `fault`:
        replace_segments' crash-point hook (tests)."""
        with self._lock:
            state = self._states.get(task.key)
            holds = state is not None and state.in_progress and not state.aborted and state.pauses == 0 \
                and state.layout_version == log.layout_version
        old = [s for s in log._segments if s.base_offset in old_bases]
        if not holds or [s.base_offset for s in old] != old_bases:
            cleaned.discard()
            return False
        _log.info("swapping in the cleaned segment %d of %s-%d for the segments %s", cleaned.base_offset, *task.key,
                  old_bases)
        self._unsynced.add(log.directory)
        replace_segments(log, cleaned, old, fault, sync_renames=False)
        # The cleaned segment's aborted transactions: written before the old segments' files go, so a crash in
        # between leaves entries to spare, never one missing (a read_committed fetch would show aborted records).
        log.txn_index.replace_segments(old_bases, cleaned.base_offset, list(cleaned.aborted))
        with self._lock:
            state.layout_version = log.layout_version  # type: ignore[union-attr]
        return True

    def done(self, task: CleanTask, end_offset: int | None) -> None:
        """The pass ended; `end_offset` (None: aborted or failed) becomes the log's first dirty offset."""
        self._sync_renames(task.directory)
        with self._lock:
            state = self._states.get(task.key)
            completed = state is not None and state.in_progress and not state.aborted
            if state is not None:
                state.in_progress = state.aborted = False
                if state.pauses == 0:
                    del self._states[task.key]
        if completed and end_offset is not None:
            update_offsets(self.checkpoint_path(task.log_dir), {task.key: end_offset})

    def _sync_renames(self, directory: str) -> None:
        if directory in self._unsynced:
            self._unsynced.discard(directory)
            try:
                sync_dir(directory)
            except FileNotFoundError:  # the log was deleted meanwhile
                pass

    # ---- pausing and aborting (any thread) ---------------------------------------------------------------------
    def abort_and_pause(self, key: PartitionKey) -> None:
        with self._lock:
            state = self._states.setdefault(key, _State())
            state.pauses += 1
            running = state.in_progress
            state.aborted = state.aborted or running
        if running:
            self.on_abort(key)

    def resume(self, key: PartitionKey) -> None:
        with self._lock:
            state = self._states.get(key)
            if state is None or state.pauses == 0:
                raise ValueError(f"the cleaning of {key[0]}-{key[1]} cannot be resumed: it is not paused")
            state.pauses -= 1
            if state.pauses == 0 and not state.in_progress:
                del self._states[key]

    def abort(self, key: PartitionKey) -> None:
        """Kafka's abortCleaning: stop a running pass, without pausing the next ones."""
        self.abort_and_pause(key)
        self.resume(key)

    def check_aborted(self, key: PartitionKey) -> None:
        with self._lock:
            state = self._states.get(key)
            if state is None or state.aborted or state.pauses > 0 or not state.in_progress:
                raise CleaningAborted()

    def paused(self, key: PartitionKey) -> bool:
        with self._lock:
            state = self._states.get(key)
            return state is not None and state.pauses > 0

    # ---- uncleanable partitions --------------------------------------------------------------------------------
    def mark_uncleanable(self, log_dir: str, key: PartitionKey) -> None:
        with self._lock:
            self._uncleanable.setdefault(log_dir, set()).add(key)

    def uncleanable_count(self, log_dir: str) -> int:
        with self._lock:
            return len(self._uncleanable.get(log_dir, ()))

    def keep_only(self, present: Iterable[PartitionKey]) -> None:
        """Kafka's maintainUncleanablePartitions: partitions that no longer exist leave the uncleanable sets."""
        keep = set(present)
        with self._lock:
            for log_dir in list(self._uncleanable):
                self._uncleanable[log_dir] &= keep
                if not self._uncleanable[log_dir]:
                    del self._uncleanable[log_dir]


def _task(item: CleanableLog, chosen: LogToClean, now_ms: int) -> CleanTask:
    log, settings = item.log, item.settings
    sources = tuple(SourceSegment(facts, segment.path) for facts, segment in zip(segment_facts(log), log._segments)
                    if facts.base_offset < chosen.first_uncleanable)
    holding = [s for s in log._segments if s.base_offset <= chosen.first_dirty]
    position = holding[-1].index.lookup(chosen.first_dirty) if holding else 0
    return CleanTask(item.key, item.log_dir, log.directory, sources, chosen.first_dirty, chosen.first_uncleanable,
                     position, settings.delete_retention_ms, settings.segment_bytes, settings.max_index_bytes,
                     log.config.index_interval_bytes,
                     dict(item.producers() if callable(item.producers) else item.producers), now_ms,
                     log.layout_version,
                     tuple(log.txn_index.collect(sources[0].facts.base_offset, chosen.first_uncleanable))
                     if sources else ())


class _SameThreadHost:
    """The owner's side of a pass when the pass runs on the owner's thread (tests, the benchmark, a tool)."""

    def __init__(self, manager: CleanerManager, log: FileLog) -> None:
        self.manager, self.log = manager, log

    def check_aborted(self, key: PartitionKey) -> None:
        self.manager.check_aborted(key)

    def swap(self, task: CleanTask, cleaned: CleanedSegment, old_bases: list[int]) -> bool:
        return self.manager.swap(self.log, task, cleaned, old_bases)


def clean_once(manager: CleanerManager, cleaner: Cleaner, offered: Iterable[CleanableLog],
               now_ms: int) -> tuple[CleanTask, int, CleanerStats] | None:
    """Plan and run one pass on this thread; None when no log is due. Errors propagate (after `done`)."""
    offered = list(offered)
    logs = {item.key: item.log for item in offered}
    task = manager.plan(offered, now_ms)
    if task is None:
        return None
    end: int | None = None
    try:
        end, stats = cleaner.clean(task, _SameThreadHost(manager, logs[task.key]))
    except CleaningAborted:
        return None
    finally:
        manager.done(task, end)
    return task, end, stats
