"""The one snapshot policy of the node and the simulator (raft/snapshot_trigger.py): the size, interval and offset
triggers, what resets them, and the snapshot written through the core."""

from __future__ import annotations

from pykraft.raft.log import SnapshotId
from pykraft.raft.snapshot_trigger import NO_BYTE_LIMIT, RECORDS_PER_BATCH, Applied, SnapshotTrigger, write_snapshot
from pykraft.records.batch import SimpleRecord, encode_batch


def batch(base_offset: int, count: int, epoch: int = 3, timestamp_ms: int = 1000) -> bytes:
    return encode_batch([SimpleRecord(b"x" * 10) for _ in range(count)], base_offset=base_offset,
                        partition_leader_epoch=epoch, timestamp_ms=timestamp_ms)


def test_the_size_trigger_fires_once_the_committed_bytes_reach_the_limit_and_counts_from_the_snapshot() -> None:
    first = batch(0, 5)
    trigger = SnapshotTrigger(max_bytes=2 * len(first), interval_ms=0, now_ms=0)
    trigger.on_commit(first)
    assert trigger.next_snapshot(1) is None
    trigger.on_commit(batch(5, 5, timestamp_ms=2000))
    assert trigger.next_snapshot(2) == Applied(end_offset=10, epoch=3, max_timestamp=2000)
    assert trigger.snapshotted_end == 10
    assert trigger.next_snapshot(3) is None  # counted from the snapshot (or the refused attempt)


def test_the_interval_trigger_needs_something_new_committed() -> None:
    trigger = SnapshotTrigger(max_bytes=NO_BYTE_LIMIT, interval_ms=100, now_ms=0)
    assert trigger.next_snapshot(500) is None
    trigger.on_commit(batch(0, 1))
    assert trigger.next_snapshot(99) is None
    assert trigger.next_snapshot(100) == Applied(1, 3, 1000)
    assert trigger.next_snapshot(1000) is None


def test_the_offset_trigger_counts_offsets_since_the_last_snapshot_loaded_or_taken() -> None:
    trigger = SnapshotTrigger(max_bytes=NO_BYTE_LIMIT, interval_ms=0, now_ms=0, max_offsets=50)
    trigger.on_commit(batch(0, 49))
    assert trigger.next_snapshot(0) is None
    trigger.on_commit(batch(49, 1))
    assert trigger.next_snapshot(0) == Applied(50, 3, 1000)
    trigger.on_snapshot_loaded(SnapshotId(120, 4), now_ms=0)
    trigger.on_commit(batch(120, 49))
    assert trigger.next_snapshot(0) is None
    trigger.on_commit(batch(169, 1))
    assert trigger.next_snapshot(0) == Applied(170, 3, 1000)


def test_without_any_trigger_nothing_is_ever_due() -> None:
    trigger = SnapshotTrigger(max_bytes=NO_BYTE_LIMIT, interval_ms=0, now_ms=0, max_offsets=0)
    trigger.on_commit(batch(0, 1000))
    assert trigger.next_snapshot(10**9) is None


class _Writer:
    def __init__(self) -> None:
        self.batches: list[list[bytes]] = []
        self.frozen = self.closed = False

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed = True

    def append(self, values: list[bytes]) -> None:
        self.batches.append(values)

    def freeze(self) -> None:
        self.frozen = True


class _Core:
    def __init__(self, writer: _Writer | None) -> None:
        self.writer = writer
        self.asked: list[tuple[SnapshotId, int, int]] = []

    def create_snapshot(self, snapshot_id: SnapshotId, timestamp: int, now_ms: int) -> _Writer | None:
        self.asked.append((snapshot_id, timestamp, now_ms))
        return self.writer


def test_write_snapshot_asks_the_core_for_the_id_and_writes_the_records_in_batches() -> None:
    core = _Core(_Writer())
    values = [b"%d" % i for i in range(RECORDS_PER_BATCH + 1)]
    writer = write_snapshot(core, Applied(42, 7, 1234), 99, values)
    assert core.asked == [(SnapshotId(42, 7), 1234, 99)]
    assert writer.batches == [values[:RECORDS_PER_BATCH], values[RECORDS_PER_BATCH:]]
    assert writer.frozen and writer.closed
    assert write_snapshot(_Core(None), Applied(42, 7, 1234), 99, values) is None
