"""MemoryLog against the ReplicatedLog contract (pykraft.raft.log)."""

import pytest

from pykraft.raft.log import (
    InvalidAppendError,
    InvalidSnapshotIdError,
    OffsetAndEpoch,
    ReplicatedLog,
    ValidationKind,
    truncation_offset,
)
from pykraft.raft.memory_log import MemoryLog
from pykraft.records import SimpleRecord, encode_batch, iter_batches


def batch(base: int, epoch: int, count: int = 1) -> bytes:
    records = [SimpleRecord(value=f"v{base + i}".encode()) for i in range(count)]
    return encode_batch(records, base_offset=base, partition_leader_epoch=epoch, timestamp_ms=0)


def build(*spec: tuple[int, int]) -> MemoryLog:
    """A log holding batches given as (epoch, record count)."""
    log = MemoryLog()
    for epoch, count in spec:
        log.append_as_follower(batch(log.end_offset(), epoch, count), epoch)
    return log


def test_memory_log_satisfies_protocol() -> None:
    log: ReplicatedLog = MemoryLog()
    assert log.end_offset() == 0


def test_empty_log_has_primordial_epoch() -> None:
    log = MemoryLog()
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (0, 0, 0)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(0, 0)


def test_append_as_leader_checks_base_offset_and_epoch() -> None:
    log = MemoryLog()
    info = log.append_as_leader(batch(0, 1, 3), 1)
    assert (info.first_offset, info.last_offset) == (0, 2)
    with pytest.raises(InvalidAppendError):
        log.append_as_leader(batch(5, 1), 1)  # gap
    with pytest.raises(InvalidAppendError):
        log.append_as_leader(batch(3, 2), 1)  # wrong epoch
    assert log.end_offset() == 3


def test_append_as_follower_rejects_epoch_going_backwards_without_partial_write() -> None:
    log = build((2, 1))
    with pytest.raises(InvalidAppendError):
        log.append_as_follower(batch(1, 2) + batch(2, 1), 2)
    assert log.end_offset() == 1


def test_append_rejects_garbage_bytes() -> None:
    log = MemoryLog()
    with pytest.raises(InvalidAppendError):
        log.append_as_follower(b"\x00" * 10, 1)
    with pytest.raises(InvalidAppendError):
        log.append_as_follower(batch(0, 1)[:-3], 1)


def test_read_returns_whole_batches_from_the_containing_one() -> None:
    log = build((1, 2), (1, 3), (2, 1))
    info = log.read(3, 1)  # offset 3 is inside the second batch; at least one batch is returned
    got = list(iter_batches(info.records))
    assert info.start_offset == 2 and [b.base_offset for b in got] == [2]
    info = log.read(0, 10**6)
    assert [b.base_offset for b in iter_batches(info.records)] == [0, 2, 5]
    assert log.read(6, 100).records == b""


def test_epoch_cache_end_offset_for_epoch() -> None:
    log = build((1, 2), (3, 2), (3, 1), (5, 1))
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(6, 5)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(6, 5)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)


def test_initialize_leader_epoch_before_any_batch() -> None:
    log = build((1, 2))
    log.initialize_leader_epoch(4)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(2, 4)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(2, 1)


def test_validate_offset_and_epoch_valid_and_diverging() -> None:
    log = build((1, 2), (3, 2))
    assert log.validate_offset_and_epoch(4, 3).kind is ValidationKind.VALID
    assert log.validate_offset_and_epoch(2, 1).kind is ValidationKind.VALID
    diverging = log.validate_offset_and_epoch(3, 2)
    assert diverging.kind is ValidationKind.DIVERGING and diverging.offset_and_epoch == OffsetAndEpoch(2, 1)
    beyond = log.validate_offset_and_epoch(7, 3)
    assert beyond.kind is ValidationKind.DIVERGING and beyond.offset_and_epoch == OffsetAndEpoch(4, 3)
    assert log.validate_offset_and_epoch(0, 0).kind is ValidationKind.VALID


def test_truncate_removes_batches_epochs_and_clamps_flush() -> None:
    log = build((1, 2), (3, 2))
    log.flush()
    log.truncate_to(2)
    assert log.end_offset() == 2 and log.last_fetched_epoch() == 1
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(2, 1)
    assert log.flushed_end_offset() == 2


def test_truncation_offset_for_diverging_epoch() -> None:
    log = build((1, 2), (2, 3), (4, 1))
    assert truncation_offset(log, OffsetAndEpoch(4, 2)) == 4  # shared epoch 2, leader ends it earlier
    assert truncation_offset(log, OffsetAndEpoch(3, 3)) == 3  # we never saw epoch 3: bounded by both
    assert truncation_offset(log, OffsetAndEpoch(0, 0)) == 0


def test_crash_loses_unflushed_data_only() -> None:
    log = build((1, 2))
    log.flush()
    log.append_as_follower(batch(2, 1, 2), 1)
    assert log.end_offset() == 4 and log.flushed_end_offset() == 2
    log.simulate_crash()
    assert log.end_offset() == 2


def test_snapshot_creation_validates_against_hwm_and_boundaries() -> None:
    log = build((1, 2), (1, 2), (2, 2))
    log.update_high_watermark(4)
    with pytest.raises(InvalidSnapshotIdError):
        log.create_new_snapshot(OffsetAndEpoch(6, 2))  # beyond HWM
    with pytest.raises(InvalidSnapshotIdError):
        log.create_new_snapshot(OffsetAndEpoch(3, 1))  # inside a batch
    with pytest.raises(InvalidSnapshotIdError):
        log.create_new_snapshot(OffsetAndEpoch(4, 2))  # epoch 2 starts at 4: not in history
    writer = log.create_new_snapshot(OffsetAndEpoch(4, 1))
    assert writer is not None
    writer.append(b"abc")
    assert log.latest_snapshot_id() is None  # invisible until frozen
    writer.freeze()
    assert log.latest_snapshot_id() == OffsetAndEpoch(4, 1)
    assert log.create_new_snapshot(OffsetAndEpoch(4, 1)) is None  # already exists
    reader = log.read_snapshot(OffsetAndEpoch(4, 1))
    assert reader is not None and reader.read(1, 5) == b"bc" and reader.size_in_bytes() == 3


def test_delete_before_snapshot_moves_log_start_and_redirects_fetches() -> None:
    log = build((1, 2), (1, 2), (2, 2))
    log.update_high_watermark(6)
    writer = log.create_new_snapshot(OffsetAndEpoch(4, 1))
    assert writer is not None
    writer.freeze()
    assert log.delete_before_snapshot(OffsetAndEpoch(4, 1))
    assert log.start_offset() == 4 and log.end_offset() == 6
    result = log.validate_offset_and_epoch(2, 1)
    assert result.kind is ValidationKind.SNAPSHOT and result.offset_and_epoch == OffsetAndEpoch(4, 1)
    assert log.validate_offset_and_epoch(4, 0).kind is ValidationKind.SNAPSHOT  # at start, wrong epoch
    assert log.validate_offset_and_epoch(4, 1).kind is ValidationKind.VALID
    assert log.validate_offset_and_epoch(6, 2).kind is ValidationKind.VALID
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(4, 1)


def test_truncate_to_latest_snapshot_resets_the_log() -> None:
    log = build((1, 2))
    writer = log.create_new_snapshot_unchecked(OffsetAndEpoch(10, 3))
    assert writer is not None
    writer.append(b"x")
    writer.freeze()
    assert log.truncate_to_latest_snapshot()
    assert (log.start_offset(), log.end_offset(), log.high_watermark()) == (10, 10, 10)
    assert log.last_fetched_epoch() == 3
    assert not log.truncate_to_latest_snapshot()
    log.append_as_follower(batch(10, 3), 3)
    assert log.end_offset() == 11


def test_bootstrap_snapshot_does_not_redirect_fetch_at_zero() -> None:
    log = MemoryLog()
    writer = log.create_new_snapshot_unchecked(OffsetAndEpoch(0, 0))
    assert writer is not None
    writer.freeze()
    assert log.validate_offset_and_epoch(0, 0).kind is ValidationKind.VALID
