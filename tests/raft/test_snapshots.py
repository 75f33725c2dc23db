"""Snapshots (KIP-630): create_snapshot, Fetch -> SnapshotId, FetchSnapshot serving and download, listener
loads. Named after Kafka's KafkaRaftClientSnapshotTest scenarios (§5.3) whose rule they check."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.fetch_snapshot.v1.request import FetchSnapshotRequest
from kio.schema.vote.v2.request import VoteRequest

from pykraft.raft import messages
from pykraft.raft.config import QuorumConfig
from pykraft.raft.effects import LoadSnapshot
from pykraft.raft.election import ElectionState
from pykraft.raft.log import BOOTSTRAP_SNAPSHOT_ID, InvalidSnapshotIdError, OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.snapshot_writer import SnapshotWriter
from pykraft.raft.voter_set import ReplicaKey, VoterSet
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record

from raft_context import CLUSTER, Context, append_batch, build, voter_set

MAX_FETCH = QuorumConfig().max_fetch_size_bytes


# ---- helpers -------------------------------------------------------------------------------------------------
def write_snapshot(log: MemoryLog, snapshot_id: OffsetAndEpoch, values: list[bytes] = (), kraft: int = 0,
                   voters: VoterSet | None = None) -> bytes:
    """A snapshot in Kafka's layout written straight into `log` (as a previous run of the node would have)."""
    raw = log.create_new_snapshot_unchecked(snapshot_id)
    writer = SnapshotWriter(raw, last_contained_log_time_ms=0, now_ms=0, kraft_version=kraft, voters=voters,
                            on_frozen=log.on_snapshot_frozen)
    writer.append(list(values))
    writer.freeze()
    return bytes(log.read_snapshot(snapshot_id).records())


def snapshot_bytes(snapshot_id: OffsetAndEpoch, values: list[bytes] = (), kraft: int = 0,
                   voters: VoterSet | None = None) -> bytes:
    return write_snapshot(MemoryLog(), snapshot_id, values, kraft, voters)


def data_values(data: bytes) -> list[bytes]:
    return [bytes(r.value) for b in iter_batches(data) if not b.is_control for r in b.records()]


def control_types(data: bytes) -> list[ControlRecordType]:
    return [decode_control_record(r).type for b in iter_batches(data) if b.is_control for r in b.records()]


def log_with(*batches: tuple[int, int]) -> MemoryLog:
    """A log holding batches of (epoch, record count)."""
    log = MemoryLog()
    for epoch, count in batches:
        append_batch(log, epoch, count)
    return log


def become_leader(ctx: Context) -> None:
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    for _ in range(2):  # pre-vote round, then the vote round
        for send in ctx.take_sent(VoteRequest):
            ctx.respond(send, messages.vote_response(ErrorCode.none, ErrorCode.none, None, ctx.epoch, True))
    assert ctx.role == "Leader"
    ctx.take_sent()


def fetch(replica: int, epoch: int, offset: int, last_epoch: int, max_wait: int = 0) -> FetchRequest:
    return messages.fetch_request(CLUSTER, ReplicaKey(replica), epoch, offset, last_epoch, 0, max_wait, 1 << 20)


def fetch_part(respond):
    return respond.response.responses[0].partitions[0]


def advance_hwm_to_leo(ctx: Context, voter: int = 1) -> None:
    ctx.request(fetch(voter, ctx.epoch, ctx.log.end_offset(), ctx.log.last_fetched_epoch()))
    assert ctx.core.high_watermark == ctx.log.end_offset()


def fs_request(epoch: int, snapshot_id: OffsetAndEpoch, position: int = 0, max_bytes: int = 2**31 - 1,
               replica: int | None = None, cluster: str | None = CLUSTER) -> FetchSnapshotRequest:
    key = ReplicaKey(replica) if replica is not None else None
    return messages.fetch_snapshot_request(cluster, key, epoch, snapshot_id, position, max_bytes)


def fs_part(respond):
    return respond.response.topics[0].partitions[0]


def leader_with_snapshot(values: list[bytes] = (b"foo", b"bar")) -> tuple[Context, OffsetAndEpoch]:
    """Leader of voters {0, 1} at epoch 2 over one record of epoch 1, with snapshot (1, 1) frozen."""
    ctx = build(0, [0, 1], log=log_with((1, 1)))
    become_leader(ctx)
    advance_hwm_to_leo(ctx)
    snapshot_id = OffsetAndEpoch(1, 1)
    writer = ctx.core.create_snapshot(snapshot_id, 0, ctx.now)
    writer.append(list(values))
    writer.freeze()
    return ctx, snapshot_id


def follower(epoch: int = 2, leader: int = 1, voters: list[int] = (0, 1), config: QuorumConfig | None = None,
             log: MemoryLog | None = None) -> Context:
    ctx = build(0, list(voters), stored=ElectionState.with_elected_leader(epoch, leader), config=config, log=log)
    ctx.poll()
    return ctx


def answer_fetch_with_snapshot(ctx: Context, snapshot_id: OffsetAndEpoch, epoch: int = 2, leader: int = 1):
    """Answer the follower's pending Fetch with SnapshotId; returns the FetchSnapshot it sends next."""
    send = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(send, messages.fetch_response(ErrorCode.none, leader_id=leader, epoch=epoch,
                                              snapshot_id=snapshot_id, high_watermark=200))
    snapshot_sends = ctx.take_sent(FetchSnapshotRequest)
    assert len(snapshot_sends) == 1 and not ctx.take_sent(FetchRequest)  # fetching is paused
    return snapshot_sends[0]


def fs_answer(snapshot_id: OffsetAndEpoch, data: bytes, position: int, size: int | None = None, epoch: int = 2,
              leader: int = 1, error: ErrorCode = ErrorCode.none):
    return messages.fetch_snapshot_response(
        ErrorCode.none, partition_error=error, leader_id=leader, epoch=epoch, snapshot_id=snapshot_id,
        size=len(data) if size is None else size, position=position, records=data)


def request_partition(send):
    return send.request.topics[0].partitions[0]


def loads(ctx: Context) -> list[OffsetAndEpoch]:
    return [e.snapshot_id for e in ctx.effects if isinstance(e, LoadSnapshot)]


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


# ---- the follower's download ----------------------------------------------------------------------------------
def test_fetch_response_with_snapshot_id_downloads_and_installs_the_snapshot() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    request = request_partition(send)
    assert send.request.replica_id == 0 and send.request.max_bytes == MAX_FETCH
    assert (request.snapshot_id.end_offset, request.snapshot_id.epoch, request.position) == (100, 1, 0)
    data = snapshot_bytes(snapshot_id, [b"foo", b"bar"])
    ctx.respond(send, fs_answer(snapshot_id, data, 0))
    assert bytes(ctx.log.read_snapshot(snapshot_id).records()) == data
    assert ctx.log.start_offset() == ctx.log.end_offset() == ctx.core.high_watermark == 100
    assert loads(ctx) == [snapshot_id]
    next_fetch = request_partition(ctx.take_sent(FetchRequest)[-1])
    assert (next_fetch.fetch_offset, next_fetch.last_fetched_epoch) == (100, 1)


def test_fetch_snapshot_response_partial_data() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    data = snapshot_bytes(snapshot_id, [b"foo", b"bar"])
    half = len(data) // 2
    ctx.respond(send, fs_answer(snapshot_id, data[:half], 0, size=len(data)))
    assert ctx.log.read_snapshot(snapshot_id) is None and loads(ctx) == []  # nothing visible before freezing
    send = ctx.take_sent(FetchSnapshotRequest)[-1]
    assert request_partition(send).position == half
    ctx.respond(send, fs_answer(snapshot_id, data[half:], half, size=len(data)))
    assert bytes(ctx.log.read_snapshot(snapshot_id).records()) == data and loads(ctx) == [snapshot_id]


def test_fetch_snapshot_response_with_wrong_position_is_dropped_and_retried() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    data = snapshot_bytes(snapshot_id, [b"foo"])
    ctx.respond(send, fs_answer(snapshot_id, data[5:], 5, size=len(data)))
    assert ctx.core.rejected_snapshot_chunks == 1 and not ctx.take_sent()
    ctx.advance(ctx.core.config.retry_backoff_ms)
    assert request_partition(ctx.take_sent(FetchSnapshotRequest)[-1]).position == 0


def test_fetch_snapshot_response_missing_snapshot_restarts_with_fetch() -> None:
    ctx = follower()
    send = answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    ctx.respond(send, fs_answer(OffsetAndEpoch(-1, -1), b"", -1, size=-1, error=ErrorCode.snapshot_not_found))
    fetch_request = request_partition(ctx.take_sent(FetchRequest)[-1])
    assert (fetch_request.fetch_offset, fetch_request.last_fetched_epoch) == (0, 0)
    assert ctx.core.quorum.state.fetching_snapshot is None


@pytest.mark.parametrize("new_leader", [1, 2], ids=["same-leader", "other-leader"])
def test_fetch_snapshot_response_from_newer_epoch_follows_it_and_fetches(new_leader: int) -> None:
    ctx = follower(voters=[0, 1, 2])
    send = answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    ctx.respond(send, fs_answer(OffsetAndEpoch(-1, -1), b"", -1, size=-1, epoch=3, leader=new_leader,
                                error=ErrorCode.fenced_leader_epoch))
    assert ctx.epoch == 3 and ctx.core.quorum.leader_id() == new_leader
    fetch_send = ctx.take_sent(FetchRequest)[-1]
    assert fetch_send.destination.node_id == new_leader
    assert (request_partition(fetch_send).current_leader_epoch, request_partition(fetch_send).fetch_offset) == (3, 0)


def test_fetch_snapshot_response_from_older_epoch_is_ignored_and_request_resent() -> None:
    ctx = follower()
    send = answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    ctx.respond(send, fs_answer(OffsetAndEpoch(-1, -1), b"", -1, size=-1, epoch=1, leader=2,
                                error=ErrorCode.unknown_leader_epoch))
    assert ctx.epoch == 2 and ctx.core.quorum.leader_id() == 1
    ctx.advance(ctx.core.config.retry_backoff_ms)
    resent = request_partition(ctx.take_sent(FetchSnapshotRequest)[-1])
    assert (resent.snapshot_id.end_offset, resent.position) == (100, 0)


@pytest.mark.parametrize("bad_id", [OffsetAndEpoch(-1, 1), OffsetAndEpoch(100, -1)])
def test_fetch_snapshot_response_with_invalid_id_restarts_with_fetch(bad_id: OffsetAndEpoch) -> None:
    ctx = follower()
    send = answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    ctx.respond(send, fs_answer(bad_id, b"", 0, size=10))
    assert request_partition(ctx.take_sent(FetchRequest)[-1]).fetch_offset == 0


def test_fetch_snapshot_response_naming_another_snapshot_restarts_and_is_counted() -> None:
    ctx = follower()
    send = answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    other = OffsetAndEpoch(120, 1)
    ctx.respond(send, fs_answer(other, snapshot_bytes(other), 0))
    assert ctx.core.rejected_snapshot_chunks == 1 and ctx.log.read_snapshot(other) is None
    assert request_partition(ctx.take_sent(FetchRequest)[-1]).fetch_offset == 0


def test_fetch_response_with_invalid_snapshot_id_backs_off_without_resetting_fetch_timer() -> None:
    ctx = follower()
    backoff = ctx.core.config.retry_backoff_ms
    for bad_id in (OffsetAndEpoch(100, -1), OffsetAndEpoch(-1, 1)):
        send = ctx.take_sent(FetchRequest)[-1]
        ctx.respond(send, messages.fetch_response(ErrorCode.none, leader_id=1, epoch=2, snapshot_id=bad_id))
        assert not ctx.take_sent(FetchSnapshotRequest)
        ctx.advance(backoff)
        assert request_partition(ctx.sent[-1]).fetch_offset == 0
    ctx.advance(ctx.core.config.fetch_timeout_ms - 2 * backoff)
    assert ctx.role == "Prospective"  # neither invalid answer counted as a successful fetch


def test_fetch_snapshot_response_to_not_follower_is_ignored() -> None:
    ctx = follower(config=QuorumConfig(append_linger_ms=0, request_timeout_ms=10_000))
    snapshot_id = OffsetAndEpoch(100, 1)
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    ctx.advance(ctx.core.config.fetch_timeout_ms)
    assert ctx.role == "Prospective"
    ctx.respond(send, fs_answer(snapshot_id, snapshot_bytes(snapshot_id), 0))
    assert ctx.role == "Prospective" and ctx.log.read_snapshot(snapshot_id) is None


def test_fetch_snapshot_keeps_follower_alive_like_fetch() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    data = snapshot_bytes(snapshot_id, [b"x" * 200])
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    ctx.advance(1500)
    ctx.respond(send, fs_answer(snapshot_id, data[:50], 0, size=len(data)))
    ctx.advance(1500)  # 3000 ms since the Fetch answer, 1500 since the last chunk
    assert ctx.role == "Follower"


def test_follower_reloads_voter_set_from_downloaded_snapshot() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    data = snapshot_bytes(snapshot_id, kraft=1, voters=voter_set([0, 1, 5]))
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    ctx.respond(send, fs_answer(snapshot_id, data, 0))
    assert set(ctx.core.voters().ids()) == {0, 1, 5}
    assert ctx.core.history.kraft_version_at(99) == 1


def test_listener_renotified_after_a_newer_snapshot_download() -> None:
    ctx = follower()
    first, second = OffsetAndEpoch(100, 1), OffsetAndEpoch(250, 2)
    send = answer_fetch_with_snapshot(ctx, first)
    ctx.respond(send, fs_answer(first, snapshot_bytes(first), 0))
    send = answer_fetch_with_snapshot(ctx, second)
    ctx.respond(send, fs_answer(second, snapshot_bytes(second), 0))
    assert loads(ctx) == [first, second] and ctx.core.listener.next_offset == 250


def test_follower_appends_after_installed_snapshot_and_commits_from_there() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    ctx.respond(answer_fetch_with_snapshot(ctx, snapshot_id), fs_answer(snapshot_id, snapshot_bytes(snapshot_id), 0))
    batch = encode_batch([SimpleRecord(value=b"after")], base_offset=100, partition_leader_epoch=2, timestamp_ms=0)
    ctx.respond(ctx.take_sent(FetchRequest)[-1],
                messages.fetch_response(ErrorCode.none, leader_id=1, epoch=2, high_watermark=101, records=batch))
    assert ctx.log.end_offset() == 101 and ctx.core.high_watermark == 101
    assert ctx.core.listener.next_offset == 101


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
