"""The replicated state machine the runtime feeds: the `StateMachine` protocol and `CountingStateMachine`.

The runtime calls, from its one core task and in log order:
- `load_snapshot(reader)` when the node must start from a snapshot (at start-up, or after a download);
- `apply(batches, base_offset, last_offset)` with encoded record batches that are committed (control batches
  included: a state machine skips them with `RecordBatch.is_control`);
- `leader_changed(leader_id, epoch)` once it has replayed everything before the new leader's epoch;
- `snapshot_records()` when the runtime takes a snapshot of everything applied so far: an iterable of record
  values written into the snapshot's data batches.
The controller will plug in here; the `CountingStateMachine` is what the quickstart and the benchmark use.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable
from typing import Protocol

from pykraft.raft.log import RawSnapshotReader
from pykraft.records import iter_batches

_COUNT = struct.Struct(">qq")  # records applied, last applied offset
_COUNT_MAGIC = b"pykraft.count.v1:"


class StateMachine(Protocol):
    def apply(self, batches: memoryview, base_offset: int, last_offset: int) -> None: ...

    def load_snapshot(self, reader: RawSnapshotReader) -> None: ...

    def leader_changed(self, leader_id: int | None, epoch: int) -> None: ...

    def snapshot_records(self) -> Iterable[bytes]: ...


class CountingStateMachine:
    """Counts committed data records (control records are not counted) and remembers the last committed offset
    and when it was applied (wall-clock ms). Its snapshot is one record holding the count and the offset."""

    def __init__(self) -> None:
        self.records = 0
        self.last_offset = -1
        self.last_commit_ms: int | None = None
        self.leader: tuple[int | None, int] | None = None
        self.snapshots_loaded = 0

    def apply(self, batches: memoryview, base_offset: int, last_offset: int) -> None:
        for batch in iter_batches(batches, verify_crc=False):
            if not batch.is_control:
                self.records += batch.record_count
        self.last_offset = last_offset
        self.last_commit_ms = int(time.time() * 1000)

    def load_snapshot(self, reader: RawSnapshotReader) -> None:
        self.records, self.last_offset = 0, reader.snapshot_id.offset - 1
        for batch in iter_batches(reader.records(), verify_crc=False):
            if batch.is_control:
                continue
            for record in batch.records():
                value = bytes(record.value or b"")
                if value.startswith(_COUNT_MAGIC) and len(value) == len(_COUNT_MAGIC) + _COUNT.size:
                    self.records, _ = _COUNT.unpack_from(value, len(_COUNT_MAGIC))
        self.snapshots_loaded += 1

    def leader_changed(self, leader_id: int | None, epoch: int) -> None:
        self.leader = (leader_id, epoch)

    def snapshot_records(self) -> Iterable[bytes]:
        return [_COUNT_MAGIC + _COUNT.pack(self.records, self.last_offset)]
