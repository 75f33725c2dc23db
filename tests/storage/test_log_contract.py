"""The ReplicatedLog contract, run against MemoryLog (the reference) and FileLog alike."""

from __future__ import annotations

import pytest

from pykraft.raft.log import (
    InvalidAppendError,
    InvalidSnapshotIdError,
    OffsetAndEpoch,
    ReplicatedLog,
    ValidationKind,
    truncation_offset,
)
from pykraft.records import iter_batches

from .helpers import batch, fill, log_factories


@pytest.fixture(params=["memory", "file"])
def new_log(request: pytest.FixtureRequest, tmp_path):
    logs = []
    factory = log_factories(tmp_path)[request.param]

    def make(*spec: tuple[int, int]) -> ReplicatedLog:
        log = factory()
        logs.append(log)
        return fill(log, *spec)

    yield make
    for log in logs:
        if hasattr(log, "close"):
            log.close()


def all_bases(log: ReplicatedLog, start: int) -> list[int]:
    """Base offsets of every batch from `start`, reading in small steps (works across segments)."""
    bases = []
    offset = start
    while offset < log.end_offset():
        got = list(iter_batches(log.read(offset, 1).records))
        assert got, "a read inside the log returns at least one batch"
        bases += [b.base_offset for b in got]
        offset = got[-1].next_offset
    return bases


def test_empty_log_has_primordial_epoch(new_log) -> None:
    log = new_log()
    assert (log.start_offset(), log.end_offset(), log.last_fetched_epoch()) == (0, 0, 0)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(0, 0)


def test_append_as_leader_checks_base_offset_and_epoch(new_log) -> None:
    log = new_log()
    info = log.append_as_leader(batch(0, 1, 3), 1)
    assert (info.first_offset, info.last_offset) == (0, 2)
    with pytest.raises(InvalidAppendError):
        log.append_as_leader(batch(5, 1), 1)
    with pytest.raises(InvalidAppendError):
        log.append_as_leader(batch(3, 2), 1)
    assert log.end_offset() == 3


def test_follower_append_rejects_epoch_going_backwards_without_partial_write(new_log) -> None:
    log = new_log((2, 1))
    with pytest.raises(InvalidAppendError):
        log.append_as_follower(batch(1, 2) + batch(2, 1), 2)
    assert log.end_offset() == 1
    assert all_bases(log, 0) == [0]


def test_append_rejects_garbage_bytes(new_log) -> None:
    log = new_log()
    with pytest.raises(InvalidAppendError):
        log.append_as_follower(b"\x00" * 10, 1)
    with pytest.raises(InvalidAppendError):
        log.append_as_follower(batch(0, 1)[:-3], 1)
    assert log.end_offset() == 0


def test_read_returns_whole_batches_from_the_containing_one(new_log) -> None:
    log = new_log((1, 2), (1, 3), (2, 1))
    info = log.read(3, 1)
    got = list(iter_batches(info.records))
    assert info.start_offset == 2 and [b.base_offset for b in got] == [2]
    info = log.read(0, 10**6)
    assert [b.base_offset for b in iter_batches(info.records)] == [0, 2, 5]
    assert bytes(log.read(6, 100).records) == b""


def test_reads_are_read_only_so_no_reader_writes_into_the_log_and_kio_accepts_them(new_log) -> None:
    log = new_log((1, 2), (1, 3))
    for records in (log.read(0, 10**6).records, log.read(2, 1).records):
        assert memoryview(records).readonly


def test_read_respects_max_bytes_and_returns_exact_bytes(new_log) -> None:
    log = new_log(*[(1, 2)] * 30)
    expected = b"".join(batch(2 * i, 1, 2) for i in range(30))
    size = len(batch(0, 1, 2))
    info = log.read(10, 3 * size)
    assert bytes(info.records) == expected[5 * size : 8 * size]
    assert [b.base_offset for b in iter_batches(log.read(10, 3 * size - 1).records)] == [10, 12]
    assert all_bases(log, 0) == list(range(0, 60, 2))


def test_epoch_cache_end_offset_for_epoch(new_log) -> None:
    log = new_log((1, 2), (3, 2), (3, 1), (5, 1))
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(6, 5)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(6, 5)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)


def test_initialize_leader_epoch_before_any_batch(new_log) -> None:
    log = new_log((1, 2))
    log.initialize_leader_epoch(4)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(2, 4)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(2, 1)


def test_validate_offset_and_epoch_valid_and_diverging(new_log) -> None:
    log = new_log((1, 2), (3, 2))
    assert log.validate_offset_and_epoch(4, 3).kind is ValidationKind.VALID
    assert log.validate_offset_and_epoch(2, 1).kind is ValidationKind.VALID
    diverging = log.validate_offset_and_epoch(3, 2)
    assert diverging.kind is ValidationKind.DIVERGING and diverging.offset_and_epoch == OffsetAndEpoch(2, 1)
    beyond = log.validate_offset_and_epoch(7, 3)
    assert beyond.kind is ValidationKind.DIVERGING and beyond.offset_and_epoch == OffsetAndEpoch(4, 3)


def test_truncate_inside_a_batch_removes_it_whole_and_clamps_flush(new_log) -> None:
    log = new_log((1, 2), (3, 2), (3, 3))
    log.flush()
    log.truncate_to(5)  # inside the batch 4..6
    assert log.end_offset() == 4 and log.last_fetched_epoch() == 3
    log.truncate_to(2)
    assert log.end_offset() == 2 and log.last_fetched_epoch() == 1
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(2, 1)
    assert log.flushed_end_offset() == 2
    log.append_as_follower(batch(2, 4), 4)
    assert all_bases(log, 0) == [0, 2]


def test_truncation_across_many_segments_then_append(new_log) -> None:
    log = new_log(*[(e, 3) for e in (1, 1, 2, 2, 3, 3, 4, 4, 5, 5)])
    log.truncate_to(7)
    assert log.end_offset() == 6 and log.last_fetched_epoch() == 1
    fill(log, (6, 2), (6, 1))
    assert all_bases(log, 0) == [0, 3, 6, 8]
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(6, 1)
    assert log.end_offset_for_epoch(6) == OffsetAndEpoch(9, 6)


def test_truncation_offset_for_diverging_epoch(new_log) -> None:
    log = new_log((1, 2), (2, 3), (4, 1))
    assert truncation_offset(log, OffsetAndEpoch(4, 2)) == 4
    assert truncation_offset(log, OffsetAndEpoch(3, 3)) == 3
    assert truncation_offset(log, OffsetAndEpoch(0, 0)) == 0


def test_flush_tracks_the_durable_prefix(new_log) -> None:
    log = new_log((1, 2))
    assert log.flushed_end_offset() == 0
    log.flush()
    fill(log, (1, 2))
    assert (log.end_offset(), log.flushed_end_offset()) == (4, 2)
    log.flush()
    assert log.flushed_end_offset() == 4


def snapshot_payload(snapshot_id: OffsetAndEpoch) -> bytes:
    return batch(0, snapshot_id.epoch, 2)


def freeze(log: ReplicatedLog, snapshot_id: OffsetAndEpoch, unchecked: bool = False) -> None:
    writer = (log.create_new_snapshot_unchecked if unchecked else log.create_new_snapshot)(snapshot_id)
    assert writer is not None
    writer.append(snapshot_payload(snapshot_id))
    writer.freeze()
    writer.close()


def test_snapshot_creation_validates_against_hwm_and_boundaries(new_log) -> None:
    log = new_log((1, 2), (1, 2), (2, 2))
    log.update_high_watermark(4)
    with pytest.raises(InvalidSnapshotIdError):
        log.create_new_snapshot(OffsetAndEpoch(6, 2))
    with pytest.raises(InvalidSnapshotIdError):
        log.create_new_snapshot(OffsetAndEpoch(3, 1))
    with pytest.raises(InvalidSnapshotIdError):
        log.create_new_snapshot(OffsetAndEpoch(4, 2))
    writer = log.create_new_snapshot(OffsetAndEpoch(4, 1))
    assert writer is not None
    writer.append(b"abc")
    assert log.latest_snapshot_id() is None
    writer.freeze()
    assert log.latest_snapshot_id() == OffsetAndEpoch(4, 1)
    assert log.create_new_snapshot(OffsetAndEpoch(4, 1)) is None
    reader = log.read_snapshot(OffsetAndEpoch(4, 1))
    assert reader is not None and bytes(reader.read(1, 5)) == b"bc" and reader.size_in_bytes() == 3
    assert bytes(reader.records()) == b"abc"


def test_closed_unfrozen_writer_leaves_no_snapshot(new_log) -> None:
    log = new_log((1, 2))
    writer = log.create_new_snapshot_unchecked(OffsetAndEpoch(2, 1))
    assert writer is not None
    writer.append(b"partial")
    writer.close()
    assert log.latest_snapshot_id() is None and log.read_snapshot(OffsetAndEpoch(2, 1)) is None


def test_delete_before_snapshot_moves_log_start_and_redirects_fetches(new_log) -> None:
    log = new_log((1, 2), (1, 2), (2, 2))
    log.update_high_watermark(6)
    freeze(log, OffsetAndEpoch(4, 1))
    assert log.delete_before_snapshot(OffsetAndEpoch(4, 1))
    assert log.start_offset() == 4 and log.end_offset() == 6
    result = log.validate_offset_and_epoch(2, 1)
    assert result.kind is ValidationKind.SNAPSHOT and result.offset_and_epoch == OffsetAndEpoch(4, 1)
    assert log.validate_offset_and_epoch(4, 0).kind is ValidationKind.SNAPSHOT
    assert log.validate_offset_and_epoch(4, 1).kind is ValidationKind.VALID
    assert log.validate_offset_and_epoch(6, 2).kind is ValidationKind.VALID
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(4, 1)
    assert all_bases(log, 4) == [4]


def test_delete_before_snapshot_drops_older_snapshots(new_log) -> None:
    log = new_log(*[(1, 2)] * 10)
    log.update_high_watermark(20)
    for offset in (4, 10, 16):
        freeze(log, OffsetAndEpoch(offset, 1))
    assert log.delete_before_snapshot(OffsetAndEpoch(10, 1))
    assert log.earliest_snapshot_id() == OffsetAndEpoch(10, 1)
    assert log.read_snapshot(OffsetAndEpoch(4, 1)) is None
    assert not log.delete_before_snapshot(OffsetAndEpoch(10, 1))


def test_truncate_to_latest_snapshot_resets_the_log(new_log) -> None:
    log = new_log((1, 2))
    freeze(log, OffsetAndEpoch(10, 3), unchecked=True)
    assert log.truncate_to_latest_snapshot()
    assert (log.start_offset(), log.end_offset(), log.high_watermark()) == (10, 10, 10)
    assert log.last_fetched_epoch() == 3
    assert not log.truncate_to_latest_snapshot()
    log.append_as_follower(batch(10, 3), 3)
    assert log.end_offset() == 11 and all_bases(log, 10) == [10]


def test_bootstrap_snapshot_does_not_redirect_fetch_at_zero(new_log) -> None:
    log = new_log()
    freeze(log, OffsetAndEpoch(0, 0), unchecked=True)
    assert log.validate_offset_and_epoch(0, 0).kind is ValidationKind.VALID
