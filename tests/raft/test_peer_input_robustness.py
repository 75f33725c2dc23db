"""Bad input from a peer never raises out of the core (hypothesis): arbitrary Fetch and FetchSnapshot answers to a
downloading follower, and arbitrary Fetch and FetchSnapshot requests to a leader holding a snapshot."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.fetch_snapshot.v1 import request as fs_req
from kio.schema.fetch_snapshot.v1.request import FetchSnapshotRequest
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i64

from pykraft.raft import messages
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.states import Role
from pykraft.raft.voter_set import ReplicaKey

from raft_context import CLUSTER
from snapshot_helpers import answer_fetch_with_snapshot, follower, leader_with_snapshot, snapshot_bytes

ERRORS = st.sampled_from([ErrorCode.none, ErrorCode.snapshot_not_found, ErrorCode.position_out_of_range,
                          ErrorCode.fenced_leader_epoch, ErrorCode.unknown_leader_epoch,
                          ErrorCode.not_leader_or_follower, ErrorCode.broker_not_available])
SMALL = st.integers(min_value=-1, max_value=6)
OFFSET = st.integers(min_value=-1, max_value=400)
SNAPSHOT = snapshot_bytes(OffsetAndEpoch(100, 1), [b"a" * 50, b"b" * 50])

snapshot_answers = st.builds(
    lambda error, top, epoch, leader, offset, snap_epoch, size, position, data: messages.fetch_snapshot_response(
        top, partition_error=error, leader_id=leader, epoch=epoch, snapshot_id=OffsetAndEpoch(offset, snap_epoch),
        size=size, position=position, records=data),
    ERRORS, st.sampled_from([ErrorCode.none, ErrorCode.broker_not_available]), SMALL, SMALL,
    st.sampled_from([-1, 100, 120]), SMALL, OFFSET, OFFSET,
    st.one_of(st.binary(max_size=64), st.integers(0, len(SNAPSHOT)).map(lambda i: SNAPSHOT[i:i + 97])),
)
fetch_answers = st.builds(
    lambda error, epoch, leader, offset, snap_epoch, hwm, data: messages.fetch_response(
        ErrorCode.none, partition_error=error, leader_id=leader, epoch=epoch,
        snapshot_id=OffsetAndEpoch(offset, snap_epoch), high_watermark=hwm, records=data),
    ERRORS, SMALL, SMALL, st.sampled_from([-1, 100, 120]), SMALL, OFFSET, st.binary(max_size=80),
)


def _assert_sane(ctx) -> None:
    log = ctx.core.log
    assert log.start_offset() <= log.end_offset()
    hwm = ctx.core.high_watermark
    assert hwm is None or hwm <= log.end_offset()
    assert ctx.core.quorum.role in set(Role)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(snapshot_answers, fetch_answers), min_size=1, max_size=8))
def test_follower_survives_arbitrary_fetch_and_fetch_snapshot_answers(answers) -> None:
    ctx = follower(voters=[0, 1, 2])
    answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    for answer in answers:
        pending = [s for s in ctx.sent if isinstance(s.request, (FetchRequest, FetchSnapshotRequest))]
        ctx.sent.clear()
        if pending:
            ctx.respond(pending[-1], answer)
        ctx.advance(25)
        _assert_sane(ctx)


def _fetch_snapshot_request(epoch: int, offset: int, snap_epoch: int, position: int, max_bytes: int, replica: int,
                            partition: int, topic: str) -> fs_req.FetchSnapshotRequest:
    snapshot = fs_req.SnapshotId(end_offset=i64(offset), epoch=i32(snap_epoch))
    part = fs_req.PartitionSnapshot(partition=i32(partition), current_leader_epoch=i32(epoch), snapshot_id=snapshot,
                                    position=i64(position))
    return fs_req.FetchSnapshotRequest(cluster_id=CLUSTER, replica_id=BrokerId(replica), max_bytes=i32(max_bytes),
                                       topics=(fs_req.TopicSnapshot(name=TopicName(topic), partitions=(part,)),))


fetch_snapshot_requests = st.builds(
    _fetch_snapshot_request, SMALL, st.sampled_from([-1, 0, 1, 7]), SMALL, st.integers(-5, 400),
    st.integers(-5, 2**31 - 1), SMALL, st.sampled_from([0, 0, 1]), st.sampled_from(["__cluster_metadata", "x"]),
)
fetch_requests = st.builds(
    lambda replica, epoch, offset, last_epoch, max_wait: messages.fetch_request(
        CLUSTER, ReplicaKey(replica) if replica >= 0 else None, epoch, offset, last_epoch, 0, max_wait, 1 << 20),
    SMALL, SMALL, st.integers(0, 10), SMALL, st.sampled_from([0, 500]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(fetch_snapshot_requests, fetch_requests), min_size=1, max_size=8))
def test_leader_answers_arbitrary_fetch_and_fetch_snapshot_requests(requests) -> None:
    ctx, _ = leader_with_snapshot()
    ctx.responses.clear()
    for i, request in enumerate(requests):
        ctx._run(ctx.core.handle_request(i, request, ctx.now))
        ctx.advance(100)
        _assert_sane(ctx)
    ctx.advance(ctx.core.config.max_fetch_wait_ms)  # parked fetches expire
    # Every request gets exactly one answer, whatever it holds (or the leader resigned and failed the parked ones).
    assert sorted(r.ref for r in ctx.responses) == list(range(len(requests)))
