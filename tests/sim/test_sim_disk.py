"""The simulated disk: fsync semantics, torn writes recovered by CRC and length, bit flips found on read."""

import random

import pytest

from pykraft.raft.election import ElectionState
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records import SimpleRecord, encode_batch
from pykraft.sim.engine.disk import SimDisk, SimLog, StorageCorruptionError


def log_with(batches: int, flushed: int) -> SimLog:
    log = SimLog()
    for i in range(batches):
        log.append_as_follower(encode_batch([SimpleRecord(value=f"v{i}".encode() * 20)], base_offset=i,
                                            partition_leader_epoch=1, timestamp_ms=0), 1)
        if i + 1 == flushed:
            log.flush()
    return log


def test_crash_loses_exactly_the_unflushed_batches() -> None:
    log = log_with(5, flushed=3)
    log.crash(random.Random(1), torn_probability=0.0)
    assert log.end_offset() == 3


def test_torn_tail_keeps_only_whole_valid_batches() -> None:
    ends = set()
    for seed in range(40):
        log = log_with(6, flushed=2)
        log.crash(random.Random(seed), torn_probability=1.0)
        assert 2 <= log.end_offset() < 6  # the torn batch itself never survives
        assert log.read(0, 1 << 20).records  # what is left reads back with valid CRCs
        ends.add(log.end_offset())
    assert len(ends) > 1  # sometimes some unflushed batches made it whole


def test_crash_after_a_snapshot_dropped_every_unflushed_batch() -> None:
    """Swarm seed 6001709: a snapshot at the log end (nothing flushed yet) deleted every batch, then a torn crash."""
    log = log_with(4, flushed=0)
    log.update_high_watermark(4)
    writer = log.create_new_snapshot(OffsetAndEpoch(4, 1))
    assert writer is not None
    writer.freeze()
    assert log.delete_before_snapshot(OffsetAndEpoch(4, 1))
    assert log.flushed_end_offset() == 4  # the snapshot is durable: nothing below it can be lost
    log.crash(random.Random(0), torn_probability=1.0)
    assert (log.start_offset(), log.end_offset()) == (4, 4)


def test_a_crash_below_a_snapshot_of_applied_state_restarts_the_log_at_the_snapshot() -> None:
    """Swarm seed 6006527: a follower applied (and snapshotted) committed batches it had not flushed yet, then
    crashed; the recovered log must not end below the snapshot the state machine loads (storage/log_open.py)."""
    log = log_with(6, flushed=2)
    log.update_high_watermark(6)
    writer = log.create_new_snapshot(OffsetAndEpoch(6, 1))
    assert writer is not None
    writer.freeze()
    log.crash(random.Random(0), torn_probability=0.0)
    assert (log.start_offset(), log.end_offset()) == (6, 6)


def test_bit_flip_is_detected_on_read_and_survives_a_crash() -> None:
    log = log_with(4, flushed=4)
    base = log.flip_bit(random.Random(3))
    assert base is not None
    with pytest.raises(StorageCorruptionError):
        log.read(0, 1 << 20)
    log.crash(random.Random(0), torn_probability=0.0)
    with pytest.raises(StorageCorruptionError):
        log.read(base, 1 << 20)


def test_wipe_is_a_new_directory_with_nothing_on_it() -> None:
    disk = SimDisk(__import__("uuid").UUID(int=1), log_with(3, flushed=3))
    disk.persist(ElectionState(4, 1))
    disk.wipe(__import__("uuid").UUID(int=2))
    assert disk.log.end_offset() == 0 and disk.election is None and disk.generation == 1
