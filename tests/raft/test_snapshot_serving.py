"""Snapshots on the leader side (KIP-630): create_snapshot, the snapshot layout, listener loads, Fetch answered
with SnapshotId, FetchSnapshot served in chunks. Named after Kafka's KafkaRaftClientSnapshotTest scenarios (§5.3)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest

from pykraft.raft import messages
from pykraft.raft.config import QuorumConfig
from pykraft.raft.election import ElectionState
from pykraft.raft.log import BOOTSTRAP_SNAPSHOT_ID, InvalidSnapshotIdError, OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.control import ControlRecordType

from raft_context import CLUSTER, Context, build, voter_set
from scenario_helpers import become_leader, fetch, fetch_part, request_partition
from snapshot_helpers import (advance_hwm_to_leo, control_types, data_values, follower, fs_part, fs_request,
                              leader_with_snapshot, loads, log_with, write_snapshot)


# ---- snapshot ids, writer layout and listeners ---------------------------------------------------------------
def test_latest_snapshot_id() -> None:
    log = log_with((1, 3), (1, 3))
    assert build(0, [0, 1], log=log).core.latest_snapshot_id() is None
    write_snapshot(log, OffsetAndEpoch(3, 1))
    ctx = build(0, [0, 1], log=log, stored=ElectionState.with_elected_leader(2, 1))
    assert ctx.core.latest_snapshot_id() == OffsetAndEpoch(3, 1)


def test_created_snapshot_has_header_data_and_footer_in_kafka_layout() -> None:
    ctx, snapshot_id = leader_with_snapshot([b"foo", b"bar"])
    data = bytes(ctx.log.read_snapshot(snapshot_id).records())
    assert control_types(data) == [ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.SNAPSHOT_FOOTER]
    assert data_values(data) == [b"foo", b"bar"]
    batches = list(iter_batches(data))
    assert [b.base_offset for b in batches] == [0, 1, 3]  # offsets start at 0 inside a snapshot
    assert {b.partition_leader_epoch for b in batches} == {snapshot_id.epoch}


def test_snapshot_at_kraft_version_1_carries_kraft_version_and_voters() -> None:
    log = MemoryLog()
    write_snapshot(log, BOOTSTRAP_SNAPSHOT_ID, kraft=1, voters=voter_set([0, 1]))
    ctx = build(0, [0, 1], log=log)
    become_leader(ctx)
    advance_hwm_to_leo(ctx)
    snapshot_id = OffsetAndEpoch(ctx.log.end_offset(), ctx.epoch)
    writer = ctx.core.create_snapshot(snapshot_id, 0, ctx.now)
    writer.freeze()
    data = bytes(ctx.log.read_snapshot(snapshot_id).records())
    assert control_types(data) == [ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.KRAFT_VERSION,
                                   ControlRecordType.KRAFT_VOTERS, ControlRecordType.SNAPSHOT_FOOTER]


@pytest.mark.parametrize("entire_log", [True, False])
def test_leader_listener_notified_of_snapshot_before_announcing_leadership(entire_log: bool) -> None:
    log = log_with((1, 3), (1, 3))
    write_snapshot(log, OffsetAndEpoch(3, 1), [b"state"])
    if not entire_log:
        log.delete_before_snapshot(OffsetAndEpoch(3, 1))
    ctx = build(0, [0, 1], log=log)
    become_leader(ctx)
    advance_hwm_to_leo(ctx)
    assert loads(ctx) == [OffsetAndEpoch(3, 1)]
    assert ctx.core.listener.next_offset == ctx.log.end_offset()  # then committed batches from offset 3


def test_single_voter_leader_loads_its_snapshot_at_startup() -> None:
    # Leader from the first input on: its listener has not been told of the leadership yet, so it may load.
    log = log_with((1, 3), (1, 3))
    write_snapshot(log, OffsetAndEpoch(6, 1))
    log.delete_before_snapshot(OffsetAndEpoch(6, 1))
    ctx = build(0, [0], log=log)
    assert ctx.role == "Leader" and loads(ctx) == [OffsetAndEpoch(6, 1)]
    assert ctx.core.listener.next_offset == ctx.log.end_offset() == 7  # and its LeaderChange committed


@pytest.mark.parametrize("entire_log", [True, False])
def test_follower_listener_notified_of_local_snapshot(entire_log: bool) -> None:
    log = log_with((1, 3), (1, 3))
    write_snapshot(log, OffsetAndEpoch(3, 1))
    if not entire_log:
        log.delete_before_snapshot(OffsetAndEpoch(3, 1))
    ctx = follower(log=log)
    send = ctx.take_sent(FetchRequest)[-1]
    assert request_partition(send).fetch_offset == 6 and request_partition(send).last_fetched_epoch == 1
    ctx.respond(send, messages.fetch_response(ErrorCode.none, leader_id=1, epoch=2, high_watermark=6))
    assert loads(ctx) == [OffsetAndEpoch(3, 1)] and ctx.core.listener.next_offset == 6


def test_bootstrap_checkpoint_is_not_returned_on_fetch_nor_loaded() -> None:
    log = MemoryLog()
    write_snapshot(log, BOOTSTRAP_SNAPSHOT_ID, kraft=1, voters=voter_set([0, 1]))
    ctx = build(0, [0, 1], log=log)
    become_leader(ctx)
    p = fetch_part(ctx.request(fetch(1, ctx.epoch, 0, 0)))
    assert p.snapshot_id.end_offset == -1 and p.records  # the leader's copy of the bootstrap records
    assert loads(ctx) == []


def test_static_voters_ignored_with_bootstrap_snapshot() -> None:
    log = MemoryLog()
    write_snapshot(log, BOOTSTRAP_SNAPSHOT_ID, kraft=1, voters=voter_set([0]))
    ctx = build(0, [0, 1, 2], log=log)  # static voters say {0, 1, 2}; the bootstrap snapshot says {0}
    assert set(ctx.core.voters().ids()) == {0}
    assert ctx.role == "Leader"  # the only voter elects itself at once


# ---- Fetch answered with SnapshotId ------------------------------------------------------------------------
def leader_over_snapshot() -> tuple[Context, OffsetAndEpoch]:
    """Leader (epoch 5) whose log starts at snapshot (3, 4) after records of epoch 4."""
    log = log_with((4, 3), (4, 3), (4, 3))
    write_snapshot(log, OffsetAndEpoch(3, 4))
    log.delete_before_snapshot(OffsetAndEpoch(3, 4))
    ctx = build(0, [0, 1], log=log, stored=ElectionState.with_unknown_leader(4))
    become_leader(ctx)
    return ctx, OffsetAndEpoch(3, 4)


def test_leader_immediately_sends_snapshot_id() -> None:
    ctx, snapshot_id = leader_over_snapshot()
    p = fetch_part(ctx.request(fetch(1, ctx.epoch, 2, 2, max_wait=500)))  # not parked: answered at once
    assert p.error_code == ErrorCode.none and p.current_leader.leader_id == 0
    assert (p.snapshot_id.end_offset, p.snapshot_id.epoch) == (3, 4)


def leader_with_created_snapshot(batches: tuple[tuple[int, int], ...], snapshot_id: OffsetAndEpoch,
                                 delete: bool) -> Context:
    ctx = build(0, [0, 1, 2], log=log_with(*batches))
    become_leader(ctx)
    advance_hwm_to_leo(ctx)
    ctx.core.create_snapshot(snapshot_id, 0, ctx.now).freeze()
    if delete:
        ctx.log.delete_before_snapshot(snapshot_id)
    return ctx


def test_fetch_request_offset_less_than_log_start() -> None:
    ctx = build(0, [0, 1], config=QuorumConfig(append_linger_ms=1))
    become_leader(ctx)
    _, ready = ctx.core.append([b"a", b"b", b"c"], ctx.now)
    ctx._run(ready)
    ctx.advance(1)
    advance_hwm_to_leo(ctx)
    snapshot_id = OffsetAndEpoch(ctx.log.end_offset(), ctx.epoch)
    ctx.core.create_snapshot(snapshot_id, 0, ctx.now).freeze()
    ctx.log.delete_before_snapshot(snapshot_id)
    p = fetch_part(ctx.request(fetch(1, ctx.epoch, snapshot_id.offset - 2, snapshot_id.epoch)))
    assert (p.snapshot_id.end_offset, p.snapshot_id.epoch) == (snapshot_id.offset, snapshot_id.epoch)


def test_fetch_request_offset_at_zero_gets_snapshot_id() -> None:
    ctx = leader_with_created_snapshot(((2, 3),), OffsetAndEpoch(3, 2), delete=False)
    p = fetch_part(ctx.request(fetch(1, ctx.epoch, 0, 0)))
    assert (p.snapshot_id.end_offset, p.snapshot_id.epoch) == (3, 2)


def test_fetch_request_with_larger_last_fetched_epoch_is_invalid() -> None:
    ctx = leader_with_created_snapshot(((2, 3), (2, 3)), OffsetAndEpoch(3, 2), delete=False)
    p = fetch_part(ctx.request(fetch(1, ctx.epoch, 4, ctx.epoch + 1)))
    assert p.error_code == ErrorCode.invalid_request


def test_fetch_request_truncate_to_log_start() -> None:
    ctx = leader_with_created_snapshot(((2, 3), (4, 3)), OffsetAndEpoch(3, 2), delete=False)
    p = fetch_part(ctx.request(fetch(1, ctx.epoch, 4, 3)))  # epoch 3 never existed here: diverges at 3
    assert (p.diverging_epoch.end_offset, p.diverging_epoch.epoch) == (3, 2)


def test_fetch_request_at_log_start_offset_with_valid_and_invalid_epoch() -> None:
    ctx = leader_with_created_snapshot(((2, 3), (2, 3), (4, 3)), OffsetAndEpoch(3, 2), delete=True)
    p = fetch_part(ctx.request(fetch(1, ctx.epoch, 3, 2)))
    assert p.error_code == ErrorCode.none and p.snapshot_id.end_offset == -1 and p.records
    p = fetch_part(ctx.request(fetch(1, ctx.epoch, 3, 3)))
    assert (p.snapshot_id.end_offset, p.snapshot_id.epoch) == (3, 2)


def test_fetch_request_with_last_fetched_epoch_less_than_oldest_snapshot() -> None:
    ctx = leader_with_created_snapshot(((2, 3), (2, 3), (4, 3)), OffsetAndEpoch(3, 2), delete=False)
    p = fetch_part(ctx.request(fetch(1, ctx.epoch, ctx.log.end_offset(), 1)))
    assert (p.snapshot_id.end_offset, p.snapshot_id.epoch) == (3, 2)


# ---- FetchSnapshot served by the leader ----------------------------------------------------------------------
def test_fetch_snapshot_request_missing_snapshot() -> None:
    ctx, _ = leader_with_snapshot()
    p = fs_part(ctx.request(fs_request(ctx.epoch, OffsetAndEpoch(7, 1))))
    assert p.error_code == ErrorCode.snapshot_not_found and p.current_leader.leader_id == 0


def test_fetch_snapshot_request_bootstrap_snapshot_is_never_served() -> None:
    log = MemoryLog()
    write_snapshot(log, BOOTSTRAP_SNAPSHOT_ID, kraft=1, voters=voter_set([0, 1]))
    ctx = build(0, [0, 1], log=log)
    become_leader(ctx)
    assert fs_part(ctx.request(fs_request(ctx.epoch, BOOTSTRAP_SNAPSHOT_ID))).error_code == ErrorCode.snapshot_not_found


def test_fetch_snapshot_request_as_leader_returns_the_whole_snapshot() -> None:
    ctx, snapshot_id = leader_with_snapshot()
    data = bytes(ctx.log.read_snapshot(snapshot_id).records())
    p = fs_part(ctx.request(fs_request(ctx.epoch, snapshot_id)))
    assert p.error_code == ErrorCode.none and (p.size, p.position) == (len(data), 0)
    assert bytes(p.unaligned_records) == data
    assert (p.snapshot_id.end_offset, p.snapshot_id.epoch) == (1, 1)


def test_partial_fetch_snapshot_request_as_leader() -> None:
    ctx, snapshot_id = leader_with_snapshot()
    data = bytes(ctx.log.read_snapshot(snapshot_id).records())
    half = len(data) // 2
    first = fs_part(ctx.request(fs_request(ctx.epoch, snapshot_id, 0, max_bytes=half)))
    assert (first.size, first.position, bytes(first.unaligned_records)) == (len(data), 0, data[:half])
    rest = fs_part(ctx.request(fs_request(ctx.epoch, snapshot_id, half)))
    assert (rest.position, bytes(rest.unaligned_records)) == (half, data[half:])


def test_fetch_snapshot_request_with_invalid_position() -> None:
    ctx, snapshot_id = leader_with_snapshot()
    size = ctx.log.read_snapshot(snapshot_id).size_in_bytes()
    for position in (-1, size):
        p = fs_part(ctx.request(fs_request(ctx.epoch, snapshot_id, position)))
        assert p.error_code == ErrorCode.position_out_of_range
        assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (0, ctx.epoch)


def test_fetch_snapshot_request_with_older_and_newer_epoch() -> None:
    ctx, snapshot_id = leader_with_snapshot()
    assert fs_part(ctx.request(fs_request(ctx.epoch - 1, snapshot_id))).error_code == ErrorCode.fenced_leader_epoch
    assert fs_part(ctx.request(fs_request(ctx.epoch + 1, snapshot_id))).error_code == ErrorCode.unknown_leader_epoch


def test_fetch_snapshot_request_as_follower_is_not_leader_or_follower() -> None:
    ctx = follower()
    p = fs_part(ctx.request(fs_request(2, OffsetAndEpoch(1, 1))))
    assert p.error_code == ErrorCode.not_leader_or_follower
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (1, 2)


def test_fetch_snapshot_request_unknown_partition_and_cluster_id_validation() -> None:
    ctx, snapshot_id = leader_with_snapshot()
    wrong = fs_request(ctx.epoch, snapshot_id)
    wrong = type(wrong)(cluster_id=CLUSTER, replica_id=wrong.replica_id, max_bytes=wrong.max_bytes, topics=(
        type(wrong.topics[0])(name="unknown", partitions=wrong.topics[0].partitions),))
    assert fs_part(ctx.request(wrong)).error_code == ErrorCode.unknown_topic_or_partition
    assert fs_part(ctx.request(fs_request(ctx.epoch, snapshot_id, cluster=None))).error_code == ErrorCode.none
    for cluster in ("", "other"):
        assert ctx.request(fs_request(ctx.epoch, snapshot_id, cluster=cluster)).response.error_code \
            == ErrorCode.inconsistent_cluster_id


def test_leader_should_resign_if_not_get_fetch_snapshot_request_from_majority_voters() -> None:
    ctx = build(0, [0, 1, 2], log=log_with((1, 1)))
    become_leader(ctx)
    advance_hwm_to_leo(ctx)
    ctx.core.create_snapshot(OffsetAndEpoch(1, 1), 0, ctx.now).freeze()
    half = ctx.core.config.check_quorum_timeout_ms // 2
    for replica in (1, 2):
        ctx.advance(half)
        assert ctx.role == "Leader"
        ctx.request(fs_request(ctx.epoch, OffsetAndEpoch(1, 1), replica=replica))  # a voter: check-quorum reset
    ctx.advance(half)
    ctx.request(fs_request(ctx.epoch, OffsetAndEpoch(1, 1), replica=3))  # an observer does not count
    assert ctx.role == "Leader"
    ctx.advance(half)
    assert ctx.role == "Resigned"


# ---- create_snapshot validation -------------------------------------------------------------------------------
def test_create_snapshot_as_leader_with_invalid_snapshot_id() -> None:
    ctx = build(0, [0, 1], log=log_with((2, 3)), config=QuorumConfig(append_linger_ms=1))
    become_leader(ctx)  # epoch 3, its LeaderChange at offset 3
    with pytest.raises(InvalidSnapshotIdError):
        ctx.core.create_snapshot(OffsetAndEpoch(4, 2), 0, ctx.now)  # no high watermark yet
    advance_hwm_to_leo(ctx)
    _, ready = ctx.core.append([b"d", b"e", b"f"], ctx.now)
    ctx._run(ready)
    ctx.advance(1)
    hwm = ctx.core.high_watermark
    assert ctx.log.end_offset() == hwm + 3
    for bad in (OffsetAndEpoch(hwm + 2, 3), OffsetAndEpoch(hwm, 4), OffsetAndEpoch(5, 2)):
        with pytest.raises(InvalidSnapshotIdError):  # beyond the HWM; beyond the epoch; not in epoch 2's range
            ctx.core.create_snapshot(bad, 0, ctx.now)
    assert ctx.core.create_snapshot(OffsetAndEpoch(3, 2), 0, ctx.now) is not None


def test_create_snapshot_as_follower_with_invalid_snapshot_id() -> None:
    ctx = follower(epoch=5, voters=[0, 1, 2])
    with pytest.raises(InvalidSnapshotIdError):
        ctx.core.create_snapshot(OffsetAndEpoch(1, 0), 0, ctx.now)  # no high watermark yet
    batch = encode_batch([SimpleRecord(value=b"abc"[i:i + 1]) for i in range(3)], base_offset=0,
                         partition_leader_epoch=3, timestamp_ms=0)
    ctx.respond(ctx.take_sent(FetchRequest)[-1],
                messages.fetch_response(ErrorCode.none, leader_id=1, epoch=5, high_watermark=0, records=batch))
    for bad in (OffsetAndEpoch(1, 5), OffsetAndEpoch(1, 6)):
        with pytest.raises(InvalidSnapshotIdError):
            ctx.core.create_snapshot(bad, 0, ctx.now)
    batch = encode_batch([SimpleRecord(value=b"d")] * 3, base_offset=3, partition_leader_epoch=4, timestamp_ms=0)
    ctx.respond(ctx.take_sent(FetchRequest)[-1],
                messages.fetch_response(ErrorCode.none, leader_id=1, epoch=5, high_watermark=6, records=batch))
    assert ctx.core.high_watermark == 6
    with pytest.raises(InvalidSnapshotIdError):
        ctx.core.create_snapshot(OffsetAndEpoch(4, 5), 0, ctx.now)  # past the end of epoch 3, wrong epoch
    assert ctx.core.create_snapshot(OffsetAndEpoch(3, 3), 0, ctx.now) is not None


def test_create_snapshot_below_log_start_or_existing_returns_none() -> None:
    ctx, snapshot_id = leader_with_snapshot()
    assert ctx.core.create_snapshot(snapshot_id, 0, ctx.now) is None  # already exists
    ctx.log.delete_before_snapshot(snapshot_id)
    assert ctx.core.create_snapshot(OffsetAndEpoch(0, 0), 0, ctx.now) is None
