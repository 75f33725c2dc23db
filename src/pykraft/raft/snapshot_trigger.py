"""When a state machine takes a snapshot, and how it is written: one pure policy (no clock, no files) for the node
(node/runtime/snapshots.py adds log retention) and the simulator (sim/engine/node.py adds its checks), as Kafka's
SnapshotGenerator decides for its metadata image (reference §4.2).

Since the last snapshot (taken or attempted, or loaded at start-up or after a download), one is due when
- the committed batches applied add up to `max_bytes` bytes (metadata.log.max.record.bytes.between.snapshots), or
- `interval_ms` has passed (0 disables) and something new was committed (metadata.log.max.snapshot.interval.ms), or
- the committed offsets since reach `max_offsets` (0 disables: the simulator's "every K offsets" setting).
The snapshot id is the end of the last applied batch and that batch's epoch; its LastContainedLogTimestamp is the
batch's max timestamp. The state machine has applied exactly up to that offset when the snapshot is written (the
host runs both on one task), so its records match the id. An attempt the core refuses is not retried before the
next trigger (a refusal means the id is beyond what the core knows committed: more commits come first).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Any

from pykraft.records import iter_batches

from .log import SnapshotId

NO_BYTE_LIMIT = 1 << 62
RECORDS_PER_BATCH = 1000


@dataclass(frozen=True, slots=True)
class Applied:
    end_offset: int  # exclusive
    epoch: int
    max_timestamp: int


class SnapshotTrigger:
    def __init__(self, max_bytes: int, interval_ms: int, now_ms: int, max_offsets: int = 0) -> None:
        self.max_bytes = max_bytes
        self.interval_ms = interval_ms
        self.max_offsets = max_offsets
        self.bytes_since = 0
        self.last_snapshot_ms = now_ms
        self.applied: Applied | None = None
        self.snapshotted_end = -1

    def on_commit(self, records: bytes | memoryview) -> None:
        """Committed batches handed to the state machine (control batches included)."""
        last = None
        for batch in iter_batches(records, verify_crc=False):
            last = batch
        if last is not None:
            self.bytes_since += len(records)
            self.applied = Applied(last.next_offset, last.partition_leader_epoch, last.max_timestamp)

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, now_ms: int) -> None:
        self.bytes_since = 0
        self.last_snapshot_ms = now_ms
        self.snapshotted_end = snapshot_id.offset
        self.applied = None

    def due(self, now_ms: int) -> bool:
        applied = self.applied
        if applied is None or applied.end_offset <= self.snapshotted_end:
            return False
        if self.bytes_since >= self.max_bytes:
            return True
        if self.max_offsets > 0 and applied.end_offset - max(self.snapshotted_end, 0) >= self.max_offsets:
            return True
        return self.interval_ms > 0 and now_ms - self.last_snapshot_ms >= self.interval_ms

    def next_snapshot(self, now_ms: int) -> Applied | None:
        """What to snapshot when one is due (the trigger then counts from it), else None."""
        if not self.due(now_ms):
            return None
        applied = self.applied
        assert applied is not None
        self.bytes_since = 0
        self.last_snapshot_ms = now_ms
        self.snapshotted_end = applied.end_offset
        return applied


def write_snapshot(core: Any, applied: Applied, now_ms: int, records: Iterable[bytes]) -> Any:
    """The snapshot of `records` at `applied`'s end, written and frozen through `core.create_snapshot`: the frozen
    writer, or None when the core has it already or it is below the log start. `InvalidSnapshotIdError` passes
    through (the id is beyond what the core knows committed)."""
    writer = core.create_snapshot(SnapshotId(applied.end_offset, applied.epoch), applied.max_timestamp, now_ms)
    if writer is None:
        return None
    with writer:
        values = iter(records)
        while chunk := list(islice(values, RECORDS_PER_BATCH)):
            writer.append(chunk)
        writer.freeze()
    return writer
