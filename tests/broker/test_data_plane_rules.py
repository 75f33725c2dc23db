"""Pure data-plane rules of a broker: produce validation, idempotent sequence checks, leader state."""

from __future__ import annotations

import struct

import pytest

from pykraft.broker.partition_state import LeaderState, admit_produce
from pykraft.broker.produce_rules import ProducedBatch, Rejected, assign_offsets, validate_batch
from pykraft.broker.producer_state import ProducerStates
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.crc import crc32c


def produced(count: int = 3, pid: int = -1, epoch: int = -1, seq: int = -1, size: int = 10) -> bytearray:
    data = bytearray(encode_batch([SimpleRecord(value=b"v" * size) for _ in range(count)], base_offset=0,
                                  partition_leader_epoch=-1, timestamp_ms=1000))
    struct.pack_into(">qhi", data, 43, pid, epoch, seq)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return data


def test_a_valid_batch_is_accepted_and_patched_in_place_keeping_its_crc() -> None:
    data = produced(3, pid=7, epoch=0, seq=5)
    accepted = validate_batch(data, 1 << 20)
    assert accepted == ProducedBatch(len(data), 3, 1000, 7, 0, 5) and accepted.last_sequence == 7
    assign_offsets(data, 42, 9)
    [batch] = list(iter_batches(data))
    assert (batch.base_offset, batch.partition_leader_epoch, batch.crc_valid) == (42, 9, True)
    assert [r.offset for r in batch.records()] == [42, 43, 44]


@pytest.mark.parametrize("damage, error", [
    (lambda d: d.__setitem__(16, 1), ErrorCode.INVALID_RECORD),  # magic 1
    (lambda d: d.__setitem__(70, d[70] ^ 1), ErrorCode.CORRUPT_MESSAGE),
    (lambda d: d.extend(d), ErrorCode.INVALID_RECORD),  # two batches
    (lambda d: d.__delitem__(slice(70, None)), ErrorCode.INVALID_RECORD),  # cut
])
def test_bad_batches_get_kafkas_error_codes(damage, error) -> None:
    data = produced()
    damage(data)
    result = validate_batch(bytes(data), 1 << 20)
    assert isinstance(result, Rejected) and result.error is error


def test_size_and_count_limits() -> None:
    assert validate_batch(produced(size=2000), 1000).error is ErrorCode.MESSAGE_TOO_LARGE
    assert validate_batch(b"", 1000).error is ErrorCode.INVALID_RECORD
    assert validate_batch(None, 1000).error is ErrorCode.INVALID_RECORD
    data = produced()
    struct.pack_into(">i", data, 23, 5)  # last offset delta says 6 records, count says 3
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    assert validate_batch(data, 1 << 20).error is ErrorCode.INVALID_RECORD


def test_idempotent_sequences_deduplicate_and_refuse_gaps() -> None:
    states = ProducerStates()
    assert states.check(1, 0, 17, 19).error is ErrorCode.NONE  # unknown producer: any start
    states.observe(1, 0, 0, 2, 100, 102)
    states.observe(1, 0, 3, 5, 103, 105)
    dup = states.check(1, 0, 0, 2)
    assert dup.error is ErrorCode.NONE and dup.duplicate_of is not None and dup.duplicate_of.base_offset == 100
    assert states.check(1, 0, 6, 6) .error is ErrorCode.NONE and states.check(1, 0, 6, 6).duplicate_of is None
    assert states.check(1, 0, 8, 9).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert states.check(1, 1, 4, 4).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # new epoch starts at 0
    assert states.check(1, 1, 0, 0).error is ErrorCode.NONE
    states.observe(1, 1, 0, 0, 106, 106)
    assert states.check(1, 0, 6, 6).error is ErrorCode.INVALID_PRODUCER_EPOCH


def test_follower_progress_follows_kafkas_caught_up_rule() -> None:
    state: LeaderState[str] = LeaderState(leader_epoch=3, epoch_start_offset=10, replicas=(1, 2, 3), leader_id=1)
    assert not state.on_follower_fetch(1, 0, -1, 10, now_ms=0)  # the leader is not its own follower
    assert not state.on_follower_fetch(9, 0, -1, 10, now_ms=0)
    assert state.progress(10).followers == ()
    state.on_follower_fetch(2, 10, 5, leader_leo=10, now_ms=100)  # at the end: caught up now
    state.on_follower_fetch(3, 4, 6, leader_leo=10, now_ms=100)  # behind
    state.on_follower_fetch(2, 10, 5, leader_leo=20, now_ms=200)  # reached the end seen at its last fetch
    progress = state.progress(20)
    assert progress.follower(2).last_caught_up_ms == 100 and progress.follower(2).broker_epoch == 5
    assert progress.follower(3).last_caught_up_ms == 0 and progress.follower(3).log_end_offset == 4
    state.on_follower_fetch(2, 20, 5, leader_leo=20, now_ms=300)
    assert state.progress(20).follower(2).last_caught_up_ms == 300


def test_acks_all_waiters_release_at_the_high_watermark() -> None:
    state: LeaderState[str] = LeaderState(1, 0, (1, 2), 1)
    state.add_waiter(5, "a")
    state.add_waiter(9, "b")
    assert state.release(4, isr_size=2, min_insync=2) == []
    assert state.release(5, isr_size=2, min_insync=2) == [("a", ErrorCode.NONE)]
    assert state.release(9, isr_size=1, min_insync=2) == [("b", ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)]
    state.add_waiter(12, "c")
    assert state.abandon() == ["c"] and state.waiting == 0


def test_admission() -> None:
    assert admit_produce(2, 3, 1) is ErrorCode.INVALID_REQUIRED_ACKS
    assert admit_produce(-1, 1, 2) is ErrorCode.NOT_ENOUGH_REPLICAS
    assert admit_produce(1, 1, 2) is ErrorCode.NONE
    assert admit_produce(-1, 2, 2) is ErrorCode.NONE
