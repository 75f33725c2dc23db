"""The node's snapshots: when (raft/snapshot_trigger.py, the pure policy the simulator runs too: size, interval),
and log retention afterwards (storage/retention.py), at least every 60 s like Kafka's `maybeClean` timer.
Writing happens on the event loop: cheap for the CountingStateMachine; a controller with large images would move
the write to a thread (not done yet).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pykraft.raft.effects import CommitBatches
from pykraft.raft.log import InvalidSnapshotIdError, SnapshotId
from pykraft.raft.snapshot_trigger import SnapshotTrigger, write_snapshot
from pykraft.storage import maybe_clean

_log = logging.getLogger("pykraft.node")

CLEAN_INTERVAL_MS = 60_000


class SnapshotPolicy:
    def __init__(self, max_bytes: int, interval_ms: int, now_ms: int,
                 on_snapshot: Callable[[SnapshotId, int], None] | None = None) -> None:
        self.trigger = SnapshotTrigger(max_bytes, interval_ms, now_ms)
        self.last_clean_ms = now_ms
        self.snapshots_taken = 0
        self.failures = 0
        self._on_snapshot = on_snapshot

    @property
    def snapshotted_end(self) -> int:
        return self.trigger.snapshotted_end

    def on_commit(self, effect: CommitBatches) -> None:
        self.trigger.on_commit(effect.records)

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, now_ms: int) -> None:
        self.trigger.on_snapshot_loaded(snapshot_id, now_ms)

    def due(self, now_ms: int) -> bool:
        return self.trigger.due(now_ms)

    def maybe_snapshot(self, core: Any, state_machine: Any, now_ms: int) -> SnapshotId | None:
        applied = self.trigger.next_snapshot(now_ms)
        if applied is None:
            return None
        snapshot_id = SnapshotId(applied.end_offset, applied.epoch)
        try:
            writer = write_snapshot(core, applied, now_ms, state_machine.snapshot_records())
        except InvalidSnapshotIdError as exc:
            self.failures += 1
            _log.warning("snapshot %s refused: %s", snapshot_id, exc)
            return None
        if writer is None:
            return None  # already there, or below the log start
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
