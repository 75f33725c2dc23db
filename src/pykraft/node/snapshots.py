"""When to snapshot, and log retention afterwards (Kafka's SnapshotGenerator triggers, reference §4.2).

A snapshot of the state machine is taken when, since the last snapshot (or start-up, or snapshot load),
- the committed batches applied add up to `metadata.log.max.record.bytes.between.snapshots` bytes, or
- `metadata.log.max.snapshot.interval.ms` has passed (0 disables) and something new was committed.
The snapshot id is the end of the last applied batch and that batch's epoch; its LastContainedLogTimestamp is the
batch's max timestamp. The state machine has applied exactly up to that offset when the snapshot is written
(everything runs on the core task), so its `snapshot_records()` match the id.
After a snapshot, and at least every 60 s like Kafka's `maybeClean` timer, retention runs (storage/retention.py).
Writing happens on the event loop: cheap for the CountingStateMachine; a controller with large images would move
the write to a thread (not done yet).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from typing import Any

from pykraft.raft.effects import CommitBatches
from pykraft.raft.log import InvalidSnapshotIdError, SnapshotId
from pykraft.records import iter_batches
from pykraft.storage import maybe_clean

_log = logging.getLogger("pykraft.node")

CLEAN_INTERVAL_MS = 60_000
_RECORDS_PER_BATCH = 1000


@dataclass(frozen=True, slots=True)
class _Applied:
    end_offset: int  # exclusive
    epoch: int
    max_timestamp: int


class SnapshotPolicy:
    def __init__(self, max_bytes: int, interval_ms: int, now_ms: int,
                 on_snapshot: Callable[[SnapshotId, int], None] | None = None) -> None:
        self.max_bytes = max_bytes
        self.interval_ms = interval_ms
        self.bytes_since = 0
        self.last_snapshot_ms = now_ms
        self.last_clean_ms = now_ms
        self.applied: _Applied | None = None
        self.snapshotted_end = -1
        self.snapshots_taken = 0
        self.failures = 0
        self._on_snapshot = on_snapshot

    def on_commit(self, effect: CommitBatches) -> None:
        last = None
        for batch in iter_batches(effect.records, verify_crc=False):
            last = batch
        if last is not None:
            self.bytes_since += len(effect.records)
            self.applied = _Applied(last.next_offset, last.partition_leader_epoch, last.max_timestamp)

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, now_ms: int) -> None:
        self.bytes_since = 0
        self.last_snapshot_ms = now_ms
        self.snapshotted_end = snapshot_id.offset
        self.applied = None

    def due(self, now_ms: int) -> bool:
        if self.applied is None or self.applied.end_offset <= self.snapshotted_end:
            return False
        if self.bytes_since >= self.max_bytes:
            return True
        return self.interval_ms > 0 and now_ms - self.last_snapshot_ms >= self.interval_ms

    def maybe_snapshot(self, core: Any, state_machine: Any, now_ms: int) -> SnapshotId | None:
        if not self.due(now_ms):
            return None
        applied = self.applied
        assert applied is not None
        snapshot_id = SnapshotId(applied.end_offset, applied.epoch)
        self.bytes_since = 0
        self.last_snapshot_ms = now_ms
        self.snapshotted_end = applied.end_offset
        try:
            writer = core.create_snapshot(snapshot_id, applied.max_timestamp, now_ms)
        except InvalidSnapshotIdError as exc:
            self.failures += 1
            _log.warning("snapshot %s refused: %s", snapshot_id, exc)
            return None
        if writer is None:
            return None  # already there, or below the log start
        with writer:
            records = iter(state_machine.snapshot_records())
            while chunk := list(islice(records, _RECORDS_PER_BATCH)):
                writer.append(chunk)
            writer.freeze()
        self.snapshots_taken += 1
        if self._on_snapshot is not None:
            self._on_snapshot(snapshot_id, writer.size_in_bytes())
        self.clean(core.log, now_ms)
        return snapshot_id

    def maybe_clean(self, log: Any, now_ms: int) -> bool:
        if now_ms - self.last_clean_ms < CLEAN_INTERVAL_MS:
            return False
        return self.clean(log, now_ms)

    def clean(self, log: Any, now_ms: int) -> bool:
        self.last_clean_ms = now_ms
        if not hasattr(log, "snapshot_ids"):
            return False  # a log without retention (the in-memory log of tests)
        return maybe_clean(log, now_ms)
